# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Return workshop seats to a clean state: delete their workloads and DRA claims.

Only namespaces that carry this collection's labels
(app.kubernetes.io/managed-by=dralab.workshop and dralab.workshop/seat) are
touched, whatever their names; namespaces themselves are never deleted. Each
kind is listed once cluster-wide, and a namespace's objects of one kind are
removed with one delete-collection call, only when it has some, so a clean lab
reports no change.
"""

from __future__ import annotations

import time

from ansible_collections.dralab.workshop.plugins.module_utils.seat_model import (
    MANAGED_BY_LABEL,
    MANAGED_BY,
    SEAT_LABEL,
    SEAT_NAMESPACE_SELECTOR,
    TOKEN_SECRET_NAME,
    is_managed,
)

# Deletion order: controllers before the pods they would recreate, pods before
# the claims they hold. (API path prefix, resource) per kind.
KINDS = (
    ('cronjobs', '/apis/batch/v1', 'cronjobs'),
    ('jobs', '/apis/batch/v1', 'jobs'),
    ('deployments', '/apis/apps/v1', 'deployments'),
    ('statefulsets', '/apis/apps/v1', 'statefulsets'),
    ('daemonsets', '/apis/apps/v1', 'daemonsets'),
    ('replicasets', '/apis/apps/v1', 'replicasets'),
    ('replicationcontrollers', '/api/v1', 'replicationcontrollers'),
    ('pods', '/api/v1', 'pods'),
    ('resourceclaimtemplates', '/apis/resource.k8s.io/v1', 'resourceclaimtemplates'),
    ('resourceclaims', '/apis/resource.k8s.io/v1', 'resourceclaims'),
)
KIND_NAMES = tuple(kind[0] for kind in KINDS)
DEFAULT_KINDS = KIND_NAMES
_PATHS = dict((name, (prefix, resource)) for name, prefix, resource in KINDS)


def list_all(client, path, label_selector=None):
    """Every item of a list endpoint, following continue tokens, with an optional label selector."""
    items = []
    query = {'limit': 500}
    if label_selector:
        query['labelSelector'] = label_selector
    while True:
        page = client.request('GET', path, query=dict(query)) or {}
        items.extend(page.get('items') or [])
        token = (page.get('metadata') or {}).get('continue')
        if not token:
            return items
        query['continue'] = token


def ordered_kinds(kinds):
    """The requested kinds in deletion order; raises ValueError on an unknown kind."""
    unknown = sorted(set(kinds) - set(KIND_NAMES))
    if unknown:
        raise ValueError('unknown kinds %s (known: %s)' % (', '.join(unknown), ', '.join(KIND_NAMES)))
    return [name for name in KIND_NAMES if name in kinds]


def seat_namespaces(namespace_objects, only=None):
    """Names of the seat namespaces (our labels), optionally restricted to the names in only."""
    names = []
    for ns in namespace_objects:
        meta = ns.get('metadata') or {}
        labels = meta.get('labels') or {}
        if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or SEAT_LABEL not in labels:
            continue
        if only and meta.get('name') not in only:
            continue
        names.append(meta.get('name'))
    return sorted(names)


def split_items(items, namespaces):
    """Group items of seat namespaces: ({ns: [live names]}, {ns: [terminating names]})."""
    wanted = set(namespaces)
    live, terminating = {}, {}
    for item in items:
        meta = item.get('metadata') or {}
        ns = meta.get('namespace')
        if ns not in wanted:
            continue
        target = terminating if meta.get('deletionTimestamp') else live
        target.setdefault(ns, []).append(meta.get('name'))
    for group in (live, terminating):
        for names in group.values():
            names.sort()
    return live, terminating


def describe(kind, item):
    """One line on an object that is still there, with what keeps it."""
    meta = item.get('metadata') or {}
    text = '%s %s/%s' % (kind[:-1], meta.get('namespace'), meta.get('name'))
    if meta.get('deletionTimestamp'):
        text += ' (terminating since %s' % meta['deletionTimestamp']
        if meta.get('finalizers'):
            text += ', finalizers %s' % ', '.join(meta['finalizers'])
        text += ')'
    if kind == 'pods':
        spec = item.get('spec') or {}
        status = item.get('status') or {}
        text += ' phase %s on node %s' % (status.get('phase') or 'unknown', spec.get('nodeName') or 'none')
    if kind == 'resourceclaims':
        status = item.get('status') or {}
        results = ((status.get('allocation') or {}).get('devices') or {}).get('results') or []
        if results:
            text += ' allocated %s' % ', '.join('%s/%s' % (r.get('pool'), r.get('device')) for r in results)
        reserved = status.get('reservedFor') or []
        if reserved:
            text += ' reserved for %s' % ', '.join('%s %s' % (r.get('resource'), r.get('name')) for r in reserved)
    return text


class SeatCleaner:
    """Deletes the workloads and claims of the seat namespaces through a KubeClient-like client."""

    def __init__(self, client, sleep=time.sleep, clock=time.time):
        self.client = client
        self.sleep = sleep
        self.clock = clock

    def namespaces(self, only=None):
        return seat_namespaces(list_all(self.client, '/api/v1/namespaces', SEAT_NAMESPACE_SELECTOR), only)

    def listing(self, kind):
        prefix, resource = _PATHS[kind]
        return list_all(self.client, '%s/%s' % (prefix, resource))

    def delete_collection(self, kind, namespace, grace_period_seconds=None):
        prefix, resource = _PATHS[kind]
        body = {'apiVersion': 'v1', 'kind': 'DeleteOptions', 'propagationPolicy': 'Background'}
        if grace_period_seconds is not None:
            body['gracePeriodSeconds'] = int(grace_period_seconds)
        self.client.request('DELETE', '%s/namespaces/%s/%s' % (prefix, namespace, resource), body=body)

    def remaining(self, kinds, namespaces):
        """Lines about every object of the kinds still present in the namespaces."""
        lines = []
        wanted = set(namespaces)
        for kind in kinds:
            for item in self.listing(kind):
                if (item.get('metadata') or {}).get('namespace') in wanted:
                    lines.append(describe(kind, item))
        return lines

    def delete_credentials(self, namespaces, check_mode=False):
        """Delete each seat's token Secret and ServiceAccount (ours only): every token of the seat dies."""
        deleted = []
        for ns in namespaces:
            for kind, path in (('Secret', '/api/v1/namespaces/%s/secrets/%s' % (ns, TOKEN_SECRET_NAME)),
                               ('ServiceAccount', '/api/v1/namespaces/%s/serviceaccounts/%s' % (ns, ns))):
                obj = self.client.get(path, missing_ok=True)
                if obj is None or not is_managed(obj):
                    continue
                deleted.append('%s %s/%s' % (kind, ns, (obj.get('metadata') or {}).get('name')))
                if not check_mode:
                    try:
                        self.client.request('DELETE', path)
                    except Exception as exc:  # gone in between is fine
                        if getattr(exc, 'status', None) != 404:
                            raise
        return deleted

    def run(self, kinds=DEFAULT_KINDS, only=None, check_mode=False, wait=True, wait_timeout=300,
            grace_period_seconds=None, rotate_credentials=False, poll_interval=2):
        """Delete; optionally wait until nothing of the kinds is left. Returns a result dict.

        Raises TimeoutError with the list of what is left when waiting times out.
        """
        kinds = ordered_kinds(kinds)
        namespaces = self.namespaces(only)
        deleted = {}
        terminating = {}
        for kind in kinds:
            if not namespaces:
                break
            live, dying = split_items(self.listing(kind), namespaces)
            for ns in sorted(live):
                deleted.setdefault(kind, []).extend('%s/%s' % (ns, name) for name in live[ns])
                if not check_mode:
                    self.delete_collection(kind, ns, grace_period_seconds)
            for ns in sorted(dying):
                terminating.setdefault(kind, []).extend('%s/%s' % (ns, name) for name in dying[ns])
        credentials = self.delete_credentials(namespaces, check_mode) if rotate_credentials else []
        result = {
            'namespaces': namespaces,
            'deleted': deleted,
            'deleted_count': sum(len(names) for names in deleted.values()),
            'terminating': terminating,
            'credentials_deleted': credentials,
            'changed': bool(deleted) or bool(credentials),
            'remaining': [],
        }
        if wait and not check_mode and namespaces and (deleted or terminating):
            deadline = self.clock() + wait_timeout
            while True:
                remaining = self.remaining(kinds, namespaces)
                if not remaining:
                    break
                if self.clock() >= deadline:
                    result['remaining'] = remaining
                    raise SeatCleanupTimeout(result)
                self.sleep(poll_interval)
        return result


class SeatCleanupTimeout(Exception):
    def __init__(self, result):
        self.result = result
        lines = result['remaining']
        shown = lines[:20]
        more = '' if len(lines) <= 20 else ' ... and %d more' % (len(lines) - 20)
        super().__init__(
            '%d object(s) are still present in the seat namespaces after waiting: %s%s. Pods stuck terminating '
            'usually sit on a node that is down (kubectl delete pod --force --grace-period=0), and a claim stays '
            'until no pod uses it.' % (len(lines), '; '.join(shown), more))
