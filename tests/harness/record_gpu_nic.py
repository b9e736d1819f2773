"""Record the DRA objects of gpu_nic_numa for the unit tests (tests/unit/fixtures/dra/gpu_nic.json).

Starts a cluster (tests/harness/cluster.py, nodes node1..node3) with the features' gates and the chart's NIC
release, the lab's build of the driver (dralab_build/binaries/source_edits.py: resource.kubernetes.io/pcieRoot), then as the
admin: seat namespace user01 with the demo of docs/demos/gpu-nic-numa (a GPU and a NIC on one PCIe root), and
pod two-shares with two claims of NIC nic-3 (shareable: consumable capacity) on one node. Writes every list
dra_collect reads, by API path, and stops the cluster.

    python tests/harness/record_gpu_nic.py tests/unit/fixtures/dra/gpu_nic.json
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

HARNESS = Path(__file__).resolve().parent
REPO = HARNESS.parents[1]
sys.path.insert(0, str(HARNESS))
sys.path.insert(0, str(REPO / "collections"))
sys.path.insert(0, str(REPO))  # dralab_build
from local_cluster.control_plane import Cluster  # noqa: E402  (tests/harness/local_cluster)
from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect  # noqa: E402
from ansible_collections.dralab.workshop.plugins.module_utils.dra import features as dra_features

FEATURES = ["gpu_nic_numa"]
SEAT = "user01"
NIC_INDEX = 3


def nic_claim(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "nic", "exactly": {
                "deviceClassName": dra_features.NIC_CLASS["name"],
                "selectors": [{"cel": {"expression": "device.attributes['%s'].index == %d"
                                       % (dra_features.NIC_DRIVER, NIC_INDEX)}}]}}]}}}


def main(out: str) -> int:
    from kubernetes import client, dynamic
    directory = tempfile.mkdtemp(prefix="dralab-rec-")
    cluster = Cluster(directory, nodes=["node1", "node2", "node3"], die_with_parent=True,
                      feature_gates=",".join(dra_features.feature_gates(FEATURES)),
                      driver_releases=dra_features.driver_releases(FEATURES))
    try:
        cluster.up()
        api = cluster.api_client()
        core, resource = client.CoreV1Api(api), client.ResourceV1Api(api)
        for item in [{"name": "gpu.example.com", "selectors": ["device.driver == 'gpu.example.com'"]},
                     dra_features.NIC_CLASS]:
            resource.create_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                          "metadata": {"name": item["name"]},
                                          "spec": {"selectors": [{"cel": {"expression": e}}
                                                                 for e in item["selectors"]]}})
        core.create_namespace({"metadata": {"name": SEAT, "labels": {
            "app.kubernetes.io/managed-by": "dralab.workshop", "dralab.workshop/seat": SEAT}}})
        time.sleep(2)  # the default ServiceAccount
        demo = REPO / "docs" / "demos" / "gpu-nic-numa"
        objects = [yaml.safe_load((demo / name).read_text()) for name in ("claim.yaml", "pod.yaml")]
        objects += [nic_claim("share-a"), nic_claim("share-b")]
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "two-shares"}, "spec": {
            "resourceClaims": [{"name": n, "resourceClaimName": n} for n in ("share-a", "share-b")],
            "containers": [{"name": "ctr", "image": "busybox:1.37",
                            "resources": {"claims": [{"name": "share-a"}, {"name": "share-b"}]}}]}})
        dyn = dynamic.DynamicClient(api)
        for obj in objects:
            dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).create(body=obj, namespace=SEAT)
        deadline = time.monotonic() + 120
        while any(p.status.phase != "Running" for p in core.list_namespaced_pod(SEAT).items):
            if time.monotonic() > deadline:
                raise SystemExit("the pods did not start")
            time.sleep(1)
        recorded = {}
        for dummy, path in dra_collect.LIST_PATHS + (("events", dra_collect.EVENTS_PATH),):
            response = api.call_api(*api.param_serialize("GET", path, header_params={"Accept": "application/json"},
                                                         auth_settings=["BearerToken"]))
            recorded[path] = json.loads(response.read())
        Path(out).write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(f"wrote {out}")
    finally:
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
