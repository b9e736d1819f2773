# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fakes shared by the seat tests: crafted service account tokens and small fake Kubernetes APIs."""

from __future__ import annotations

import base64
import json

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError

NOW = 1_800_000_000
HOUR = 3600
OURS = {'app.kubernetes.io/managed-by': 'dralab.workshop'}
# The kinds the fake API serves: (group, version path, resource, namespaced, verbs).
LIST_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']
SERVED = (
    ('', '/api/v1', 'pods', True, LIST_VERBS),
    ('', '/api/v1', 'replicationcontrollers', True, LIST_VERBS),
    ('', '/api/v1', 'serviceaccounts', True, LIST_VERBS),
    ('', '/api/v1', 'secrets', True, LIST_VERBS),
    ('', '/api/v1', 'configmaps', True, LIST_VERBS),
    ('', '/api/v1', 'services', True, ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch',
                                       'deletecollection']),
    ('', '/api/v1', 'resourcequotas', True, LIST_VERBS),
    ('', '/api/v1', 'events', True, LIST_VERBS),
    ('', '/api/v1', 'bindings', True, ['create']),
    ('', '/api/v1', 'pods/status', True, ['get', 'patch', 'update']),
    ('', '/api/v1', 'namespaces', False, LIST_VERBS),
    ('apps', '/apis/apps/v1', 'deployments', True, LIST_VERBS),
    ('apps', '/apis/apps/v1', 'statefulsets', True, LIST_VERBS),
    ('apps', '/apis/apps/v1', 'daemonsets', True, LIST_VERBS),
    ('apps', '/apis/apps/v1', 'replicasets', True, LIST_VERBS),
    ('batch', '/apis/batch/v1', 'jobs', True, LIST_VERBS),
    ('batch', '/apis/batch/v1', 'cronjobs', True, LIST_VERBS),
    ('events.k8s.io', '/apis/events.k8s.io/v1', 'events', True, LIST_VERBS),
    ('rbac.authorization.k8s.io', '/apis/rbac.authorization.k8s.io/v1', 'rolebindings', True, LIST_VERBS),
    ('resource.k8s.io', '/apis/resource.k8s.io/v1', 'resourceclaimtemplates', True, LIST_VERBS),
    ('resource.k8s.io', '/apis/resource.k8s.io/v1', 'resourceclaims', True, LIST_VERBS),
    ('resource.k8s.io', '/apis/resource.k8s.io/v1', 'deviceclasses', False, LIST_VERBS),
)
PATHS = {resource: '%s/%s' % (prefix, resource) for group, prefix, resource, namespaced, verbs in SERVED
         if namespaced and '/' not in resource and group != 'events.k8s.io'}
_UIDS = iter(range(1, 10 ** 9))


def discovery(path):
    """The API server's discovery documents for SERVED, or None for another path."""
    if path == '/apis':
        seen = []
        for group, prefix, *_rest in SERVED:
            if group and group not in [g for g, _p in seen]:
                seen.append((group, prefix))
        return {'groups': [{'name': g, 'preferredVersion': {'groupVersion': p[len('/apis/'):]}} for g, p in seen]}
    resources = [{'name': r, 'namespaced': n, 'verbs': v} for _g, p, r, n, v in SERVED if p == path]
    return {'resources': resources} if resources else None


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode('ascii')


def make_token(namespace='user01', sa='user01', sa_uid='sa-uid-1', secret='dralab-seat-token', secret_uid='secret-uid-1',
               iat=NOW, lifetime=8 * HOUR, extra=None):
    """A service account token as kube-apiserver issues it (the signature is not checked)."""
    claims = {
        'aud': ['https://kubernetes.default.svc.cluster.local'], 'iss': 'https://kubernetes.default.svc.cluster.local',
        'iat': iat, 'nbf': iat, 'exp': iat + lifetime, 'sub': 'system:serviceaccount:%s:%s' % (namespace, sa),
        'kubernetes.io': {'namespace': namespace, 'serviceaccount': {'name': sa, 'uid': sa_uid}},
    }
    if secret:
        claims['kubernetes.io']['secret'] = {'name': secret, 'uid': secret_uid}
    claims.update(extra or {})
    header = b64url(json.dumps({'alg': 'RS256', 'kid': 'k'}).encode())
    return '%s.%s.%s' % (header, b64url(json.dumps(claims).encode()), b64url(b'signature'))


class FakeTokenApi:
    """ServiceAccounts and Secrets per namespace; TokenRequest issues tokens bound to the Secret's uid."""

    def __init__(self, seats, issued_at=NOW):
        self.objects = {}
        self.requests = []
        self.issued_at = issued_at
        for seat in seats:
            self.objects['/api/v1/namespaces/%s/secrets/dralab-seat-token' % seat] = {
                'metadata': {'name': 'dralab-seat-token', 'uid': 'secret-%s-1' % seat}}
            self.objects['/api/v1/namespaces/%s/serviceaccounts/%s' % (seat, seat)] = {
                'metadata': {'name': seat, 'uid': 'sa-%s-1' % seat}}

    def get(self, path, missing_ok=False):
        if path not in self.objects:
            if missing_ok:
                return None
            raise K8sError('not found', status=404)
        return self.objects[path]

    def request(self, method, path, body=None, query=None):
        self.requests.append((method, path, body))
        assert method == 'POST' and path.endswith('/token')
        ns, sa = path.split('/')[4], path.split('/')[6]
        ref = body['spec']['boundObjectRef']
        assert ref['kind'] == 'Secret' and ref['apiVersion'] == 'v1'
        secret = self.objects['/api/v1/namespaces/%s/secrets/%s' % (ns, ref['name'])]
        assert ref['uid'] == secret['metadata']['uid']
        sa_uid = self.objects['/api/v1/namespaces/%s/serviceaccounts/%s' % (ns, sa)]['metadata']['uid']
        token = make_token(ns, sa, sa_uid, ref['name'], ref['uid'], iat=self.issued_at,
                           lifetime=body['spec']['expirationSeconds'])
        return {'kind': 'TokenRequest', 'status': {'token': token, 'expirationTimestamp': 'x'}}


class CappedTokenApi(FakeTokenApi):
    """An API server whose longest token (--service-account-max-token-expiration) is max_seconds."""

    def __init__(self, seats, max_seconds, issued_at=NOW):
        super().__init__(seats, issued_at)
        self.max_seconds = max_seconds

    def request(self, method, path, body=None, query=None):
        body['spec']['expirationSeconds'] = min(body['spec']['expirationSeconds'], self.max_seconds)
        return super().request(method, path, body, query)


def ns(name, labels):
    return {'metadata': {'name': name, 'labels': labels}}


def obj(namespace, name, terminating=False, **extra):
    meta = {'namespace': namespace, 'name': name, 'uid': 'uid-%d' % next(_UIDS)}
    if terminating:
        meta['deletionTimestamp'] = '2026-10-28T10:00:00Z'
        meta['finalizers'] = ['resource.kubernetes.io/delete-protection']
    item = {'metadata': meta}
    item.update(extra)
    return item


class FakeCleanupApi:
    """Namespaces filtered by label selector; per-kind cluster-wide lists; delete-collection empties a namespace."""

    def __init__(self, namespaces, items, page_size=2, deletions_take=0):
        self.namespaces = namespaces
        self.items = items  # kind -> list
        self.page_size = page_size
        self.calls = []
        self.pending = []  # deletions that finish after `deletions_take` more list rounds
        self.deletions_take = deletions_take
        self.objects = {}

    def _page(self, items, query):
        start = int(query.get('continue') or 0)
        page = items[start:start + self.page_size]
        meta = {}
        if start + self.page_size < len(items):
            meta['continue'] = str(start + self.page_size)
        return {'items': page, 'metadata': meta}

    def request(self, method, path, body=None, query=None, content_type=None):
        self.calls.append((method, path, dict(query or {}), body))
        query = query or {}
        if method == 'PATCH':
            return self._merge_patch(path, body, content_type)
        if method == 'GET' and path == '/api/v1/namespaces':
            selector = query.get('labelSelector')
            assert selector == 'app.kubernetes.io/managed-by=dralab.workshop,dralab.workshop/seat'
            matching = [n for n in self.namespaces
                        if n['metadata']['labels'].get('app.kubernetes.io/managed-by') == 'dralab.workshop'
                        and 'dralab.workshop/seat' in n['metadata']['labels']]
            return self._page(matching, query)
        if method == 'GET' and discovery(path) is not None:
            return discovery(path)
        if method == 'PUT':
            parts = path.split('/')
            kind = [k for k, p in PATHS.items() if p.endswith('/' + parts[-2])][0]
            for index, item in enumerate(self.items.get(kind, [])):
                if item['metadata']['namespace'] == parts[-3] and item['metadata']['name'] == parts[-1]:
                    self.items[kind][index] = body
            return body
        if method == 'GET':
            kind = [k for k, p in PATHS.items() if p == path][0]
            self._progress(kind)
            return self._page(self.items.get(kind, []), query)
        if method == 'DELETE' and path in self.objects:
            del self.objects[path]
            return {}
        if method == 'DELETE':
            parts = path.split('/')
            namespace, resource = parts[-2], parts[-1]
            kind = [k for k, p in PATHS.items() if p.endswith('/' + resource)][0]
            assert body['propagationPolicy'] == 'Background'
            kept = [term.split('!=')[1] for term in (query.get('fieldSelector') or '').split(',') if term]
            for item in self.items.get(kind, []):
                if item['metadata']['namespace'] == namespace and item['metadata']['name'] not in kept:
                    item['metadata']['deletionTimestamp'] = 'now'
            self.pending.append([kind, namespace, self.deletions_take, kept])
            self._progress(kind, listing=False)
            return {}
        raise AssertionError('unexpected call %s %s' % (method, path))

    def _merge_patch(self, path, body, content_type):
        """A JSON merge patch of a Namespace's annotations or a RoleBinding's subjects (404 for a missing one)."""
        assert content_type == 'application/merge-patch+json', content_type
        parts = path.split('/')
        if parts[-2] == 'namespaces':
            found = [n for n in self.namespaces if n['metadata']['name'] == parts[-1]]
            targets = [(found[0], body['metadata']['annotations'])] if found else []
            for target, annotations in targets:
                target['metadata'].setdefault('annotations', {}).update(annotations)
        else:
            assert parts[-2] == 'rolebindings' and set(body) == {'subjects'}, (path, body)
            targets = [i for i in self.items.get('rolebindings', [])
                       if i['metadata']['namespace'] == parts[-3] and i['metadata']['name'] == parts[-1]]
            for target in targets:
                target['subjects'] = body['subjects']
        if not targets:
            raise K8sError('%s not found' % path, status=404)
        return {}

    def _progress(self, kind, listing=True):
        """Deleted objects vanish after `deletions_take` list rounds, unless a finalizer holds them."""
        for entry in list(self.pending):
            if entry[0] != kind:
                continue
            if entry[2] <= 0:
                self.pending.remove(entry)
            elif listing:
                entry[2] -= 1
        waiting = {entry[1] for entry in self.pending if entry[0] == kind}
        self.items[kind] = [i for i in self.items.get(kind, [])
                            if not (i['metadata'].get('deletionTimestamp') == 'now' and not i['metadata'].get('finalizers')
                                    and i['metadata']['namespace'] not in waiting)]

    def get(self, path, missing_ok=False):
        if path in self.objects:
            return self.objects[path]
        if missing_ok:
            return None
        raise K8sError('not found', status=404)

    def deletes(self):
        return [(c[1], c[3]) for c in self.calls if c[0] == 'DELETE']


def no_sleep(_seconds):
    """The sleep of a cleaner whose waits take no time (the fake API finishes deletions by list rounds)."""


def lab():
    namespaces = [
        ns('user01', dict(OURS, **{'dralab.workshop/seat': 'user01'})),
        ns('user02', dict(OURS, **{'dralab.workshop/seat': 'user02'})),
        ns('user03', dict(OURS, **{'dralab.workshop/seat': 'user03'})),
        ns('user99', {'dralab.workshop/seat': 'user99'}),  # looks like a seat, is not ours
        ns('kube-system', {}),
    ]
    items = {
        'deployments': [obj('user01', 'web'), obj('user99', 'keep')],
        'replicasets': [obj('user01', 'web-1')],
        'pods': [obj('user01', 'web-1-a'), obj('user01', 'web-1-b'), obj('user02', 'solo'),
                 obj('kube-system', 'coredns'), obj('user99', 'keep')],
        'resourceclaims': [obj('user02', 'gpu'), obj('demo', 'instructor-gpu')],
        'resourceclaimtemplates': [obj('user03', 'single-gpu')],
    }
    return FakeCleanupApi(namespaces, items)
