# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Return workshop seats to a clean state: delete everything a seat made in its namespace.

Seat namespaces are found by the Namespace's own labels
(app.kubernetes.io/managed-by=dralab.workshop and dralab.workshop/seat), which
a seat cannot change; namespaces themselves are never deleted. Inside them,
every namespaced kind the API server serves (API discovery) is cleared, except
the instructor's baseline objects, known by kind and name
(seat_model.baseline_names), never by labels a seat could remove. With
credential rotation, the seat's ServiceAccounts (the default one too) and
Secrets go as well, so every token minted in the namespace dies. Before
anything is deleted, the rotation raises the namespace's credential
generation and points the seat's RoleBinding at the next account
(seat_model.account_name): kube-apiserver keeps accepting a token it accepted
in the last 10 s after its Secret is gone, and such a token must not find a
binding that lets it write into the namespace being cleared.

Each kind is listed once cluster-wide (the kinds in parallel), and a
namespace's objects of one kind are removed with one delete-collection call (a
field selector keeps the baseline), only when it has some, so a clean lab
reports no change; the namespaces of one kind are cleared in parallel.
Controllers go before pods, pods before the claims they hold. The wait then
lists only the kinds that still hold deleted objects, first after a fraction
of a second, then less and less often (up to poll_interval).

A finalizer a seat put on its objects cannot block the reset: objects still
terminating after finalizer_grace seconds lose their finalizers. Whatever is
still left when the wait times out is reported per seat; the caller decides
whether that fails (after re-issuing credentials, so nobody is locked out).
"""

from __future__ import annotations

import time

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.apply import FIELD_MANAGER
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, list_pages, parallel_map
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import (
    GENERATION_ANNOTATION,
    ROLE_BINDING_NAME,
    SEAT_NAMESPACE_SELECTOR,
    account_subject,
    baseline_names,
    credential_generations,
    seat_of,
)

# Deleted first, in this order: controllers before the pods they would recreate,
# pods before the claims they hold. Every other kind follows, by name.
FIRST_KINDS = (
    'cronjobs', 'jobs', 'deployments', 'statefulsets', 'daemonsets', 'replicasets', 'replicationcontrollers',
    'pods', 'resourceclaimtemplates', 'resourceclaims',
)
# Written by the cluster about the seat's objects, not by the seat; they expire by themselves.
SKIPPED = frozenset([('', 'events'), ('events.k8s.io', 'events')])
# The instructor's credentials in a seat namespace (kept unless rotating): reported apart.
CREDENTIAL_KINDS = ('serviceaccounts', 'secrets')


class Kind:
    """A namespaced resource the API serves: its name here, list path prefix and plural resource name."""

    def __init__(self, name, prefix, resource, kind=None):
        self.name, self.prefix, self.resource, self.kind = name, prefix, resource, kind

    @property
    def api_version(self):
        return self.prefix[len('/apis/'):] if self.prefix.startswith('/apis/') else self.prefix[len('/api/'):]

    def path(self, namespace=None):
        if namespace is None:
            return '%s/%s' % (self.prefix, self.resource)
        return '%s/namespaces/%s/%s' % (self.prefix, namespace, self.resource)


def discovered_kinds(client):
    """Every namespaced kind that can be listed and delete-collected, in deletion order (FIRST_KINDS first).

    A kind is named by its plural resource name; a name served by two groups is
    qualified with the group the second time (for example ``ingresses.extensions``).
    """
    sources = [('', '/api/v1', client.request('GET', '/api/v1') or {})]
    groups = (client.request('GET', '/apis') or {}).get('groups') or []
    for group in groups:
        preferred = (group.get('preferredVersion') or {}).get('groupVersion')
        if preferred:
            sources.append((group.get('name') or '', '/apis/' + preferred,
                            client.request('GET', '/apis/' + preferred) or {}))
    kinds = {}
    for group, prefix, listing in sources:
        for resource in listing.get('resources') or []:
            name = resource.get('name') or ''
            verbs = set(resource.get('verbs') or [])
            if '/' in name or not resource.get('namespaced') or (group, name) in SKIPPED:
                continue
            if not {'list', 'deletecollection'} <= verbs:
                continue
            key = name if name not in kinds else '%s.%s' % (name, group)
            kinds[key] = Kind(key, prefix, name, resource.get('kind'))
    first = [kinds[name] for name in FIRST_KINDS if name in kinds]
    rest = [kinds[name] for name in sorted(kinds) if name not in FIRST_KINDS]
    return first + rest


def list_all(client, path, label_selector=None):
    """Every item of a list endpoint, with an optional label selector (k8s_client.list_pages)."""
    return list_pages(client, path, {'labelSelector': label_selector} if label_selector else None)


def select_kinds(available, wanted=None):
    """The kinds to clear: every available one, or the ones named in wanted (in deletion order).

    Raises ValueError naming kinds the API server does not serve.
    """
    if not wanted:
        return list(available)
    names = [kind.name for kind in available]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        raise ValueError('kinds: the API server serves no namespaced kind %s (it serves: %s)'
                         % (', '.join(unknown), ', '.join(names)))
    return [kind for kind in available if kind.name in wanted]


def seat_namespaces(namespace_objects, only=None):
    """Names of the seat namespaces (the Namespace's labels), restricted to only when given.

    Raises ValueError naming the seats of only that have no seat namespace.
    """
    names = sorted(ns['metadata']['name'] for ns in namespace_objects if seat_of(ns) is not None)
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise ValueError('seats: %s %s no seat namespace (seats: %s)'
                             % (', '.join(unknown), 'has' if len(unknown) == 1 else 'have',
                                ', '.join(names) or 'none'))
        names = [name for name in names if name in only]
    return names


def kept_names(kind, namespace, rotate_credentials, generation=0):
    """Names of the baseline objects of this kind that the reset keeps in a seat namespace."""
    return baseline_names(namespace, with_credentials=not rotate_credentials, generation=generation).get(
        kind.name, set())


def is_credential(kind, namespace, name, generation=0):
    """Whether an object is the instructor's credential (ServiceAccount, token Secret) of a seat."""
    return kind.name in CREDENTIAL_KINDS and name in baseline_names(namespace, generation=generation).get(
        kind.name, set())


def describe(kind, item):
    """One line on an object that is still there, with what keeps it."""
    meta = item.get('metadata') or {}
    text = '%s %s/%s' % (kind.name, meta.get('namespace'), meta.get('name'))
    if meta.get('deletionTimestamp'):
        text += ' (terminating since %s' % meta['deletionTimestamp']
        if meta.get('finalizers'):
            text += ', finalizers %s' % ', '.join(meta['finalizers'])
        text += ')'
    if kind.name == 'pods':
        spec = item.get('spec') or {}
        status = item.get('status') or {}
        text += ' phase %s on node %s' % (status.get('phase') or 'unknown', spec.get('nodeName') or 'none')
    if kind.name == 'resourceclaims':
        status = item.get('status') or {}
        results = ((status.get('allocation') or {}).get('devices') or {}).get('results') or []
        if results:
            text += ' allocated %s' % ', '.join('%s/%s' % (r.get('pool'), r.get('device')) for r in results)
        reserved = status.get('reservedFor') or []
        if reserved:
            text += ' reserved for %s' % ', '.join('%s %s' % (r.get('resource'), r.get('name')) for r in reserved)
    return text


class SeatCleaner:
    """Clears the seat namespaces through a KubeClient-like client (request, get)."""

    def __init__(self, client, sleep=time.sleep, clock=time.time):
        self.client = client
        self.sleep = sleep
        self.clock = clock

    def namespaces(self, only=None):
        """(names of the seat namespaces to clear, {name: credential generation} of every seat namespace)."""
        objects = list_all(self.client, '/api/v1/namespaces', SEAT_NAMESPACE_SELECTOR)
        return seat_namespaces(objects, only), credential_generations(objects)

    def next_generation(self, namespace, generation):
        """Raise the namespace's credential generation, then bind the seat's edit role to that generation's account
        (the tokens of the previous account keep no right in the namespace, cached or not)."""
        self.client.request('PATCH', '/api/v1/namespaces/%s' % namespace, query={'fieldManager': FIELD_MANAGER},
                            body={'metadata': {'annotations': {GENERATION_ANNOTATION: str(generation)}}},
                            content_type='application/merge-patch+json')
        try:
            self.client.request(
                'PATCH', '/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/%s' % (namespace, ROLE_BINDING_NAME),
                query={'fieldManager': FIELD_MANAGER}, body={'subjects': [account_subject(namespace, generation)]},
                content_type='application/merge-patch+json')
        except K8sError as exc:
            if exc.status != 404:  # no binding, no rights: the seat objects bind the new account
                raise

    def leftovers(self, kind, namespaces, rotate_credentials, generations=None):
        """Objects of a kind in the namespaces that the reset removes (not the kept baseline)."""
        wanted = set(namespaces)
        generations = generations or {}
        found = []
        for item in list_all(self.client, kind.path()):
            meta = item.get('metadata') or {}
            ns = meta.get('namespace')
            if ns in wanted and meta.get('name') not in kept_names(kind, ns, rotate_credentials, generations.get(ns, 0)):
                found.append(item)
        return found

    def delete_collection(self, kind, namespace, keep, grace_period_seconds=None):
        body = {'apiVersion': 'v1', 'kind': 'DeleteOptions', 'propagationPolicy': 'Background'}
        if grace_period_seconds is not None:
            body['gracePeriodSeconds'] = int(grace_period_seconds)
        query = {}
        if keep:
            query['fieldSelector'] = ','.join('metadata.name!=%s' % name for name in sorted(keep))
        self.client.request('DELETE', kind.path(namespace), body=body, query=query or None)

    def remove_finalizers(self, kind, item):
        """Drop every finalizer of a terminating object (re-read once on a conflict). Returns a line or None."""
        meta = item.get('metadata') or {}
        path = '%s/%s' % (kind.path(meta.get('namespace')), meta.get('name'))
        for _attempt in range(3):
            if not meta.get('finalizers'):
                return None
            item = dict(item, metadata=dict(meta, finalizers=[]), apiVersion=kind.api_version)
            if kind.kind:
                item['kind'] = kind.kind
            try:
                self.client.request('PUT', path, body=item)
                return '%s %s/%s: %s' % (kind.name, meta.get('namespace'), meta.get('name'),
                                         ', '.join(meta['finalizers']))
            except Exception as exc:
                status = getattr(exc, 'status', None)
                if status == 404:
                    return None
                if status != 409:
                    raise
            item = self.client.get(path, missing_ok=True)
            if item is None:
                return None
            meta = item.get('metadata') or {}
        return None

    def run(self, kinds=None, only=None, check_mode=False, wait=True, wait_timeout=300, grace_period_seconds=None,
            rotate_credentials=False, finalizer_grace=15, poll_interval=2):
        """Delete, then optionally wait until nothing of it is left. Returns a result dict.

        Never raises because objects remain: result['remaining'] lists them and
        result['failed_seats'] names their seats.
        """
        namespaces, generations = self.namespaces(only)
        selected = select_kinds(discovered_kinds(self.client), kinds)
        deleted, terminating, credentials = {}, {}, []
        touched, uids = [], set()
        if rotate_credentials and not check_mode:
            parallel_map(lambda ns: self.next_generation(ns, generations.get(ns, 0) + 1), namespaces)
        found = parallel_map(lambda kind: self.leftovers(kind, namespaces, rotate_credentials, generations),
                             selected if namespaces else [])
        for kind, items in zip(selected, found):
            live = {}
            for item in items:
                meta = item['metadata']
                uids.add(meta.get('uid'))
                line = '%s/%s' % (meta['namespace'], meta['name'])
                if meta.get('deletionTimestamp'):
                    terminating.setdefault(kind.name, []).append(line)
                    continue
                live.setdefault(meta['namespace'], []).append(meta['name'])
                if is_credential(kind, meta['namespace'], meta['name'], generations.get(meta['namespace'], 0)):
                    credentials.append('%s %s' % (kind.name, line))
                else:
                    deleted.setdefault(kind.name, []).append(line)
            if not check_mode:
                parallel_map(lambda ns, kind=kind: self.delete_collection(
                    kind, ns, kept_names(kind, ns, rotate_credentials, generations.get(ns, 0)), grace_period_seconds),
                    sorted(live))
            if live or kind.name in terminating:
                touched.append(kind)
        for group in (deleted, terminating):
            for names in group.values():
                names.sort()
        result = {
            'namespaces': namespaces,
            # Every seat namespace, also those not cleared this time (only): where seat claims may live.
            'seat_namespaces': sorted(generations),
            'deleted': deleted,
            'deleted_count': sum(len(names) for names in deleted.values()),
            'terminating': terminating,
            'credentials_deleted': sorted(credentials),
            'finalizers_removed': [],
            'changed': bool(deleted) or bool(credentials),
            'remaining': [],
            'failed_seats': [],
            'remaining_message': '',
        }
        if rotate_credentials:
            result['credential_generations'] = dict((ns, generations.get(ns, 0) + 1) for ns in namespaces)
            result['changed'] = result['changed'] or bool(namespaces)
        if wait and not check_mode and touched:
            self._wait(result, touched, namespaces, uids, rotate_credentials, wait_timeout, finalizer_grace,
                       poll_interval, generations)
        return result

    def _wait(self, result, kinds, namespaces, uids, rotate_credentials, wait_timeout, finalizer_grace, poll_interval,
              generations):
        """Wait until the objects deleted (by uid: not ones the cluster recreates, like ServiceAccount default) are gone.

        Only the kinds that still held deleted objects are listed again (in parallel); the pause between
        two looks grows from poll_interval / 10 to poll_interval.
        """
        started = self.clock()
        stripped = False
        pause = poll_interval / 10.0
        while True:
            found = parallel_map(lambda kind: self.leftovers(kind, namespaces, rotate_credentials, generations), kinds)
            left = [(kind, item) for kind, items in zip(kinds, found) for item in items
                    if (item.get('metadata') or {}).get('uid') in uids]
            if not left:
                return
            kinds = [kind for kind in kinds if any(entry[0] is kind for entry in left)]
            now = self.clock()
            if not stripped and now - started >= finalizer_grace:
                # A seat's finalizer must not hold the handover: whatever is still terminating loses them.
                stripped = True
                for kind, item in left:
                    if (item.get('metadata') or {}).get('deletionTimestamp'):
                        line = self.remove_finalizers(kind, item)
                        if line:
                            result['finalizers_removed'].append(line)
                            result['changed'] = True
                continue
            if now - started >= wait_timeout:
                result['remaining'] = [describe(kind, item) for kind, item in left]
                result['failed_seats'] = sorted(set(item['metadata']['namespace'] for _kind, item in left))
                result['remaining_message'] = remaining_message(result)
                return
            self.sleep(pause)
            pause = min(poll_interval, pause * 1.5)


def remaining_message(result):
    """The error for objects a reset could not remove, naming the seats."""
    lines = result['remaining']
    shown = lines[:20]
    more = '' if len(lines) <= 20 else ' ... and %d more' % (len(lines) - 20)
    return ('%d object(s) are still present in the seat namespace(s) %s after waiting: %s%s. Pods stuck terminating '
            'usually sit on a node that is down (kubectl delete pod --force --grace-period=0), and a claim stays '
            'until no pod uses it.' % (len(lines), ', '.join(result['failed_seats']), '; '.join(shown), more))
