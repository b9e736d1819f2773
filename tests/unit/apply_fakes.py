# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory API server for the k8s_apply tests and those of its users: lists by label, server-side apply."""

from __future__ import annotations

import copy
import json
import threading

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import apply as k8s_apply
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, list_pages


class Store:
    """Keeps objects by path; answers lists (label selector key=value), server-side apply and merge patches.

    As kube-apiserver, it refuses a write (a dry run too) into a namespace it does not have.
    """

    def __init__(self):
        self.objects = {}
        self.version = 0
        self.calls = []
        self.lock = threading.Lock()

    # Picklable (module_runner.py passes the store to the module's process and back): the lock stays behind.
    def __getstate__(self):
        return dict((key, value) for key, value in self.__dict__.items() if key != 'lock')

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()

    def add_namespace(self, name):
        """A namespace someone else made (no label of ours), so objects may be written into it."""
        self.objects['/api/v1/namespaces/%s' % name] = {'apiVersion': 'v1', 'kind': 'Namespace',
                                                        'metadata': {'name': name, 'resourceVersion': '0'}}
        return self

    def list_items(self, path, query=None, transform=None):
        return list_pages(self, path, query, transform)

    def request(self, method, path, body=None, query=None, content_type=None):
        with self.lock:
            self.calls.append((method, path))
            if method == 'GET':
                key, value = ((query or {}).get('labelSelector') or '=').split('=', 1)
                # A list's items have no apiVersion and kind (the list has them), as the API serves them.
                items = [dict((k, v) for k, v in copy.deepcopy(obj).items() if k not in ('apiVersion', 'kind'))
                         for _where, obj in sorted(self.objects.items())
                         if k8s_apply.list_path(obj['apiVersion'], obj['kind']) == path
                         and (not key or obj['metadata'].get('labels', {}).get(key) == value)]
                return {'metadata': {}, 'items': items}
            assert method == 'PATCH' and content_type == k8s_apply.APPLY_CONTENT_TYPE
            assert query['fieldManager'] == 'dralab.workshop' and query['force'] == 'true'
            wanted = json.loads(body)
            namespace = wanted['metadata'].get('namespace')
            if namespace and '/api/v1/namespaces/%s' % namespace not in self.objects:
                raise K8sError('namespaces "%s" not found' % namespace, status=404)
            old = self.objects.get(path)
            new = copy.deepcopy(wanted)
            new['metadata']['managedFields'] = [{'manager': 'dralab.workshop', 'operation': 'Apply',
                                                 'fieldsV1': fields_of(wanted)}]
            if old is not None and strip(old) == strip(new):
                return copy.deepcopy(old)
            if query.get('dryRun'):
                new['metadata']['resourceVersion'] = (old or {}).get('metadata', {}).get('resourceVersion', '0')
                return new
            self.version += 1
            new['metadata']['resourceVersion'] = str(self.version)
            self.objects[path] = new
            return copy.deepcopy(new)


def strip(obj):
    obj = copy.deepcopy(obj)
    obj['metadata'].pop('resourceVersion', None)
    return obj


def fields_of(obj):
    """A fieldsV1 of the maps under OWNED_MAPS (enough for up_to_date)."""
    fields = {}
    for path in k8s_apply.OWNED_MAPS:
        data = obj
        for step in path:
            data = (data or {}).get(step)
        if isinstance(data, dict):
            node = fields
            for step in path:
                node = node.setdefault('f:' + step, {})
            node.update(('f:' + key, {}) for key in data)
    return fields


class RbacStore(Store):
    """A Store that also serves API discovery (seat_fakes.SERVED) and ClusterRoles by name (get), for seat_objects'
    kinds derived from the seats' RBAC rules."""

    def __init__(self, cluster_roles):
        super().__init__()
        self.cluster_roles = cluster_roles  # name -> rules

    def get(self, path, missing_ok=False):
        name = path.rsplit('/', 1)[-1]
        if path.startswith('/apis/rbac.authorization.k8s.io/v1/clusterroles/') and name in self.cluster_roles:
            return {'metadata': {'name': name}, 'rules': self.cluster_roles[name]}
        if missing_ok:
            return None
        raise K8sError('%s not found' % path, status=404)

    def request(self, method, path, body=None, query=None, content_type=None):
        from seat_fakes import discovery  # noqa: E402 (tests/unit/seat_fakes.py)
        served = discovery(path) if method == 'GET' else None
        if served is not None:
            return served
        return super().request(method, path, body, query, content_type)
