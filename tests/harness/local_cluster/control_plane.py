"""The local control plane (class Cluster): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
the DRA example kubelet plugins as processes on 127.0.0.1, their state in one directory; starting and stopping
it as a whole or one process at a time."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

from dralab_build.binaries.components import BY_NAME
from dralab_build.binaries.versions import binary_path, extra_files
from local_cluster.component_flags import apiserver_role_flags, chart_plugin_env, normalize_gates
from local_cluster.pki import PKI, write_kubeconfig
from local_cluster.processes import ClusterError, alive, die_with_parent, free_port, log, log_tail, proc_start_time

DRIVER = "gpu.example.com"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # first address of SERVICE_CIDR: the `kubernetes` Service
DEFAULT_NODES = ("node-1", "node-2", "node-3")
STATE_FILE = "cluster.json"
MARKER = ".dralab-cluster"  # only a directory holding this file is ever removed
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes
STOP_ORDER = (  # which processes `down` stops together, in this order
    lambda name: name.startswith("plugin-") or name == "kwok",
    lambda name: name in ("kube-controller-manager", "kube-scheduler"),
    lambda name: name == "kube-apiserver",
    lambda name: name == "etcd",
)


class Cluster:
    def __init__(self, directory: str | Path, nodes=DEFAULT_NODES, feature_gates: str = "",
                 num_devices: int = 8, timeout: float = 240, die_with_parent: bool = False,
                 runtime_config=(), driver_values: dict | None = None, driver_releases=()):
        """die_with_parent: the processes get SIGKILL if this process dies (even by
        SIGKILL), for in-process use such as a pytest fixture. The CLI's `up` leaves
        it off so the cluster outlives the command.
        runtime_config: more kube-apiserver --runtime-config entries (resource.k8s.io/v1alpha3=true).
        driver_values: dra-example-driver chart values (as roles/dra_driver passes them) that the kubelet
        plugins get the way the chart hands them over (chart_plugin_env).
        driver_releases: more releases of the chart (dra_features.driver_releases: suffix, driver, values); each
        runs one more plugin per node, `plugin-<suffix>-<node>`, publishing num_devices devices of its driver."""
        self.dir = Path(directory).resolve()
        self.die_with_parent = die_with_parent
        self.nodes = list(nodes)
        self.feature_gates = normalize_gates(feature_gates)
        self.runtime_config = list(runtime_config)
        self.driver_values = dict(driver_values or {})
        self.plugin_env = chart_plugin_env(self.driver_values)
        self.driver_releases = [dict(release) for release in driver_releases]
        for release in self.driver_releases:
            chart_plugin_env(release["values"])  # refuse a value the harness cannot pass, before anything starts
        self.num_devices = num_devices
        self.timeout = timeout
        self.state: dict = {"procs": []}
        self._popens: dict[int, subprocess.Popen] = {}

    # paths
    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.dir / STATE_FILE

    def load_state(self) -> dict:
        self.state = json.loads(self.state_file.read_text())
        return self.state

    def _save_state(self) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n")
        os.replace(tmp, self.state_file)

    def api_client(self):
        from kubernetes import config
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    # --- up -----------------------------------------------------------------------------
    def up(self, keep_on_failure: bool = False) -> Path:
        started = time.monotonic()
        self._claim_dir()
        try:
            self._up()
        except BaseException as exc:
            log(f"up failed: {exc!r}")
            if isinstance(exc, Exception):  # not for Ctrl-C / SIGTERM
                self._print_logs()
            self.down(remove=not keep_on_failure)
            raise
        self.state["up_seconds"] = round(time.monotonic() - started, 1)
        self._save_state()
        log(f"cluster up in {self.state['up_seconds']}s: kubeconfig {self.kubeconfig}")
        return self.kubeconfig

    def _claim_dir(self) -> None:
        if self.dir.exists() and any(self.dir.iterdir()):
            if (self.dir / MARKER).exists() and self.state_file.exists():
                if any(alive(p) for p in self.load_state()["procs"]):
                    raise ClusterError(f"a cluster is already running in {self.dir}; run `down` first")
                self.down()  # leftovers of a dead cluster
            else:
                raise ClusterError(f"{self.dir} exists and is not empty; refusing to use it")
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / MARKER).touch()
        self.state = {"procs": [], "nodes": self.nodes, "feature_gates": self.feature_gates,
                      "runtime_config": self.runtime_config, "driver_values": self.driver_values,
                      "driver_releases": self.driver_releases}
        self._save_state()

    def _up(self) -> None:
        bins = {c: binary_path(BY_NAME[c]) for c in
                ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
                 "dra-example-kubeletplugin")}
        missing = [str(p) for p in bins.values() if not p.is_file()]
        if missing:
            raise ClusterError(f"missing binaries (run python -m dralab_build.binaries): {missing}")
        kwok_stages = extra_files(BY_NAME["kwok"])[0]
        for name in self.nodes:  # the plugin's sockets must fit in sun_path
            sock = self._node_dir(name) / "plugins" / DRIVER / "dra.sock"
            if len(str(sock)) > MAX_SOCKET_PATH:
                raise ClusterError(f"{self.dir} is too long a path for unix sockets ({sock})")

        ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler", "kwok")}
        self.state["ports"] = ports
        server = f"https://127.0.0.1:{ports['apiserver']}"
        self.state["server"] = server
        self._save_state()

        log("certificates")
        pki = PKI(self.dir / "pki")
        pki.issue("etcd", "etcd", server_names=("127.0.0.1", "localhost"))  # server + client
        pki.issue("apiserver", "kube-apiserver", server_names=(
            "127.0.0.1", "localhost", SERVICE_IP, "kubernetes", "kubernetes.default",
            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"), client=False)
        pki.issue("front-proxy-client", "front-proxy-client")  # aggregation-layer client
        pki.issue("admin", "kubernetes-admin", ("system:masters",))
        pki.issue("kube-controller-manager", "system:kube-controller-manager")
        pki.issue("kube-scheduler", "system:kube-scheduler")
        pki.issue("kwok", "dralab:kwok", ("system:masters",))
        for name in self.nodes:
            pki.issue(f"node-{name}", f"system:node:{name}", ("system:nodes",))
        pki.service_account_keys()
        kc = self.dir / "kubeconfigs"
        kc.mkdir(exist_ok=True)
        write_kubeconfig(self.kubeconfig, server, pki, "admin")
        for stem in ("kube-controller-manager", "kube-scheduler", "kwok", *[f"node-{n}" for n in self.nodes]):
            write_kubeconfig(kc / f"{stem}.kubeconfig", server, pki, stem)

        def p(stem: str, kind: str) -> str:
            return str(pki.path(stem, kind))

        gates = [f"--feature-gates={self.feature_gates}"] if self.feature_gates else []

        etcd_url = f"https://127.0.0.1:{ports['etcd']}"
        peer_url = f"https://127.0.0.1:{ports['etcd_peer']}"
        self._start("etcd", [
            bins["etcd"], "--name=dralab", f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=dralab={peer_url}", "--initial-cluster-state=new",
            f"--cert-file={p('etcd', 'crt')}", f"--key-file={p('etcd', 'key')}",
            f"--trusted-ca-file={p('ca', 'crt')}", "--client-cert-auth",
            f"--peer-cert-file={p('etcd', 'crt')}", f"--peer-key-file={p('etcd', 'key')}",
            f"--peer-trusted-ca-file={p('ca', 'crt')}", "--peer-client-cert-auth",
            "--unsafe-no-fsync",  # throw-away data: do not wait for the disk
            "--log-level=warn",
        ])
        self._wait_https("etcd", f"{etcd_url}/health", pki, "etcd", expect='"health":"true"')

        self._start("kube-apiserver", [
            bins["kube-apiserver"], "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={ports['apiserver']}", f"--cert-dir={self.dir / 'pki'}",
            f"--tls-cert-file={p('apiserver', 'crt')}", f"--tls-private-key-file={p('apiserver', 'key')}",
            f"--client-ca-file={p('ca', 'crt')}",
            f"--etcd-servers={etcd_url}", f"--etcd-cafile={p('ca', 'crt')}",
            f"--etcd-certfile={p('etcd', 'crt')}", f"--etcd-keyfile={p('etcd', 'key')}",
            "--authorization-mode=Node,RBAC",
            *apiserver_role_flags(),  # as roles/control_plane sets them
            "--runtime-config=" + ",".join(["resource.k8s.io/v1=true", *self.runtime_config]),
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.dir / 'sa.pub'}",
            f"--service-account-signing-key-file={pki.dir / 'sa.key'}",
            "--allow-privileged=true",
            # Request-header authentication for the aggregation layer; without
            # it the controller manager and scheduler log errors forever.
            f"--requestheader-client-ca-file={p('ca', 'crt')}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={p('front-proxy-client', 'crt')}",
            f"--proxy-client-key-file={p('front-proxy-client', 'key')}",
            # The `kubernetes` Endpoints may not point at loopback; nothing in
            # this cluster needs them.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            *gates,
        ])
        self._wait_https("kube-apiserver", f"{server}/readyz", pki, "admin", expect="ok")

        for name, port, extra in (
            ("kube-controller-manager", ports["kcm"], [
                "--controllers=*", "--use-service-account-credentials=true",
                f"--root-ca-file={p('ca', 'crt')}",
                f"--service-account-private-key-file={pki.dir / 'sa.key'}",
                f"--cluster-signing-cert-file={p('ca', 'crt')}",
                f"--cluster-signing-key-file={p('ca', 'key')}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # One kwok process renews every fake node's lease; on a loaded machine a renewal can come
                # later than the default 50 s and the node flaps to unreachable, which no test is about.
                "--node-monitor-grace-period=3m",
            ]),
            ("kube-scheduler", ports["scheduler"], []),
        ):
            kubeconfig = kc / f"{name}.kubeconfig"
            self._start(name, [
                bins[name], f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1", f"--secure-port={port}", "--leader-elect=false",
                *extra, *gates,
            ])
        for name, port in (("kube-controller-manager", ports["kcm"]), ("kube-scheduler", ports["scheduler"])):
            self._wait_https(name, f"https://127.0.0.1:{port}/healthz", None, None, expect="ok")

        api = self.api_client()
        self._create_nodes(api)
        kwok_home = self.dir / "kwok-home"  # kwok also reads ~/.kwok/kwok.yaml: keep it out
        kwok_home.mkdir(exist_ok=True)
        self._start("kwok", [
            bins["kwok"], f"--config={kwok_stages}", f"--kubeconfig={kc / 'kwok.kubeconfig'}",
            "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
            f"--server-address=127.0.0.1:{ports['kwok']}",
            "--node-ip=127.0.0.1", f"--node-port={ports['kwok']}",
        ], env={"HOME": str(kwok_home)})
        self._wait("nodes Ready", lambda: self._nodes_ready(api))
        self._wait("ServiceAccount default/default", lambda: self._default_sa(api))

        releases = [("", DRIVER, self.plugin_env)] + [
            (f"{release['suffix']}-", release["driver"], chart_plugin_env(release["values"]))
            for release in self.driver_releases]
        for name in self.nodes:
            nd = self._node_dir(name)
            for sub in ("registry", "plugins", "cdi"):
                (nd / sub).mkdir(parents=True, exist_ok=True)
            for prefix, driver, env in releases:
                # As the chart does: DEVICE_PROFILE (default gpu) and DRIVER_NAME (<profile>.example.com).
                self._start(f"plugin-{prefix}{name}", [
                    bins["dra-example-kubeletplugin"], f"--node-name={name}",
                    f"--num-devices={self.num_devices}", f"--device-profile={env.get('DEVICE_PROFILE', 'gpu')}",
                    f"--driver-name={driver}",
                    f"--kubeconfig={kc / f'node-{name}.kubeconfig'}",
                    f"--kubelet-registrar-directory-path={nd / 'registry'}",
                    f"--kubelet-plugins-directory-path={nd / 'plugins'}",
                    f"--cdi-root={nd / 'cdi'}",
                ], env=env)
        self._wait(f"{len(self.nodes)} ResourceSlices with {self.devices_published} devices"
                   + "".join(f", {self.num_devices} of {r['driver']}" for r in self.driver_releases),
                   lambda: self._slices_ready(api))

    def _node_dir(self, name: str) -> Path:
        return self.dir / "nodes" / name

    def _start(self, name: str, cmd: list, env: dict | None = None) -> None:
        logs = self.dir / "logs"
        logs.mkdir(exist_ok=True)
        logfile = logs / f"{name}.log"
        with open(logfile, "ab") as out:
            proc = subprocess.Popen(
                [str(c) for c in cmd], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.dir, env={**os.environ, **(env or {})},
                start_new_session=True,  # own process group: `down` stops it and its children
                preexec_fn=die_with_parent if self.die_with_parent else None,
            )
        self._popens[proc.pid] = proc
        self.state["procs"].append({"name": name, "pid": proc.pid, "pgid": proc.pid,
                                    "start_time": proc_start_time(proc.pid), "log": str(logfile),
                                    # what restart() needs to start it again
                                    "cmd": [str(c) for c in cmd], "env": dict(env or {})})
        self._save_state()
        log(f"started {name} (pid {proc.pid})")

    def _check_procs(self) -> None:
        for entry in self.state["procs"]:
            proc = self._popens.get(entry["pid"])
            code = proc.poll() if proc else (None if alive(entry) else "?")
            if code is not None:
                raise ClusterError(f"{entry['name']} exited ({code}); log {entry['log']}:\n"
                                   + log_tail(Path(entry["log"])))

    def _wait(self, what: str, ready, interval: float = 0.5) -> None:
        deadline = time.monotonic() + self.timeout
        started = time.monotonic()
        last_err = None
        while time.monotonic() < deadline:
            self._check_procs()
            try:
                if ready():
                    log(f"{what}: ready after {time.monotonic() - started:.1f}s")
                    return
            except Exception as exc:  # not up yet: connection refused, 403 while RBAC settles...
                last_err = exc
            time.sleep(interval)
        raise ClusterError(f"timed out after {self.timeout}s waiting for {what} (last error: {last_err!r})")

    def _wait_https(self, what: str, url: str, pki: PKI | None, client: str | None, expect: str) -> None:
        if pki:
            ctx = ssl.create_default_context(cafile=str(pki.path("ca", "crt")))
            ctx.load_cert_chain(pki.path(client, "crt"), pki.path(client, "key"))
        else:  # kcm/scheduler serve /healthz with a self-signed in-memory cert
            ctx = ssl._create_unverified_context()  # noqa: S323 (our own process on loopback)

        def ok() -> bool:
            with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
                return expect in resp.read().decode()
        self._wait(what, ok)

    def _create_nodes(self, api) -> None:
        from kubernetes import client
        core = client.CoreV1Api(api)
        for name in self.nodes:
            core.create_node({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                               "kubernetes.io/arch": "amd64", "type": "kwok"},
                },
                "status": {
                    # ephemeral-storage as a kubelet reports its disk: seat pods request some (their LimitRange).
                    "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "200Gi"},
                    "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "180Gi"},
                    # The client wants every nodeInfo field; kwok keeps non-empty ones.
                    "nodeInfo": {"kubeletVersion": "v1.35.4", "kubeProxyVersion": "",
                                 "containerRuntimeVersion": "kwok", "kernelVersion": "",
                                 "osImage": "", "operatingSystem": "linux", "architecture": "amd64",
                                 "bootID": "", "machineID": "", "systemUUID": ""},
                },
            })

    def _nodes_ready(self, api) -> bool:
        from kubernetes import client
        nodes = client.CoreV1Api(api).list_node().items
        ready = {n.metadata.name for n in nodes
                 if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])}
        return set(self.nodes) <= ready

    def _default_sa(self, api) -> bool:
        from kubernetes import client
        client.CoreV1Api(api).read_namespaced_service_account("default", "default")
        return True

    @property
    def devices_published(self) -> int:
        """Devices each node's plugin publishes: with partitions, each card as its partitions and itself whole."""
        partitions = int(self.plugin_env.get("GPU_PARTITIONS", "0"))
        return self.num_devices * (partitions + 1) if partitions > 0 else self.num_devices

    def _slices_ready(self, api) -> bool:
        counts = self.devices_per_node(api)
        if not all(counts.get(name) == self.devices_published for name in self.nodes):
            return False
        for release in self.driver_releases:
            counts = self.devices_per_node(api, release["driver"])
            if not all(counts.get(name) == self.num_devices for name in self.nodes):
                return False
        return True

    def devices_per_node(self, api, driver: str = DRIVER) -> dict[str, int]:
        from kubernetes import client
        counts: dict[str, int] = {}
        for s in client.ResourceV1Api(api).list_resource_slice().items:
            if s.spec.driver == driver and s.spec.node_name:
                counts[s.spec.node_name] = counts.get(s.spec.node_name, 0) + len(s.spec.devices or [])
        return counts

    # --- one process at a time (tests that take a node's driver away) ---------------------
    def process(self, name: str) -> dict:
        """The state entry of process `name` (running or stopped)."""
        for entry in self.state.get("procs", []):
            if entry["name"] == name:
                return entry
        for entry in self.state.get("stopped", []):
            if entry["name"] == name:
                return entry
        raise ClusterError(f"no process {name} in {self.state_file}")

    def stop_process(self, name: str, grace: float = 10) -> None:
        """Stop one process (its process group); start_process() starts it again."""
        entry = self.process(name)
        if entry in self.state.get("procs", []):
            if alive(entry):
                self._stop([entry], grace)
            self.state["procs"].remove(entry)
            self.state.setdefault("stopped", []).append(entry)
            self._save_state()
            log(f"stopped {name} (pid {entry['pid']})")

    def start_process(self, name: str, options: dict[str, str] | None = None) -> None:
        """Start a process stopped by stop_process() again, with the same command;
        options ({"--flag": "value"}) replace those flags' values."""
        entry = self.process(name)
        if entry in self.state.get("procs", []):
            if alive(entry):
                if options:
                    raise ClusterError(f"{name} is running; stop it before starting it with other options")
                return
            self.state["procs"].remove(entry)  # died by itself: start it again
        else:
            self.state["stopped"].remove(entry)
        if "cmd" not in entry:
            raise ClusterError(f"{name} was started by an older harness; restart the cluster")
        cmd = list(entry["cmd"])
        for flag, value in (options or {}).items():
            cmd = [arg for arg in cmd if not arg.startswith(f"{flag}=")] + [f"{flag}={value}"]
        self._start(name, cmd, entry.get("env") or None)

    def stop_plugin(self, node: str) -> None:
        """Stop the DRA kubelet plugin of `node` (its ResourceSlice stays until deleted)."""
        self.stop_process(f"plugin-{node}")

    def start_plugin(self, node: str, num_devices: int | None = None) -> None:
        """Start the DRA kubelet plugin of `node` again (optionally with another device
        count); it republishes its ResourceSlice."""
        options = {"--num-devices": str(num_devices)} if num_devices is not None else None
        self.start_process(f"plugin-{node}", options)

    def _print_logs(self) -> None:
        for entry in self.state.get("procs", []):
            log(f"--- last lines of {entry['name']} ({entry['log']}) ---\n{log_tail(Path(entry['log']))}")

    # --- down ---------------------------------------------------------------------------
    def down(self, remove: bool = True, grace: float = 10) -> None:
        if not self.state.get("procs") and self.state_file.exists():
            self.load_state()
        procs = [e for e in self.state.get("procs", []) if alive(e)]
        # Clients first, etcd last: an API server whose etcd is gone shuts down slowly.
        for tier in STOP_ORDER:
            self._stop([e for e in procs if tier(e["name"])], grace)
        if procs:
            log(f"stopped {len(procs)} processes")
        if remove and (self.dir / MARKER).exists():
            shutil.rmtree(self.dir, ignore_errors=True)
            log(f"removed {self.dir}")

    def _stop(self, entries: list[dict], grace: float) -> None:
        """SIGTERM the process groups, wait up to `grace` seconds, then SIGKILL."""
        for entry in entries:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(entry["pgid"], signal.SIGTERM)
        deadline = time.monotonic() + grace
        for entry in entries:
            while alive(entry) and time.monotonic() < deadline:
                self._reap(entry["pid"])
                time.sleep(0.05)
            if alive(entry):
                log(f"{entry['name']} still running {grace}s after SIGTERM; killing")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(entry["pgid"], signal.SIGKILL)
            self._reap(entry["pid"], block=True)

    def _reap(self, pid: int, block: bool = False) -> None:
        proc = self._popens.get(pid)
        if proc is None:
            return
        try:
            proc.wait(timeout=5 if block else 0.01)
        except subprocess.TimeoutExpired:
            pass


def remove_stale(parent: Path, prefix: str, min_age: float = 600) -> None:
    """Remove clusters under parent/prefix* left by a killed run: only directories
    this script created, whose processes are all gone, untouched for min_age seconds."""
    for d in Path(parent).glob(f"{prefix}*"):
        state = d / STATE_FILE
        try:
            if not (d / MARKER).exists() or time.time() - state.stat().st_mtime < min_age:
                continue
            if not any(alive(p) for p in json.loads(state.read_text())["procs"]):
                Cluster(d).down()
        except (OSError, ValueError, KeyError):
            continue
