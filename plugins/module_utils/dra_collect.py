# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read every object the DRA health analysis needs, through KubeClient.

collect() returns plain item lists keyed like the arguments of
dra_model.analyze(), plus warnings for optional reads that failed.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.k8s_client import K8sError

LIST_PATHS = (
    ('device_classes', '/apis/resource.k8s.io/v1/deviceclasses'),
    ('slices', '/apis/resource.k8s.io/v1/resourceslices'),
    ('claims', '/apis/resource.k8s.io/v1/resourceclaims'),
    ('pods', '/api/v1/pods'),
    ('nodes', '/api/v1/nodes'),
    ('namespaces', '/api/v1/namespaces'),
)
EVENTS_PATH = '/api/v1/events'
# Served only with the DRADeviceTaintRules gate and resource.k8s.io/v1alpha3 (feature device_taints).
TAINT_RULES_PATH = '/apis/resource.k8s.io/v1alpha3/devicetaintrules'
EVENTS_QUERY = {'fieldSelector': 'reason=FailedScheduling'}


def collect(client, include_events=True):
    """Read DeviceClasses, ResourceSlices, ResourceClaims, Pods, Nodes, Namespaces, the DeviceTaintRules where the
    API serves them (and FailedScheduling events).

    client is a KubeClient (or anything with its list_items(path, query=None)).

    Raises K8sError when a required list cannot be read. Events are optional:
    a failure to read them becomes a warning and an empty list.
    """
    data = {}
    for key, path in LIST_PATHS:
        data[key] = client.list_items(path)
    data['events'] = []
    warnings = []
    try:
        data['device_taint_rules'] = client.list_items(TAINT_RULES_PATH)
    except K8sError as exc:
        data['device_taint_rules'] = []
        if exc.status != 404:  # 404: the lab does not serve them (no device_taints feature)
            warnings.append('Could not read DeviceTaintRules (%s); only the taints the drivers publish are '
                            'reported.' % exc)
    if include_events:
        try:
            data['events'] = client.list_items(EVENTS_PATH, EVENTS_QUERY)
        except K8sError as exc:
            warnings.append('Could not read FailedScheduling events (%s); pending claims are explained from the '
                            'pods\' PodScheduled conditions only. Set include_events=false to skip this read.' % exc)
    data['warnings'] = warnings
    return data
