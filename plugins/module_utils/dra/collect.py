# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read every object the DRA health analysis needs, through KubeClient.

collect() returns plain item lists keyed like the arguments of
dra/health.py analyze(), plus warnings for optional reads that failed. The kinds
are read in parallel; each item loses, as its page arrives, what no analysis
reads (managedFields; a Pod's volumes, images and container details but what
the kubelet plugin check reads), so 10,000 pods cost the memory of their
scheduling fields only.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import PLUGIN_DRIVER_ENV
from ansible_collections.dralab.workshop.plugins.module_utils.k8s import etcd
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, parallel_map
from ansible_collections.dralab.workshop.plugins.module_utils.seat import token_health
from ansible_collections.dralab.workshop.plugins.module_utils.seat.tokens import stored_expiries

LIST_PATHS = (
    ('device_classes', '/apis/resource.k8s.io/v1/deviceclasses'),
    ('slices', '/apis/resource.k8s.io/v1/resourceslices'),
    ('claims', '/apis/resource.k8s.io/v1/resourceclaims'),
    ('pods', '/api/v1/pods'),
    ('nodes', '/api/v1/nodes'),
    ('namespaces', '/api/v1/namespaces'),
    # Which templates exist: a pod waiting for one that does not is reported (dra/pod_claims.py).
    ('claim_templates', '/apis/resource.k8s.io/v1/resourceclaimtemplates'),
)
EVENTS_PATH = '/api/v1/events'
# Served only with the DRADeviceTaintRules gate and resource.k8s.io/v1alpha3 (feature device_taints).
TAINT_RULES_PATH = '/apis/resource.k8s.io/v1alpha3/devicetaintrules'
EVENTS_QUERY = {'fieldSelector': 'reason=FailedScheduling'}
# Why the resource claim controller could not make a pod's claim from its template (dra/pod_claims.py refused_claims);
# read apart (a field selector matches one reason) and given with the events.
CLAIM_EVENTS_QUERY = {'fieldSelector': 'reason=FailedResourceClaimCreation'}
# The reads that may fail without failing collect(), with their queries.
OPTIONAL = {'device_taint_rules': None, 'events': EVENTS_QUERY, 'claim_events': CLAIM_EVENTS_QUERY}
# What the DRA model, the explainer and the board never read, dropped from each object as it is read.
POD_SPEC_UNUSED = ('initContainers', 'ephemeralContainers', 'volumes', 'securityContext',
                   'dnsConfig', 'hostAliases', 'readinessGates', 'os', 'overhead')
POD_STATUS_UNUSED = ('initContainerStatuses', 'ephemeralContainerStatuses', 'podIPs', 'hostIPs')
# Of the containers and their statuses only what the kubelet plugin check reads (dra/health.py plugin_driver and
# the plugin's state: the driver's name, restarts, waiting and last termination).
CONTAINER_STATUS_USED = ('name', 'restartCount', 'state', 'lastState')


def slim(item):
    """The object without metadata.managedFields (read by nobody here)."""
    meta = item.get('metadata')
    if isinstance(meta, dict) and 'managedFields' in meta:
        item = dict(item, metadata=dict((k, v) for k, v in meta.items() if k != 'managedFields'))
    return item


def _slim_container(container):
    """A container with its name and the env entry naming a kubelet plugin's driver only."""
    env = [e for e in container.get('env') or () if e.get('name') == PLUGIN_DRIVER_ENV]
    return dict({'name': container.get('name')}, **({'env': env} if env else {}))


def slim_pod(pod):
    """A Pod with its scheduling and claim fields only (of its containers and their statuses what the kubelet
    plugin check reads; no volumes, images, resources)."""
    pod = dict(slim(pod))
    for key, unused in (('spec', POD_SPEC_UNUSED), ('status', POD_STATUS_UNUSED)):
        part = pod.get(key)
        if isinstance(part, dict):
            pod[key] = dict((k, v) for k, v in part.items() if k not in unused)
    spec, status = pod.get('spec'), pod.get('status')
    if isinstance(spec, dict) and isinstance(spec.get('containers'), list):
        spec['containers'] = [_slim_container(c) for c in spec['containers'] if isinstance(c, dict)]
    if isinstance(status, dict) and isinstance(status.get('containerStatuses'), list):
        status['containerStatuses'] = [dict((k, c[k]) for k in CONTAINER_STATUS_USED if k in c)
                                       for c in status['containerStatuses'] if isinstance(c, dict)]
    return pod


def collect(client, include_events=True):
    """Read DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates, Pods, Nodes, Namespaces, the
    DeviceTaintRules where the API serves them (and the FailedScheduling and FailedResourceClaimCreation events).

    client is a KubeClient (or anything with its list_items(path, query=None)).

    Raises K8sError when a required list cannot be read. Events are optional:
    a failure to read them becomes a warning and an empty list.
    """
    def read(entry):
        key, path = entry
        if key in OPTIONAL:
            try:
                return key, client.list_items(path, OPTIONAL[key], transform=slim), None
            except K8sError as exc:
                return key, [], exc
        return key, client.list_items(path, transform=slim_pod if key == 'pods' else slim), None
    # The largest lists first, so they start at once.
    order = sorted(LIST_PATHS, key=lambda entry: entry[0] not in ('pods', 'claims'))
    read_list = order + [('device_taint_rules', TAINT_RULES_PATH)] + (
        [('events', EVENTS_PATH), ('claim_events', EVENTS_PATH)] if include_events else [])
    data = {'events': []}
    warnings = []
    for key, items, exc in parallel_map(read, read_list):
        data[key] = items
        if exc is None:
            continue
        if key == 'device_taint_rules':
            if exc.status != 404:  # 404: the lab does not serve them (no device_taints feature)
                warnings.append('Could not read DeviceTaintRules (%s); only the taints the drivers publish are '
                                'reported.' % exc)
        elif key == 'claim_events':
            warnings.append('Could not read FailedResourceClaimCreation events (%s); a pod whose claim the API '
                            'refused to make is reported without the refusal\'s words.' % exc)
        else:
            warnings.append('Could not read FailedScheduling events (%s); pending claims are explained from the '
                            'pods\' PodScheduled conditions only. Set include_events=false to skip this read.' % exc)
    data['events'] = data['events'] + data.pop('claim_events', [])
    data['warnings'] = warnings
    return data


def read_etcd(client, quota, now=None):
    """(problems, figures) of etcd's database (k8s/etcd.py): its size from the API server's /metrics against quota
    (bytes), and the silence of the API servers' identity Leases. Raises K8sError."""
    size = etcd.database_size(client.text('/metrics'))
    leases = client.list_items(etcd.IDENTITY_LEASES, {'labelSelector': etcd.IDENTITY_SELECTOR})
    silence = etcd.lease_silence(leases, now or datetime.datetime.now(datetime.timezone.utc))
    return etcd.storage_problems(size, quota, silence), etcd.storage_summary(size, quota, silence)


def more_checks(client, report, namespaces, params, now=None):
    """dra_health's checks beyond DRA: the seat tokens (with seat_kubeconfig_dir) and etcd (with etcd_quota_bytes).
    Returns the report with their problems, more result keys ({'etcd': figures}) and warnings."""
    more, warnings = {}, []
    if params.get('seat_kubeconfig_dir'):
        expiries = stored_expiries(params['seat_kubeconfig_dir'], token_health.seats_of(namespaces))
        report = token_health.add_problems(report, token_health.token_problems(expiries, now, params['event_end']))
    if params.get('etcd_quota_bytes'):
        try:
            problems, more['etcd'] = read_etcd(client, params['etcd_quota_bytes'], now)
        except K8sError as exc:
            warnings.append('Cannot read the size of etcd: %s' % exc)
        else:
            report = token_health.add_problems(report, problems)
    return report, more, warnings
