"""make bench: the workshop-scale benchmarks of issue 10, each against its baseline in the same run.

One real control plane from the integration harness (tests/harness/local_cluster: kube-apiserver, etcd,
kube-scheduler, kube-controller-manager 1.35.4, kwok nodes, the dra-example-driver kubelet plugin on 3
nodes) serves every benchmark, in this order:

  users    playbooks/users.yml with 72 seats: cold, rerun (nothing to change), --check, all under ansible.cfg's
           strategy (stock ansible.builtin.linear), and the rerun again with the optional Mitogen strategy
           (dralab.workshop.linear_fast: what Mitogen is worth here); baseline: the same seat objects
           applied one kubernetes.core.k8s task run per object (benchmarks/playbooks/naive_users.yml) for
           BENCH_NAIVE_SEATS seats (default 72; fewer are scaled up per object and the table says so).
  waitlist 24 seats hold the 24 GPUs, 48 wait: the API's requests per second and the claims made while they
           wait in line (can-has-gpu reserve) vs retry `reserve --no-wait` in a loop (the baseline), and the
           seconds from a release to the next seat in line holding the GPU (benchmarks/waitlist_bench.py).
  reset    playbooks/reset.yml with every seat holding a claim and a pod, then on the clean lab;
           baseline: one `kubectl delete pods,resourceclaims --all -n SEAT` per seat, then the wait
           until no seat claim holds a GPU.
  scale    100 more kwok nodes whose ResourceSlices are copies of the plugin's (8 devices each): 300
           seats provisioned (users.yml), checked (health.yml), made busy and reset (reset.yml).
  health   10,000 ResourceClaims and pods (824 allocated and running, the rest pending) on the 103
           nodes: health.yml and the module alone (ansible -m dralab.workshop.dra_health); baseline:
           a raw listing of the same kinds (benchmarks/list_raw.py), time and peak RSS; three rounds of
           both, alternating, the fastest of each compared.
  seats    the lab rows of the real path (benchmarks/lab_bench.py): 72 and 300 seats with Linux accounts on the
           podman lab's login hosts, users.yml and reset.yml against the shell floor of the same Linux work.
  site     site.yml rerun (cold too, with --lab-cold), rerun --check and the rerun with Mitogen on the podman lab
           (benchmarks/lab_bench.py).
  The lab rows run only with BENCH_LAB=1 and the lab's nodes running; asked for alone, they start no control plane
  of the harness.

The table of figures and ratios comes last and goes to BENCH_OUT (default
$DRALAB_CACHE/bench/bench-<time>.txt). Figures are printed, never asserted.

Usage: python benchmarks/bench.py [--only users,waitlist,reset,scale,health,seats,site] [--lab-cold]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "collections"))
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from k8s_helpers import DRIVER, claim_body, core_api, pod_body, resource_api, wait_for  # noqa: E402
from playbook import Lab, parse_recap, seat_names  # noqa: E402

import conftest  # noqa: E402  (tests/integration/conftest.py: TMP_PREFIX)
from local_cluster.control_plane import Cluster  # noqa: E402  (tests/harness/local_cluster)
import lab_bench  # noqa: E402  (benchmarks/lab_bench.py: the rows on the podman lab)
import waitlist_bench  # noqa: E402  (benchmarks/waitlist_bench.py: 48 seats waiting, in line vs retrying)

BENCH_DIR = Path(__file__).resolve().parent
ANSIBLE_BIN = Path(sys.executable).parent
CACHE = Path(os.environ.get("DRALAB_CACHE", Path.home() / ".cache" / "dralab"))
WORKERS = 8
LOAD_PREFIX = "bench-load-"
MITOGEN_STRATEGY = "dralab.workshop.linear_fast"  # optional; ansible.cfg runs stock ansible.builtin.linear
HEALTH_ROUNDS = 3  # health.yml and its baseline, alternating; the fastest of each counts
UNSCHEDULED = "dralab-bench-unscheduled"  # a scheduler nobody runs: those pods stay pending, quietly


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Table:
    def __init__(self):
        self.rows: list[tuple[str, str, str, str, str]] = []
        self.notes: list[str] = []

    def add(self, what: str, figure: str, baseline: str = "", ratio: str = "", goal: str = "") -> None:
        self.rows.append((what, figure, baseline, ratio, goal))
        log(f"{what}: {figure}  {baseline}  {ratio}  {goal}")

    def note(self, text: str) -> None:
        """A line printed below the table (a split too long for a column)."""
        self.notes.append(text)
        log(text)

    def text(self) -> str:
        head = ("benchmark", "figure", "baseline (same run)", "ratio", "goal")
        widths = [max(len(r[i]) for r in [head, *self.rows]) for i in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head, *self.rows]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines + [""] * bool(self.notes) + self.notes)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


class Run:
    """One timed child process: seconds, peak RSS (MiB, the process and its children), output.

    The command runs under benchmarks/rusage.py, a small process of its own: a child forked straight
    from this one would report this process's memory as its peak.
    """

    def __init__(self, cmd, env=None, log_path: Path | None = None):
        with tempfile.NamedTemporaryFile(suffix=".json") as usage:
            started = time.monotonic()
            proc = subprocess.run([sys.executable, BENCH_DIR / "rusage.py", usage.name, *[str(c) for c in cmd]],
                                  cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  check=False)
            self.seconds = time.monotonic() - started
            measured = json.loads(Path(usage.name).read_text() or "{}")
        self.output = proc.stdout
        self.rc = proc.returncode
        self.rss_mib = measured.get("maxrss_kib", 0) / 1024.0
        if log_path:
            log_path.write_text(f"$ {' '.join(str(c) for c in cmd)}\n# rc {self.rc}, {self.seconds:.1f}s, "
                                f"{self.rss_mib:.0f} MiB\n{self.output}")


def timed_env(env: dict, tasks: Path, strategy: str = "") -> dict:
    """env for an ansible-playbook run whose task times bench_tasks writes to tasks; strategy: another than
    ansible.cfg's (ANSIBLE_STRATEGY)."""
    env = dict(env, ANSIBLE_CALLBACK_PLUGINS=str(BENCH_DIR / "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="bench_tasks", DRALAB_BENCH_TASKS=str(tasks))
    if strategy:
        env["ANSIBLE_STRATEGY"] = strategy
    return env


class BenchLab(Lab):
    """The integration tier's Lab (inventory, environment) plus timing per task through bench_tasks."""

    def play(self, playbook: str, *args: str, extra_vars: dict | None = None, strategy: str = "") -> dict:
        """One timed ansible-playbook run (timed_env)."""
        tasks = self.dir / f"tasks-{len(self.runs):03d}.jsonl"
        env = timed_env(self.env(), tasks, strategy)
        cmd = [ANSIBLE_BIN / "ansible-playbook", "-i", self.inventory, playbook, *args]
        if extra_vars:
            vars_file = self.dir / f"extra-vars-{len(self.runs):03d}.json"
            vars_file.write_text(json.dumps(extra_vars))
            cmd += ["-e", f"@{vars_file}"]
        name = f"{len(self.runs):03d}-{Path(playbook).stem}{'-check' if '--check' in args else ''}.log"
        run = Run(cmd, env, self.logs / name)
        self.runs.append(run)
        recap = parse_recap(run.output).get("localhost", {})
        lines = [json.loads(line) for line in tasks.read_text().splitlines()] if tasks.exists() else []
        api_tasks = [t for t in lines if t.get("action", "").startswith(("dralab.workshop.", "kubernetes.core."))]
        result = {"seconds": run.seconds, "rss_mib": run.rss_mib, "rc": run.rc, "changed": recap.get("changed"),
                  "failed": recap.get("failed"), "module_seconds": sum(t["seconds"] for t in api_tasks),
                  "tasks": lines, "log": self.logs / name}
        log(f"{playbook} {' '.join(args)}: rc {run.rc}, {run.seconds:.1f}s, changed={result['changed']}, "
            f"API module tasks {result['module_seconds']:.1f}s ({self.logs / name})")
        if run.rc != 0:
            log("\n".join(run.output.splitlines()[-40:]))
        return result


def parallel(fn, items) -> list:
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))


def create_ignoring_conflict(call, *args) -> None:
    from kubernetes.client.rest import ApiException
    try:
        call(*args)
    except ApiException as exc:
        if exc.status != 409:
            raise


def allocated_claims(api, namespaces=None) -> int:
    items = resource_api(api).list_resource_claim_for_all_namespaces().items
    return sum(1 for c in items if c.status and c.status.allocation
               and (namespaces is None or c.metadata.namespace in namespaces))


def make_busy(api, seats: list[str], devices: int) -> None:
    """One claim and one pod using it in every seat namespace; waits until the GPUs are taken."""
    core, res = core_api(api), resource_api(api)

    def one(seat):
        create_ignoring_conflict(res.create_namespaced_resource_claim, seat, claim_body("bench-gpu"))
        create_ignoring_conflict(core.create_namespaced_pod, seat, pod_body("bench-job", claim="bench-gpu"))
    parallel(one, seats)
    wanted = min(len(seats), devices)
    wait_for(f"{wanted} seat claims allocated", lambda: allocated_claims(api, set(seats)) >= wanted, timeout=300)


def delete_namespaces(api, names: list[str], timeout: float = 600) -> None:
    from kubernetes.client.rest import ApiException
    core = core_api(api)

    def one(name):
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    parallel(one, names)
    wanted = set(names)
    wait_for("namespaces gone", lambda: not wanted & {n.metadata.name for n in core.list_namespace().items},
             timeout=timeout, interval=2)


# --------------------------------------------------------------------------- benchmarks

def bench_users(table: Table, lab: BenchLab, api, naive_seats: int) -> None:
    cold = lab.play("playbooks/users.yml")
    rerun = lab.play("playbooks/users.yml")
    check = lab.play("playbooks/users.yml", "--check")
    seats = lab.seats
    table.add(f"users.yml cold, {seats} seats", f"{cold['seconds']:.1f} s (rc {cold['rc']})", "", "", "<= 15 s: "
              + verdict(cold["rc"] == 0 and cold["seconds"] <= 15))
    table.add(f"users.yml rerun, {seats} seats", f"{rerun['seconds']:.1f} s wall, {rerun['module_seconds']:.1f} s "
              f"API modules, changed={rerun['changed']}", "", "",
              "<= 10 s wall, <= 5 s modules, changed=0: " + verdict(
                  rerun["seconds"] <= 10 and rerun["module_seconds"] <= 5 and rerun["changed"] == 0))
    table.add(f"users.yml --check, {seats} seats", f"{check['seconds']:.1f} s, changed={check['changed']}", "", "",
              "changed=0: " + verdict(check["changed"] == 0 and check["rc"] == 0))
    # Mitogen optional (issue 36): the same rerun through the collection's Mitogen strategy, against the default.
    fast = lab.play("playbooks/users.yml", strategy=MITOGEN_STRATEGY)
    table.add(f"users.yml rerun with Mitogen, {seats} seats", f"{fast['seconds']:.1f} s, changed={fast['changed']} "
              f"(rc {fast['rc']})", f"stock ansible.builtin.linear {rerun['seconds']:.1f} s",
              f"{rerun['seconds'] / fast['seconds']:.2f}x" if fast["seconds"] else "", "")
    rbac = __import__("kubernetes").client.RbacAuthorizationV1Api(api)
    names = seat_names(naive_seats, prefix="naive")
    naive = lab.play(str(BENCH_DIR / "playbooks" / "naive_users.yml"),
                     extra_vars={"naive_seats": names, "naive_reader": "dralab-bench-naive-reader"})
    scaled = naive["seconds"] * seats / naive_seats
    how = (f"naive k8s loop {naive['seconds']:.1f} s" if naive_seats == seats else
           f"naive k8s loop {naive['seconds']:.1f} s for {naive_seats} seats, "
           f"x{seats}/{naive_seats} = {scaled:.0f} s")
    ratio = scaled / cold["seconds"] if cold["seconds"] else 0
    table.add(f"users.yml cold vs naive loop, {seats} seats", f"{cold['seconds']:.1f} s", how, f"{ratio:.1f}x",
              ">= 40x: " + verdict(ratio >= 40 and naive["rc"] == 0))
    log("removing the naive seats")
    delete_namespaces(api, names)
    for call in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
        call("dralab-bench-naive-reader")


def bench_reset(table: Table, lab: BenchLab, api, devices: int, label: str = "") -> None:
    seats = seat_names(lab.seats)
    make_busy(api, seats, devices)
    busy = lab.play("playbooks/reset.yml")
    left = allocated_claims(api, set(seats))
    table.add(f"reset.yml, {lab.seats} busy seats{label}", f"{busy['seconds']:.1f} s (rc {busy['rc']}), "
              f"{left} seat claims hold GPUs after", "", "",
              ("<= 15 s, every GPU free: " + verdict(busy["rc"] == 0 and left == 0 and busy["seconds"] <= 15))
              if not label else "")
    if label:
        return
    make_busy(api, seats, devices)
    kubectl = conftest.ControlPlane.binary("kubectl")
    started = time.monotonic()
    for seat in seats:
        subprocess.run([kubectl, f"--kubeconfig={lab.kubeconfig}", "-n", seat, "delete", "pods,resourceclaims",
                        "--all"], check=True, capture_output=True)
    wait_for("seat GPUs free", lambda: allocated_claims(api, set(seats)) == 0, timeout=300, interval=0.2)
    baseline = time.monotonic() - started
    table.add(f"reset.yml vs kubectl delete per seat, {lab.seats} busy seats", f"{busy['seconds']:.1f} s",
              f"kubectl delete x{lab.seats} + wait {baseline:.1f} s", f"{baseline / busy['seconds']:.2f}x", "")
    clean = lab.play("playbooks/reset.yml")
    table.add(f"reset.yml, clean lab, {lab.seats} seats", f"{clean['seconds']:.1f} s (rc {clean['rc']})", "", "",
              "<= 5 s: " + verdict(clean["rc"] == 0 and clean["seconds"] <= 5))


def add_nodes(cluster, api, count: int) -> list[str]:
    """count more kwok nodes, each with a copy of node-1's ResourceSlice (the plugin's devices)."""
    names = [f"bench-node-{i:03d}" for i in range(1, count + 1)]
    saved = cluster.nodes
    cluster.nodes = names
    try:
        cluster._create_nodes(api)  # the harness's own fake nodes
    finally:
        cluster.nodes = saved
    res = resource_api(api)
    template = next(s for s in api.sanitize_for_serialization(res.list_resource_slice().items)
                    if s["spec"]["driver"] == DRIVER and s["spec"].get("nodeName") == saved[0])

    def one(name):
        body = copy.deepcopy(template)
        body["metadata"] = {"name": f"{name}-{DRIVER}"}
        body["spec"]["nodeName"] = name
        body["spec"]["pool"] = {"name": name, "generation": 1, "resourceSliceCount": 1}
        for device in body["spec"]["devices"]:
            for attr in device.get("attributes", {}).values():
                if "string" in attr and attr["string"].startswith("gpu-"):  # uuids: unique per node
                    attr["string"] = f"{attr['string']}-{name}"
        create_ignoring_conflict(res.create_resource_slice, body)
    parallel(one, names)
    wait_for(f"{count} nodes Ready", lambda: sum(
        1 for n in core_api(api).list_node().items if n.metadata.name in names
        and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])) == count,
        timeout=300, interval=2)
    return names


def bench_scale(table: Table, lab: BenchLab, api, devices: int) -> None:
    cold = lab.play("playbooks/users.yml")
    table.add(f"scale: users.yml cold, {lab.seats} seats", f"{cold['seconds']:.1f} s (rc {cold['rc']})")
    rerun = lab.play("playbooks/users.yml")
    table.add(f"scale: users.yml rerun, {lab.seats} seats", f"{rerun['seconds']:.1f} s, changed={rerun['changed']}")
    health = lab.play("playbooks/health.yml")
    table.add(f"scale: health.yml, {devices // 8} nodes x 8 devices", f"{health['seconds']:.1f} s (rc {health['rc']})")
    bench_reset(table, lab, api, devices, label=" (scale)")


def make_load(api, claims: int, devices: int) -> list[str]:
    """claims ResourceClaims, each with a pod, in LOAD_PREFIX namespaces: `devices` scheduled, the rest pending."""
    per_ns = 100
    namespaces = [f"{LOAD_PREFIX}{i:03d}" for i in range((claims + per_ns - 1) // per_ns)]
    core, res = core_api(api), resource_api(api)
    parallel(lambda ns: create_ignoring_conflict(core.create_namespace, {"metadata": {"name": ns}}), namespaces)
    for ns in namespaces:
        wait_for(f"default ServiceAccount in {ns}", lambda ns=ns: core.read_namespaced_service_account(
            "default", ns), timeout=120)
    jobs = [(namespaces[i // per_ns], f"claim-{i:05d}", i) for i in range(claims)]

    def one(job):
        ns, name, index = job
        create_ignoring_conflict(res.create_namespaced_resource_claim, ns, claim_body(name))
        pod = pod_body(name, claim=name)
        if index >= devices:
            pod["spec"]["schedulerName"] = UNSCHEDULED
        create_ignoring_conflict(core.create_namespaced_pod, ns, pod)
    started = time.monotonic()
    parallel(one, jobs)
    log(f"{claims} claims and pods created in {time.monotonic() - started:.0f}s")
    wait_for(f"{devices} load claims allocated", lambda: allocated_claims(api) >= devices, timeout=900, interval=5)
    return namespaces


def bench_health(table: Table, lab: BenchLab, api, claims: int, devices: int, rounds: int = HEALTH_ROUNDS) -> None:
    """health.yml against the raw listing, in alternating rounds (listing, health.yml) and the fastest of each.

    Right after the load is made the control plane is still busy and a single pair of runs measured anything
    from 1.6x to 2.8x; the fastest of each is the cost of the work itself, with the least of the others' noise.
    """
    namespaces = make_load(api, claims, devices)
    listings, healths = [], []
    for index in range(rounds):
        listing = Run([sys.executable, BENCH_DIR / "list_raw.py", lab.kubeconfig],
                      log_path=lab.logs / f"list_raw-{index}.log")
        log(f"raw listing {index + 1}/{rounds}: {listing.seconds:.1f}s, {listing.rss_mib:.0f} MiB: "
            f"{listing.output.strip()}")
        listings.append(listing)
        healths.append(lab.play("playbooks/health.yml", extra_vars={"lab_health_fail_on_unhealthy": False}))
    env = lab.env()
    module = Run([ANSIBLE_BIN / "ansible", "-i", lab.inventory, "localhost", "-m", "dralab.workshop.dra_health",
                  "-a", json.dumps({"kubeconfig": str(lab.kubeconfig), "fail_on_unhealthy": False})],
                 env, lab.logs / "ansible-m-dra_health.log")
    health = min(healths, key=lambda run: run["seconds"])
    sizes = [t["bytes"] for t in health["tasks"] if t.get("action") == "dralab.workshop.dra_health"]
    report = [line for line in health["log"].read_text().splitlines() if "claim_pending" in line
              or "pending" in line.lower()][:3]
    log("health.yml report, pending lines: " + " | ".join(report))
    base = min(run.seconds for run in listings)
    every = ", ".join(f"{run['seconds']:.1f}" for run in healths)
    every_base = ", ".join(f"{run.seconds:.1f}" for run in listings)
    rss, base_rss = max(run["rss_mib"] for run in healths), max(run.rss_mib for run in listings)
    rc = next((run["rc"] for run in healths if run["rc"]), 0)  # any failed round shows
    table.add(f"health.yml, {claims} claims, {devices // 8} nodes",
              f"{health['seconds']:.1f} s best of {every} (rc {rc}), result "
              f"{sizes[0] / 1e6 if sizes else 0:.2f} MB", f"raw listing {base:.1f} s best of {every_base}",
              f"{health['seconds'] / base:.2f}x", "<= 1.5x: " + verdict(health["seconds"] <= 1.5 * base))
    table.add(f"health.yml peak RSS, {claims} claims", f"{rss:.0f} MiB", f"raw listing {base_rss:.0f} MiB",
              f"{rss / base_rss:.2f}x", "<= 1.2x: " + verdict(rss <= 1.2 * base_rss))
    table.add(f"ansible -m dra_health, {claims} claims", f"{module.seconds:.1f} s (rc {module.rc}), "
              f"{module.rss_mib:.0f} MiB", f"raw listing {base:.1f} s", f"{module.seconds / base:.2f}x", "")
    # The load stays: the control plane goes right after (deleting 20,000 objects would take minutes).
    log(f"{len(namespaces)} load namespaces left to the control plane's removal")


def bench_lab(table: Table, work: Path, only: set[str], args) -> None:
    """The rows on the podman lab (benchmarks/lab_bench.py), when it is up and BENCH_LAB=1 says it may be used."""
    why_not = lab_bench.lab_state()
    if why_not:
        table.add("lab rows (seats, site)", "skipped, " + why_not)
        return
    runs = lab_bench.LabRuns(work, timed_env, Run)
    if "site" in only:
        lab_bench.bench_site(table, runs, verdict, args.lab_cold)
    if "seats" in only:
        lab_bench.bench_seats(table, runs, verdict, args.lab_big_seats)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="users,waitlist,reset,scale,health,site,seats")
    parser.add_argument("--lab-cold", action="store_true", help="site: make the lab's nodes anew and time site.yml cold")
    parser.add_argument("--lab-big-seats", type=int, default=300, help="seats: the larger lab (72 or less: none)")
    parser.add_argument("--naive-seats", type=int, default=int(os.environ.get("BENCH_NAIVE_SEATS", "72")))
    parser.add_argument("--claims", type=int, default=int(os.environ.get("BENCH_CLAIMS", "10000")))
    parser.add_argument("--out", default=os.environ.get("BENCH_OUT", ""))
    args = parser.parse_args(argv)
    # SIGTERM ends the run like Ctrl-C: the control plane is stopped and its directory removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    only = set(args.only.split(","))
    out = Path(args.out) if args.out else CACHE / "bench" / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dralab-bench-"))
    table = Table()
    started = time.monotonic()
    if only & {"users", "reset", "waitlist", "scale", "health"}:
        bench_harness(table, work, only, args)
    if only & {"site", "seats"}:
        bench_lab(table, work, only, args)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=False).stdout.strip() or "unknown"
    header = (f"make bench, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, git {commit}, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {time.monotonic() - started:.0f} s in all; logs in {work}")
    text = header + "\n" + table.text() + "\n"
    out.write_text(text)
    print(text)
    print(f"(written to {out})")
    return 0


def bench_harness(table: Table, work: Path, only: set[str], args) -> None:
    """The rows against a fresh control plane of the integration harness."""
    subprocess.run([sys.executable, "-m", "dralab_build.binaries"], cwd=REPO, check=True)
    cluster = Cluster(tempfile.mkdtemp(prefix=conftest.TMP_PREFIX), die_with_parent=True)
    try:
        cluster.up()
        api = cluster.api_client()
        lab = BenchLab(cluster.kubeconfig, work / "lab72")
        lab.run("playbooks/driver.yml")
        devices = 8 * len(cluster.nodes)
        if only & {"users", "reset", "waitlist"}:
            if "users" in only:
                bench_users(table, lab, api, args.naive_seats)
            else:
                lab.play("playbooks/users.yml")
            if "waitlist" in only:
                waitlist_bench.bench_waitlist(table, lab, api, work)
            if "reset" in only:
                bench_reset(table, lab, api, devices)
        if "scale" in only or "health" in only:
            extra = add_nodes(cluster, api, 100)
            devices += 8 * len(extra)
            if "scale" in only:
                bench_scale(table, BenchLab(cluster.kubeconfig, work / "lab300", seats=300), api, devices)
            if "health" in only:
                bench_health(table, lab, api, args.claims, devices)
    finally:
        cluster.down()


if __name__ == "__main__":
    sys.exit(main())
