"""What the local control plane's components are started with, as the lab's roles would start them: the
kube-apiserver flags of roles/control_plane, the kubelet plugin's environment for chart values, feature gates."""

from __future__ import annotations

import sys
from pathlib import Path

from dralab_build import role_vars
from local_cluster.processes import ClusterError

REPO = Path(__file__).resolve().parents[3]


def apiserver_role_flags(variables=None) -> list[str]:
    """The kube-apiserver flags the control_plane role sets for the lab's safety (admission plugins, token
    lifetimes), read from the role's defaults (one source) and rendered with the collection's own rule."""
    variables = variables or role_vars.RoleVars()
    if str(REPO / "collections") not in sys.path:
        sys.path.insert(0, str(REPO / "collections"))  # collections/ansible_collections/dralab/workshop -> REPO
    from ansible_collections.dralab.workshop.plugins.module_utils.seat.event import token_lifetime_cap
    from ansible_collections.dralab.workshop.plugins.module_utils.values import max_token_expiration
    extend = variables.get("control_plane", "control_plane_service_account_extend_token_expiration")
    lifetime = token_lifetime_cap(*(variables.str("control_plane", "control_plane_" + name) for name in (
        "service_account_max_token_expiration", "event_start", "event_end", "event_lead")))
    return [
        "--enable-admission-plugins=" + ",".join(variables.get("control_plane", "control_plane_apiserver_admission_plugins")),
        "--service-account-max-token-expiration=" + max_token_expiration(lifetime),
        "--service-account-extend-token-expiration=" + str(extend in (True, "true", "True")).lower(),
    ]


# How the dra-example-driver v0.4.0 chart hands its values to the kubelet plugin
# (deployments/helm/dra-example-driver/templates/kubeletplugin.yaml): value path -> environment variable.
# The harness runs the plugin without the chart, so it does the same for the values it supports.
CHART_PLUGIN_ENV = {
    ("deviceProfile",): "DEVICE_PROFILE",
    ("gpuAllowMultipleAllocations",): "GPU_ALLOW_MULTIPLE_ALLOCATIONS",
    ("gpuDeviceStatus",): "GPU_DEVICE_STATUS",
    ("kubeletPlugin", "gpuPartitions"): "GPU_PARTITIONS",
    ("kubeletPlugin", "bindingConditions"): "BINDING_CONDITIONS",
}


def chart_plugin_env(values: dict) -> dict[str, str]:
    """The kubelet plugin's environment for chart values; ClusterError for a value the harness cannot pass."""
    env: dict[str, str] = {}

    def walk(prefix: tuple, tree: dict) -> None:
        for key, value in tree.items():
            path = (*prefix, key)
            if isinstance(value, dict):
                walk(path, value)
            elif path in CHART_PLUGIN_ENV:
                env[CHART_PLUGIN_ENV[path]] = str(value).lower() if isinstance(value, bool) else str(value)
            else:
                raise ClusterError(f"chart value {'.'.join(path)} has no kubelet plugin equivalent in the harness")
    walk((), values or {})
    return env


def normalize_gates(spec: str) -> str:
    """'A,B=false' -> 'A=true,B=false'."""
    out = []
    for item in filter(None, (s.strip() for s in (spec or "").split(","))):
        out.append(item if "=" in item else f"{item}=true")
    return ",".join(out)
