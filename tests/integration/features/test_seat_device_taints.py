"""A device the instructor taints stays out of the seats' reach: a seat's claim or claim template that tolerates the
taint is refused (seat/placement.py, dralab-seat-claim-tolerations and -claim-template-tolerations), in the
session whose cluster runs DRADeviceTaints and DRADeviceTaintRules (device_taints). The demo's own key
(dralab.workshop/maintenance, the device_taints feature's device_tolerations) is still tolerated: its demo is
in test_feature_demos.py."""

from __future__ import annotations

import json

import yaml

from k8s_helpers import DRIVER, api_from_kubeconfig, expect_api_error, resource_api
from seat_demo import SEAT

OUT_OF_SERVICE = "dralab.workshop/out-of-service"
RULE = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule", "metadata": {"name": "broken-gpu-1"},
        "spec": {"deviceSelector": {"driver": DRIVER, "device": "gpu-1"},
                 "taint": {"key": OUT_OF_SERVICE, "value": "broken", "effect": "NoExecute"}}}
REFUSED = "may tolerate only the device taints the instructor allows"


def exactly(tolerations):
    return {"deviceClassName": DRIVER, "tolerations": tolerations}


def claim(name, request):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", **request}]}}}


def test_a_seat_claim_may_not_tolerate_the_instructors_device_taint(control_plane, workshop, seat, instructor):
    instructor("apply", "-f", "-", stdin=yaml.safe_dump(RULE))
    try:
        tolerate = [{"key": OUT_OF_SERVICE, "operator": "Exists", "effect": "NoExecute"}]
        everything = [{"operator": "Exists"}]
        manifests = [
            claim("tolerates-broken", {"exactly": exactly(tolerate)}),
            claim("tolerates-all", {"exactly": exactly(everything)}),
            claim("first-available", {"firstAvailable": [{"name": "any", **exactly(tolerate)}]}),
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "tpl"},
             "spec": {"spec": claim("x", {"exactly": exactly(tolerate)})["spec"]}},
        ]
        for body in manifests:
            refused = seat("create", "-f", "-", stdin=json.dumps(body), check=False)
            assert refused.returncode != 0 and REFUSED in refused.stderr, (body["metadata"]["name"], refused.stderr)
        # The seat's own API client gets the same answer.
        api = api_from_kubeconfig(workshop.seat_kubeconfig(SEAT))
        try:
            exc = expect_api_error(403, resource_api(api).create_namespaced_resource_claim, SEAT, manifests[0])
        finally:
            api.close()
        assert REFUSED in json.loads(exc.body)["message"], exc.body
        # The demo's key is allowed (dry run: the demo itself runs in test_feature_demos.py).
        allowed = claim("tolerates-maintenance", {"exactly": exactly(
            [{"key": "dralab.workshop/maintenance", "operator": "Exists", "effect": "NoSchedule"}])})
        seat("create", "--dry-run=server", "-f", "-", stdin=json.dumps(allowed))
    finally:
        instructor("delete", "--ignore-not-found", "devicetaintrule", RULE["metadata"]["name"])
        # What a policy failed to refuse (none, unless the protection is gone) is not left for the next test.
        instructor("delete", "--ignore-not-found", "-n", SEAT, "resourceclaims", "tolerates-broken", "tolerates-all",
                   "first-available")
        instructor("delete", "--ignore-not-found", "-n", SEAT, "resourceclaimtemplates", "tpl")
