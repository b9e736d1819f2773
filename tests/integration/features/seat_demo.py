"""Helpers of the features session's tests: kubectl with a kubeconfig, the demo files, a seat's claims.

The fixtures that use them (seat, instructor, cleanup) are in conftest.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

from k8s_helpers import resource_api, wait_for

REPO = Path(__file__).resolve().parents[3]
DEMOS = REPO / "docs" / "demos"
SEAT = "user01"


class Kubectl:
    def __init__(self, binary: Path, kubeconfig: Path):
        self.binary, self.kubeconfig = binary, kubeconfig

    def __call__(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.binary), f"--kubeconfig={self.kubeconfig}", *args], input=stdin,
                              capture_output=True, text=True, timeout=120, check=False)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: rc {proc.returncode}\n{proc.stdout}{proc.stderr}"
        return proc


def demo(name: str, *files: str) -> list[str]:
    """kubectl -f arguments of a demo folder (or of some of its files)."""
    paths = [DEMOS / name / f for f in files] if files else [DEMOS / name]
    return [arg for path in paths for arg in ("-f", str(path))]


def wait_claims_gone(api, namespace: str = SEAT):
    wait_for(f"no ResourceClaims in {namespace}", lambda: not resource_api(api).list_namespaced_resource_claim(
        namespace).items, timeout=120)


def claim(api, name: str, namespace: str = SEAT):
    return resource_api(api).read_namespaced_resource_claim(name, namespace)


def results(claim_obj) -> list:
    return list(claim_obj.status.allocation.devices.results) if claim_obj.status.allocation else []
