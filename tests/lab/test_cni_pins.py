"""flannel is applied exactly as first recorded: its manifest by sha256, its images by digest (roles/cni pins.yml).

flannel publishes no checksum of kube-flannel.yml and its images are tags, so the first run records what it got
on cp1 and every later run refuses a manifest with another checksum; the DaemonSet runs image@sha256 references,
so every node pulls the same bytes whatever a tag points to later.
"""

from __future__ import annotations

import json
import re

from conftest import REPO, node_host, run_playbook

PINS = "/etc/kubernetes/addons/flannel-pins.json"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def test_flannel_runs_at_the_recorded_digests(api):
    from kubernetes import client

    pins = json.loads(node_host("cp1").file(PINS).content_string)
    daemonset = client.AppsV1Api(api).read_namespaced_daemon_set("kube-flannel-ds", "kube-flannel")
    spec = daemonset.spec.template.spec
    images = [c.image for c in (spec.init_containers or []) + spec.containers]
    assert images and all(DIGEST.search(image) for image in images), images
    assert {image.split("@")[0]: image.split("@")[1] for image in images} == pins["images"]
    (url, checksum), = pins["manifests"].items()
    assert url.endswith("/kube-flannel.yml")
    downloaded = node_host("cp1").check_output("sha256sum /etc/kubernetes/addons/kube-flannel-v*.upstream.yml")
    assert downloaded.split()[0] == checksum


def test_a_manifest_other_than_the_recorded_one_is_refused(api):
    from kubernetes import client

    cp1 = node_host("cp1")
    original = cp1.file(PINS).content_string
    pins = json.loads(original)
    url = next(iter(pins["manifests"]))
    pins["manifests"][url] = "0" * 64  # as if the download had changed since the first run
    before = client.AppsV1Api(api).read_namespaced_daemon_set("kube-flannel-ds", "kube-flannel").metadata.generation
    cp1.check_output(f"cp -p {PINS} {PINS}.keep && printf '%s' {json.dumps(json.dumps(pins))} > {PINS}")
    try:
        proc = run_playbook(REPO / "playbooks" / "cluster.yml", "--tags", "cni")
    finally:
        cp1.check_output(f"mv {PINS}.keep {PINS}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "checksum" in out.lower() and "did not match" in out, out[-3000:]
    after = client.AppsV1Api(api).read_namespaced_daemon_set("kube-flannel-ds", "kube-flannel").metadata.generation
    assert after == before
    assert cp1.file(PINS).content_string == original
