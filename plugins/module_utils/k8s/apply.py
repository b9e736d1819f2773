# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply a set of objects with few requests: read once per kind, write only what differs.

apply_objects() lists each kind once (cluster-wide, by label), compares every
wanted object with the live one, and sends a server-side apply (field manager
dralab.workshop, forced) only for objects that are missing or differ, in
parallel within a phase: admission policies first, then the other
cluster-scoped objects (Namespaces), then ServiceAccounts (before the token
Secrets that name them), then the other namespaced ones. An object
counts as changed only when the API server's resourceVersion moved, so a
comparison that cannot see the server's normal form (quantities) costs one
request, never a false "changed". In check mode the writes are dry runs, except for
the namespaced objects of a Namespace the same apply would create: the API server
refuses a dry run into a namespace that does not exist ("namespaces \"user05\" not
found"), so those are reported as created without a request.

"Differs": a wanted field is missing or has another value (quantities
compared by value), a list has another length, or the live object keeps a
label, annotation or quota key that this manager applied before and no longer
wants (the manager's managedFields).
"""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import WORKERS, parallel_map
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_quantity

FIELD_MANAGER = 'dralab.workshop'
APPLY_CONTENT_TYPE = 'application/apply-patch+yaml'

# (apiVersion, kind) -> (plural, namespaced): the kinds this collection applies.
KINDS = {
    ('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy'): ('validatingadmissionpolicies', False),
    ('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding'):
        ('validatingadmissionpolicybindings', False),
    ('flowcontrol.apiserver.k8s.io/v1', 'PriorityLevelConfiguration'): ('prioritylevelconfigurations', False),
    ('flowcontrol.apiserver.k8s.io/v1', 'FlowSchema'): ('flowschemas', False),
    ('v1', 'Namespace'): ('namespaces', False),
    ('rbac.authorization.k8s.io/v1', 'ClusterRole'): ('clusterroles', False),
    ('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'): ('clusterrolebindings', False),
    ('rbac.authorization.k8s.io/v1', 'RoleBinding'): ('rolebindings', True),
    ('v1', 'ServiceAccount'): ('serviceaccounts', True),
    ('v1', 'Secret'): ('secrets', True),
    ('v1', 'ResourceQuota'): ('resourcequotas', True),
    ('v1', 'LimitRange'): ('limitranges', True),
}
# Maps whose keys this manager owns one by one: a key it no longer wants must go.
OWNED_MAPS = (('metadata', 'labels'), ('metadata', 'annotations'), ('spec', 'hard'))


def kind_of(obj):
    key = (obj.get('apiVersion'), obj.get('kind'))
    if key not in KINDS:
        raise ValueError('cannot apply %s %s: only %s' % (key[0], key[1], ', '.join(sorted(k for _v, k in KINDS))))
    return key


def list_path(api_version, kind, namespace=None):
    plural, namespaced = KINDS[(api_version, kind)]
    prefix = '/api/v1' if api_version == 'v1' else '/apis/' + api_version
    if namespaced and namespace:
        return '%s/namespaces/%s/%s' % (prefix, namespace, plural)
    return '%s/%s' % (prefix, plural)


def object_path(obj):
    meta = obj['metadata']
    api_version, kind = kind_of(obj)
    return '%s/%s' % (list_path(api_version, kind, meta.get('namespace')), meta['name'])


def _key(obj):
    meta = obj.get('metadata') or {}
    return meta.get('namespace') or '', meta.get('name')


def same_scalar(live, wanted):
    if live == wanted:
        return True
    if isinstance(live, str) and isinstance(wanted, str):
        try:
            return parse_quantity(live) == parse_quantity(wanted)
        except ValueError:
            return False
    return False


def contains(live, wanted):
    """Whether the live value has every field of wanted with the same value (lists: same length, item by item)."""
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return False
        return all(contains(live.get(key), value) if value is not None else live.get(key) is None
                   for key, value in wanted.items())
    if isinstance(wanted, list):
        return (isinstance(live, list) and len(live) == len(wanted)
                and all(contains(item, want) for item, want in zip(live, wanted)))
    return same_scalar(live, wanted)


def owned_fields(live, manager=FIELD_MANAGER):
    """fieldsV1 of the manager's Apply entry in managedFields, or None when the manager never applied."""
    for entry in (live.get('metadata') or {}).get('managedFields') or []:
        if entry.get('manager') == manager and entry.get('operation') == 'Apply':
            return entry.get('fieldsV1') or {}
    return None


def _at(data, path):
    for step in path:
        data = (data or {}).get(step) if isinstance(data, dict) else None
    return data


def up_to_date(live, wanted, manager=FIELD_MANAGER):
    """Whether applying wanted to live would change nothing this manager cares about.

    live as a list serves it: without apiVersion and kind (the list has them).
    """
    fields = dict((key, value) for key, value in wanted.items() if key not in ('apiVersion', 'kind'))
    if live is None or not contains(live, fields):
        return False
    owned = owned_fields(live, manager)
    if owned is None:
        return False
    for path in OWNED_MAPS:
        fields = _at(owned, ['f:' + step for step in path]) or {}
        keys = set(name[2:] for name in fields if name.startswith('f:'))
        if keys - set(_at(wanted, path) or {}):
            return False
    return True


# kube-controller-manager's token controller deletes a kubernetes.io/service-account-token Secret whose
# ServiceAccount it cannot find (pkg/controller/serviceaccount/tokens_controller.go, syncSecret): a Secret
# written beside its ServiceAccount, in parallel, was sometimes deleted at once and never got its token.
PHASES = 4


def _phase(obj):
    """0 admission policies, 1 the other cluster-scoped objects, 2 ServiceAccounts, 3 the other namespaced ones."""
    api_version, kind = kind_of(obj)
    if api_version.startswith('admissionregistration.'):
        return 0
    if not KINDS[(api_version, kind)][1]:
        return 1
    return 2 if (api_version, kind) == ('v1', 'ServiceAccount') else 3


class Applier:
    """Applies objects through a KubeClient-like client (request(method, path, body, query, content_type))."""

    def __init__(self, client, manager=FIELD_MANAGER, workers=WORKERS):
        self.client = client
        self.manager = manager
        self.workers = workers
        self.requests = 0
        # The objects apply() compared against, by kind (what the cluster held before its writes).
        self.last_live = {}

    def _map(self, fn, items):
        items = list(items)
        self.requests += len(items)
        return parallel_map(fn, items, self.workers)

    def live(self, kinds, label_selector=None):
        """{(apiVersion, kind): {(namespace, name): object}}, one list per kind (in parallel)."""
        query = {'labelSelector': label_selector} if label_selector else None

        def read(key):
            return key, self.client.list_items(list_path(*key), query)
        listed = self._map(read, kinds)
        return dict((key, dict((_key(item), item) for item in items)) for key, items in listed)

    def write(self, obj, dry_run=False):
        query = {'fieldManager': self.manager, 'force': 'true'}
        if dry_run:
            query['dryRun'] = 'All'
        return self.client.request('PATCH', object_path(obj), body=json.dumps(obj), query=query,
                                   content_type=APPLY_CONTENT_TYPE) or {}

    def apply(self, objects, label_selector=None, check_mode=False, known=None):
        """Apply objects; returns {'created': [...], 'updated': [...], 'unchanged': n, 'requests': n}.

        The live objects of each kind are listed with label_selector (the wanted objects carry that label),
        except the kinds in known ({(apiVersion, kind): {(namespace, name): object}}: read by the caller
        already). Raises K8sError, ValueError.
        """
        kinds = []
        for obj in objects:
            if kind_of(obj) not in kinds and kind_of(obj) not in (known or {}):
                kinds.append(kind_of(obj))
        live = dict(known or {})
        if kinds:
            live.update(self.live(kinds, label_selector))
        self.last_live = live
        todo = [(obj, live.get(kind_of(obj), {}).get(_key(obj))) for obj in objects]
        stale = [(obj, current) for obj, current in todo if not up_to_date(current, obj, self.manager)]
        result = {'created': [], 'updated': [], 'unchanged': len(objects) - len(stale)}
        if check_mode:
            new_namespaces = set(_key(obj)[1] for obj, current in stale
                                 if current is None and kind_of(obj) == ('v1', 'Namespace'))
            inside_new = [obj for obj, current in stale if current is None and _key(obj)[0] in new_namespaces]
            result['created'] += [describe(obj) for obj in inside_new]
            stale = [(obj, current) for obj, current in stale if current is not None or _key(obj)[0] not in new_namespaces]

        def send(item):
            obj, current = item
            answer = self.write(obj, dry_run=check_mode)
            if current is None:
                return 'created', obj
            if check_mode:  # a dry run keeps the resourceVersion: compare the object it would store
                return ('updated' if _comparable(answer) != _comparable(current) else 'unchanged'), obj
            before = (current.get('metadata') or {}).get('resourceVersion')
            after = (answer.get('metadata') or {}).get('resourceVersion')
            return ('updated' if before != after else 'unchanged'), obj
        for phase in range(PHASES):
            for outcome, obj in self._map(send, [item for item in stale if _phase(item[0]) == phase]):
                if outcome == 'unchanged':
                    result['unchanged'] += 1
                else:
                    result[outcome].append(describe(obj))
        result['requests'] = self.requests
        return result


def _comparable(obj):
    """The object without what a write changes by itself (version, kind, the managers' timestamps)."""
    meta = dict(obj.get('metadata') or {})
    meta.pop('resourceVersion', None)
    meta['managedFields'] = [dict((k, v) for k, v in entry.items() if k != 'time')
                             for entry in meta.get('managedFields') or []]
    kept = dict((k, v) for k, v in obj.items() if k not in ('apiVersion', 'kind', 'metadata'))
    kept['metadata'] = meta
    return kept


def describe(obj):
    namespace, name = _key(obj)
    return '%s %s' % (obj.get('kind'), '%s/%s' % (namespace, name) if namespace else name)
