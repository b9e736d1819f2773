"""dra_health reports etcd's database against its quota, from the real API server's /metrics.

The harness's etcd is shared by the whole session (no test owns it), so its quota is not lowered: the test reads the
real size through dra_health (apiserver_storage_size_bytes, which kube-apiserver 1.35 publishes about a minute after
it starts), then gives dra_health quotas that the real size breaches: 85 % of one is a warning with what to do, twice
the quota an error that makes the lab unhealthy. The API server's identity Lease is fresh: writes work.
"""

from __future__ import annotations

import time

from k8s_helpers import raw_get
from playbook import problems_of

DEFAULT_QUOTA = 4 * 2 ** 30  # dralab_etcd_quota_bytes


def wait_for_the_size(control_plane, timeout=150):
    """Until the API server publishes the database's size (a minute after it starts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        serialized = control_plane.api_client.param_serialize("GET", "/metrics", header_params={"Accept": "text/plain"},
                                                              auth_settings=["BearerToken"])
        text = control_plane.api_client.call_api(*serialized).read().decode()
        if any(line.startswith("apiserver_storage_size_bytes{") for line in text.splitlines()):
            return
        time.sleep(5)
    raise AssertionError("kube-apiserver published no apiserver_storage_size_bytes in %d s" % timeout)


def test_dra_health_reads_etcds_size_and_reports_a_breached_quota(control_plane, lab):
    assert raw_get(control_plane.api_client, "/api/v1/nodes")["items"]  # the harness is up
    wait_for_the_size(control_plane)
    report = lab.health()
    etcd = report["etcd"]
    print(f"\netcd as dra_health read it: {etcd}")
    assert etcd["size_bytes"] > 0 and etcd["quota_bytes"] == DEFAULT_QUOTA
    assert etcd["lease_silence_seconds"] is not None and etcd["lease_silence_seconds"] < 60  # writes work
    assert not problems_of(report, "etcd_storage_full") and not problems_of(report, "etcd_writes_failing")

    size = etcd["size_bytes"]
    report = lab.health(etcd_quota_bytes=size * 100 // 85)
    full, = problems_of(report, "etcd_storage_full")
    print(f"quota {size * 100 // 85}: {full['severity']}: {full['reason']}")
    # The database may grow between the two reads: at least the warning, with what to do.
    assert full["severity"] in ("warning", "error") and full["quota"] == size * 100 // 85 and full["size"] >= size
    assert "NOSPACE" in full["reason"] and "etcdctl defrag" in full["reason"]
    assert any(line.startswith(f"  {full['severity'].upper()} etcd: etcd's database takes")
               for line in report["report_lines"])

    report = lab.health(etcd_quota_bytes=size // 2)
    full, = problems_of(report, "etcd_storage_full")
    assert full["severity"] == "error" and report["healthy"] is False
