"""The lab under faults: each injected for real on the podman nodes, detected by dra_health with a reason
that says what to do, healed (by the cluster itself or by playbooks/heal.yml), the seconds to detect and
to heal printed (docs/reliability.md keeps a table of them).

Faults (marker `faults`; `make test-reliability` runs them on the lab `make lab` left up; the molecule
verifier runs the one most likely to regress, the killed kubelet plugin):
- the driver's kubelet plugin on worker1 killed (SIGKILL of its process);
- worker1's ResourceSlice deleted;
- kubelet restarted on worker1 while a pod holds a claim there;
- containerd restarted on worker1 while a pod holds a claim there;
- the lease reaper stopped on cp1: heal.yml starts it;
- the API server stopped (its static pod manifest moved away): health.yml, users.yml, reset.yml and
  board.yml fail fast with one sentence, having changed nothing; heal.yml brings it back.

Each fault ends with the lab healthy again and a new claim on the faulted node prepared for a running pod.
"""

from __future__ import annotations

import sys
import time

import pytest
from podman_lab import topology
from podman_lab.podman import podman

from conftest import KUBECONFIG, REPO, node_host, run_playbook, wait_for
from playbook import API_PLAYBOOKS, parse_recap

# The collection's code through Ansible's collection finder, installed as the CLIs install it (and as
# test_mirror.py's templating needs it: a plain import of ansible_collections first would hide the finder).
sys.path.insert(0, str(REPO / "tests" / "unit"))
from render import use_this_checkout  # noqa: E402  (tests/unit/render.py)

use_this_checkout()
from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect  # noqa: E402
from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import KubeClient  # noqa: E402

NS = "dralab-faults"
NODE = "worker1"
PLUGIN_LABELS = dra_objects.EXAMPLE_DRIVER_PLUGIN_LABELS
PLUGIN_TYPES = frozenset({"driver_plugin_missing", "driver_plugin_not_ready", "driver_plugin_restarted",
                          "node_missing_slice", "device_count_short", "pool_inconsistent", "node_not_ready"})
POLL = 0.5
FIGURES = []  # (fault, what dra_health said, how it healed, seconds to detect, seconds to heal)


def report() -> dict:
    """dra_health's analysis of the lab now, in this process (the module's own code, polled fast)."""
    client = KubeClient.from_params({"kubeconfig": str(KUBECONFIG)})
    data = dra_collect.collect(client, include_events=False)
    data.pop("warnings")
    return dra_health.analyze(plugin_labels=PLUGIN_LABELS, **data)


def problems_on(node: str, types=PLUGIN_TYPES) -> list[dict]:
    return [p for p in report()["problems"] if p.get("node") == node and p["type"] in types]


def problem_key(problem: dict) -> tuple:
    """What makes a problem new: a plugin that restarts again is a new problem, the same one aging is not."""
    return problem["type"], problem.get("pod"), problem.get("restarts"), problem.get("object")


def healed() -> bool:
    now = report()
    on_node = [p for p in now["problems"] if p["type"] in PLUGIN_TYPES - {"driver_plugin_restarted"}]
    return now["healthy"] and not on_node and now["summary"]["devices_published"] == 24


def watch_fault(name: str, inject, how_healed: str, detect_types=PLUGIN_TYPES, timeout: float = 240,
                heal=None, self_heal_wait: float = 60, detect_window: float = 30):
    """Inject, then time the first dra_health problem on NODE (looked for during detect_window seconds) and
    the return to a healthy lab. With heal (a callable, e.g. running heal.yml), the lab gets self_heal_wait
    seconds to heal by itself first. A problem already reported before the injection (the warning an earlier
    fault left, which stays for 10 minutes) is not this fault's."""
    before = {problem_key(p) for p in problems_on(NODE, detect_types)}
    start = time.monotonic()
    inject()
    seen = None
    while time.monotonic() - start < detect_window:
        found = [p for p in problems_on(NODE, detect_types) if problem_key(p) not in before]
        if found:
            seen = found[0]
            break
        time.sleep(POLL)
    detected = time.monotonic() - start if seen else None
    if heal is not None:
        try:
            wait_for(f"the lab to heal by itself after: {name}", healed, timeout=self_heal_wait, interval=POLL)
            how_healed = "itself"
        except AssertionError:
            heal()
    wait_for(f"the lab to heal after: {name}", healed, timeout=timeout, interval=POLL)
    # Nothing seen during the window: the lab never looked unhealthy, so there is no time to heal to print.
    healed_after = time.monotonic() - start if seen else None
    FIGURES.append((name, f"{seen['type']}: {seen['reason']}" if seen else "nothing (healed first)", how_healed,
                    detected, healed_after))
    print(f"\n[faults] {name}: detected {detected if detected is None else round(detected, 1)}s, "
          f"healed {'-' if healed_after is None else round(healed_after, 1)}s by {how_healed}; "
          f"dra_health: {FIGURES[-1][1][:300]}", file=sys.stderr)
    return seen


def run_heal():
    proc = run_playbook(REPO / "playbooks" / "heal.yml", timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc


def node_run(node: str, command: str) -> str:
    result = node_host(node).run(command)
    assert result.rc == 0, f"{node}: {command}: {result.stdout}{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def fault_ns(core):
    core.create_namespace({"metadata": {"name": NS, "labels": {"app.kubernetes.io/managed-by": "dralab-tests"}}})
    yield NS
    core.delete_namespace(NS)
    wait_for(f"namespace {NS} to be deleted", lambda: NS not in {n.metadata.name for n in core.list_namespace().items},
             timeout=180)
    if FIGURES:
        print("\n[faults] fault | dra_health said | healed by | detect s | heal s", file=sys.stderr)
        for fault, said, how, detect, heal in FIGURES:
            print(f"[faults] {fault} | {said[:160]} | {how} | {'-' if detect is None else f'{detect:.1f}'} | "
                  f"{'-' if heal is None else f'{heal:.1f}'}", file=sys.stderr)


def claim_pod(core, custom, name: str, node: str = NODE):
    """A claim for one GPU and a running pod using it on node; returns the device's name once it runs."""
    custom.create_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
    core.create_namespaced_pod(NS, {
        "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 1,
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                 "containers": [{"name": "main", "image": "busybox:1.37", "command": ["sleep", "3600"],
                                 "resources": {"claims": [{"name": "gpu"}]}}]}})
    wait_for(f"pod {NS}/{name} to run on {node}",
             lambda: core.read_namespaced_pod(name, NS).status.phase == "Running", timeout=180)
    claim = custom.get_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", name)
    return claim["status"]["allocation"]["devices"]["results"][0]["device"]


def running(core, name: str) -> bool:
    pod = core.read_namespaced_pod(name, NS)
    return pod.status.phase == "Running" and all(c.ready for c in pod.status.container_statuses or [])


def release(core, custom, name: str):
    core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
    custom.delete_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", name)


def plugin_pid(node: str) -> str:
    return node_run(node, "pgrep -o -f dra-example-kubeletplugin").split()[0]


def test_killed_kubelet_plugin(core, custom, fault_ns):
    old = plugin_pid(NODE)
    seen = watch_fault("kubelet plugin on worker1 killed (SIGKILL)", lambda: node_run(NODE, f"kill -KILL {old}"),
                       "itself (the kubelet restarts the container)",
                       detect_types={"driver_plugin_restarted", "driver_plugin_not_ready"})
    assert seen is not None, "dra_health never reported the killed plugin"
    assert seen["node"] == NODE and "kubectl -n" in seen["reason"] and "--previous" in seen["reason"]
    assert plugin_pid(NODE) != old
    device = claim_pod(core, custom, "after-plugin-kill")
    assert device.startswith("gpu-")
    release(core, custom, "after-plugin-kill")


@pytest.mark.faults
def test_deleted_resource_slice(core, custom, fault_ns):
    def delete_slice():
        slices = custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices",
                                                   field_selector=f"spec.nodeName={NODE}")["items"]
        assert slices, f"{NODE} published no ResourceSlice to delete"
        for item in slices:
            custom.delete_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", item["metadata"]["name"])
    # The example driver's plugin does not publish a deleted slice again by itself (measured: not within
    # 4 minutes); dra_health names the plugin pod and heal.yml restarts it.
    seen = watch_fault("worker1's ResourceSlice deleted", delete_slice, "playbooks/heal.yml (restarts the plugin pod)",
                       detect_types={"node_missing_slice", "device_count_short", "pool_inconsistent"}, heal=run_heal)
    assert seen is not None and seen["type"] == "node_missing_slice", seen
    assert seen.get("pod", "").startswith("dra-example-driver/") and "playbooks/heal.yml" in seen["reason"], seen
    claim_pod(core, custom, "after-slice-delete")
    release(core, custom, "after-slice-delete")


@pytest.mark.faults
@pytest.mark.parametrize("service", ["kubelet", "containerd"])
def test_restarted_node_service_keeps_running_work(core, custom, fault_ns, service):
    holder = f"holds-{service}"
    device = claim_pod(core, custom, holder)
    watch_fault(f"{service} restarted on worker1 with a pod holding {device}",
                lambda: node_run(NODE, f"systemctl restart {service}"), "itself")
    assert running(core, holder), f"the pod holding {device} stopped when {service} restarted"
    claim = custom.get_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", holder)
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == device
    after = f"after-{service}"
    assert claim_pod(core, custom, after).startswith("gpu-")
    release(core, custom, after)
    release(core, custom, holder)


@pytest.mark.faults
def test_stopped_lease_reaper_is_started_by_heal():
    """The lease reaper (the GPU waitlist's keeper, the end of every lease) stopped on cp1: heal.yml starts it,
    and a second heal.yml changes nothing."""
    cp1 = node_host("cp1")
    node_run("cp1", "systemctl stop dralab-lease-reaper")
    assert not cp1.service("dralab-lease-reaper").is_running
    start = time.monotonic()
    run_heal()
    assert cp1.service("dralab-lease-reaper").is_running, "heal.yml did not start the lease reaper"
    print(f"\n[faults] lease reaper stopped on cp1: heal.yml started it ({time.monotonic() - start:.0f}s)",
          file=sys.stderr)
    again = parse_recap(run_heal().stdout)
    assert all(host["changed"] == 0 for host in again.values()), again


REBOOTED = "worker2"


def container_of(node: str) -> str:
    return topology.BY_NAME[node].container


def pod_state(core, name: str) -> str:
    """A pod's phase, conditions, container states and last events, for a failure message."""
    pod = core.read_namespaced_pod(name, NS)
    events = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
    return (f"{pod.status.phase} {[(c.type, c.status, c.reason) for c in pod.status.conditions or []]} "
            f"{[(c.name, c.state.to_dict()) for c in pod.status.container_statuses or []]} "
            f"events: {[(e.reason, e.message) for e in events[-6:]]}")


@pytest.mark.faults
def test_rebooted_worker_frees_the_claims_of_pods_gone_meanwhile(core, custom, fault_ns):
    """worker2 reboots (its container stopped: systemd shuts down, then started again, as a VM) while two pods
    hold claims there; one pod is deleted while the node is down (its claim's consumer no longer exists: the
    seed's dead-pod claim). Afterwards: the other pod runs again with its device, no claim stays reserved for
    a pod that does not exist, every device is published again, and a new claim runs on worker2."""
    holder = claim_pod(core, custom, "reboot-holder", REBOOTED)
    claim_pod(core, custom, "reboot-gone", REBOOTED)
    start = time.monotonic()
    podman("stop", "--time", "60", container_of(REBOOTED), timeout=120)
    # The node's kubelet is not there to confirm: the pod object goes at once (as a force delete does).
    core.delete_namespaced_pod("reboot-gone", NS, grace_period_seconds=0)
    seen = wait_for(f"dra_health to report {REBOOTED} down", lambda: (problems_on(
        REBOOTED, PLUGIN_TYPES | {"claim_reserved_for_missing_pod"}) or [None])[0], timeout=180, interval=POLL)
    detected = time.monotonic() - start
    print(f"\n[faults] {REBOOTED} down: dra_health said {seen['type']} after {detected:.1f}s: {seen['reason']}",
          file=sys.stderr)
    booted = time.monotonic()
    podman("start", container_of(REBOOTED), timeout=120)
    how = "itself"
    try:
        wait_for(f"the lab to heal by itself after {REBOOTED} rebooted", healed, timeout=240, interval=POLL)
    except AssertionError:
        how = "playbooks/heal.yml"
        run_heal()
        wait_for(f"the lab to heal after {REBOOTED} rebooted", healed, timeout=240, interval=POLL)
    try:
        wait_for("the holder to run again after the reboot", lambda: running(core, "reboot-holder"), timeout=240)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; reboot-holder: {pod_state(core, 'reboot-holder')}") from None
    healed_after = time.monotonic() - booted
    FIGURES.append((f"{REBOOTED} rebooted with pods holding claims there", f"{seen['type']}: {seen['reason']}", how,
                    detected, healed_after))
    claim = custom.get_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", "reboot-gone")
    reserved = [r.get("name") for r in claim.get("status", {}).get("reservedFor", [])]
    assert "reboot-gone" not in reserved, f"the claim of the deleted pod is still reserved for it: {claim['status']}"
    assert not [p for p in report()["problems"] if p["type"] == "claim_reserved_for_missing_pod"]
    claim = custom.get_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", "reboot-holder")
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == holder
    assert claim_pod(core, custom, "after-reboot", REBOOTED).startswith("gpu-")
    for name in ("after-reboot", "reboot-holder"):
        release(core, custom, name)
    custom.delete_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaims", "reboot-gone")


@pytest.mark.faults
def test_stopped_api_server_fails_fast_and_heal_restores_it():
    """The kube-apiserver's static pod stopped: every playbook that needs the API answers in seconds with one
    sentence, no traceback, and changes nothing on any host; heal.yml writes the manifest again (kubeadm init
    phase) and the API server comes back."""
    manifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"
    node_run("cp1", f"mv {manifest} /root/kube-apiserver.yaml.fault")
    start = time.monotonic()
    took = {}
    try:
        wait_for("the API server to stop", _api_down, timeout=120, interval=1)
        down_after = time.monotonic() - start
        for playbook in API_PLAYBOOKS:
            began = time.monotonic()
            proc = run_playbook(REPO / "playbooks" / playbook, timeout=300)
            took[playbook] = time.monotonic() - began
            out = proc.stdout + proc.stderr
            assert proc.returncode != 0, f"{playbook}: {out[-2000:]}"
            assert "Traceback" not in out, f"{playbook}: {out[-3000:]}"
            assert "Cannot reach the Kubernetes API" in out, f"{playbook}: {out[-3000:]}"
            changed = {host: counts["changed"] for host, counts in parse_recap(proc.stdout).items()
                       if counts["changed"]}
            assert not changed, f"{playbook} changed hosts before it stopped: {changed}"
        print(f"\n[faults] API server stopped ({down_after:.1f}s to go down): "
              + ", ".join(f"{name} failed in {secs:.1f}s" for name, secs in took.items()), file=sys.stderr)
    except BaseException:
        node_run("cp1", f"test -e {manifest} || mv /root/kube-apiserver.yaml.fault {manifest}")
        raise
    began = time.monotonic()
    run_heal()
    wait_for("the API server to answer", lambda: not _api_down(), timeout=180, interval=1)
    FIGURES.append(("API server stopped (manifest moved away)",
                    "every API playbook: Cannot reach the Kubernetes API", "playbooks/heal.yml",
                    max(took.values()), time.monotonic() - began))
    node_run("cp1", "rm -f /root/kube-apiserver.yaml.fault")
    wait_for("the lab to be healthy", healed, timeout=180, interval=1)


def _api_down() -> bool:
    try:
        KubeClient.from_params({"kubeconfig": str(KUBECONFIG)}).request("GET", "/version")
    except Exception:  # noqa: BLE001  (any failure to answer means down)
        return True
    return False
