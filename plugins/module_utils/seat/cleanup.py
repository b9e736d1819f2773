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
Secrets go as well, whoever made them, so every token minted in the namespace
dies. Before anything is deleted, the rotation points the seat's RoleBinding at
a new account whose name nobody could know before (seat_model.
rotated_account_name, with a random part), and only then records that name and
the next credential generation on the Namespace: from the first request on, no
identity the seat had or prepared (a ServiceAccount named like the next
generation, a token for it) has a right in the namespace, and kube-apiserver's
10 s cache of accepted tokens maps only to names no binding grants anything.

Each kind is listed once cluster-wide (the kinds in parallel), and a
namespace's objects of one kind are removed with one delete-collection call (a
field selector keeps the baseline), only when it has some, so a clean lab
reports no change; the namespaces of one kind are cleared in parallel.
With wait, it runs in two phases: the workloads (controllers before the pods
they would recreate, then the pods), and with rotation the credentials, are
deleted and waited for until no pod is left in the namespace, and only then
the rest, claims included: a claim is never released while a pod that may use
its device still exists. The two phases can also run apart (stage): 'start'
rotates and deletes the first phase's objects without waiting, so new
credentials can be issued while the pods stop; 'finish' waits for what is
still terminating (it knows it by its deletionTimestamp: the new credentials
have none, and it never deletes a credential), deletes the rest and waits. Pods are
deleted with grace_period_seconds, which cuts a pod's own longer
terminationGracePeriodSeconds; a pod still there FORCE_AFTER seconds after
that is deleted again with grace 0 (a node that does not answer: its kubelet
never confirms). The waits list only the kinds that still hold deleted
objects, first after a fraction of a second, then less and less often (up to
poll_interval).

A finalizer a seat put on its objects cannot block the reset: objects still
terminating finalizer_grace seconds into their phase lose their finalizers,
except a claim reserved for a pod that still exists. Whatever is still left
when the wait times out is reported per seat (claims of a namespace whose pods
remain are then not deleted at all); the caller decides whether that fails
(after re-issuing credentials, so nobody is locked out).
"""

from __future__ import annotations

import secrets
import time

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.apply import FIELD_MANAGER
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, list_pages, parallel_map
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.discovery import served_resources
from ansible_collections.dralab.workshop.plugins.module_utils.seat.bounds import FORCE_AFTER
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import (
    ACCOUNT_ANNOTATION,
    GENERATION_ANNOTATION,
    ROLE_BINDING_NAME,
    SEAT_NAMESPACE_SELECTOR,
    account_subject,
    baseline_names,
    credential_accounts,
    credential_generations,
    rotated_account_name,
    seat_of,
)

# The workloads, deleted first and waited for (with wait) before anything else, in this order: controllers before
# the pods they would recreate.
WORKLOAD_KINDS = (
    'cronjobs', 'jobs', 'deployments', 'statefulsets', 'daemonsets', 'replicasets', 'replicationcontrollers', 'pods',
)
# Then, first, the claims the pods held; every other kind follows, by name.
FIRST_KINDS = WORKLOAD_KINDS + ('resourceclaimtemplates', 'resourceclaims')
# Written by the cluster about the seat's objects, not by the seat; they expire by themselves.
SKIPPED = frozenset([('', 'events'), ('events.k8s.io', 'events')])
# The instructor's credentials in a seat namespace (kept unless rotating): reported apart.
CREDENTIAL_KINDS = ('serviceaccounts', 'secrets')
# SeatCleaner.run's stages: both phases, or the first without waiting ('start') and the rest after it ('finish').
STAGES = ('all', 'start', 'finish')


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


def discovered_kinds(client, resources=None):
    """Every namespaced kind that can be listed and delete-collected, in deletion order (FIRST_KINDS first).

    A kind is named by its plural resource name; a name served by two groups is
    qualified with the group the second time (for example ``ingresses.extensions``).
    resources: the discovery (k8s/discovery.py served_resources), read when not given.
    """
    kinds = {}
    for resource in served_resources(client) if resources is None else resources:
        name = resource.name
        if '/' in name or not resource.namespaced or (resource.group, name) in SKIPPED:
            continue
        if not {'list', 'deletecollection'} <= resource.verbs:
            continue
        key = name if name not in kinds else '%s.%s' % (name, resource.group)
        kinds[key] = Kind(key, resource.prefix, name, resource.kind)
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


def kept_names(kind, namespace, rotate_credentials, account=None):
    """Names of the baseline objects of this kind that the reset keeps in a seat namespace (account: the seat's
    recorded ServiceAccount)."""
    return baseline_names(namespace, with_credentials=not rotate_credentials, account=account).get(kind.name, set())


def is_credential(kind, namespace, name, account=None):
    """Whether an object is the instructor's credential (ServiceAccount, token Secret) of a seat."""
    return kind.name in CREDENTIAL_KINDS and name in baseline_names(namespace, account=account).get(kind.name, set())


def reserved_pods(claim):
    """{(name, uid)} of the pods a claim object is reserved for."""
    return set((entry.get('name'), entry.get('uid')) for entry in ((claim.get('status') or {}).get('reservedFor') or [])
               if entry.get('resource') == 'pods')


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
    """Clears the seat namespaces through a KubeClient-like client (request, get).

    nonce: the random part of a rotated account name (default: 32 random bits from the secrets module).
    """

    def __init__(self, client, sleep=time.sleep, clock=time.time, nonce=None):
        self.client = client
        self.sleep = sleep
        self.clock = clock
        self.nonce = nonce or (lambda: secrets.token_hex(4))

    def namespaces(self, only=None):
        """(names of the seat namespaces to clear, {name: credential generation}, {name: recorded account}) of every
        seat namespace."""
        objects = list_all(self.client, '/api/v1/namespaces', SEAT_NAMESPACE_SELECTOR)
        return seat_namespaces(objects, only), credential_generations(objects), credential_accounts(objects)

    def next_generation(self, namespace, generation):
        """Bind the seat's edit role to a new account nobody can have prepared, then record it and the generation on
        the Namespace (the seat reads its Namespace while it has rights: by then it has none). Returns the account."""
        account = rotated_account_name(namespace, generation, self.nonce())
        try:
            self.client.request(
                'PATCH', '/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/%s' % (namespace, ROLE_BINDING_NAME),
                query={'fieldManager': FIELD_MANAGER}, body={'subjects': [account_subject(namespace, account)]},
                content_type='application/merge-patch+json')
        except K8sError as exc:
            if exc.status != 404:  # no binding, no rights: the seat objects bind the new account
                raise
        self.client.request('PATCH', '/api/v1/namespaces/%s' % namespace, query={'fieldManager': FIELD_MANAGER},
                            body={'metadata': {'annotations': {GENERATION_ANNOTATION: str(generation),
                                                               ACCOUNT_ANNOTATION: account}}},
                            content_type='application/merge-patch+json')
        return account

    def leftovers(self, kind, namespaces, rotate_credentials, accounts=None):
        """Objects of a kind in the namespaces that the reset removes (not the kept baseline)."""
        wanted = set(namespaces)
        accounts = accounts or {}
        found = []
        for item in list_all(self.client, kind.path()):
            meta = item.get('metadata') or {}
            ns = meta.get('namespace')
            if ns in wanted and meta.get('name') not in kept_names(kind, ns, rotate_credentials, accounts.get(ns)):
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
            rotate_credentials=False, finalizer_grace=15, poll_interval=2, stage='all'):
        """Delete, then optionally wait until nothing of it is left. Returns a result dict.

        stage: 'all' (both phases), 'start' (rotate, delete the first phase, no wait) or 'finish' (after a start:
        wait for the first phase, then delete the rest and wait; it rotates nothing and deletes no credential).
        Never raises because objects remain: result['remaining'] lists them and
        result['failed_seats'] names their seats.
        """
        if stage not in STAGES:
            raise ValueError('stage: %r is none of %s' % (stage, ', '.join(STAGES)))
        started = self.clock()
        namespaces, generations, accounts = self.namespaces(only)
        selected = select_kinds(discovered_kinds(self.client), kinds)
        rotating = rotate_credentials and stage != 'finish'
        if rotating and not check_mode:
            # (accounts stay the recorded ones: with rotation no ServiceAccount is kept, and the old one is a
            # credential the result names.)
            parallel_map(lambda ns: self.next_generation(ns, generations.get(ns, 0) + 1), namespaces)
        found = parallel_map(lambda kind: self.leftovers(kind, namespaces, rotate_credentials, accounts),
                             selected if namespaces else [])
        state = _State(rotate_credentials, accounts, grace_period_seconds)
        listed = list(zip(selected, found))
        result = {
            'namespaces': namespaces,
            # Every seat namespace, also those not cleared this time (only): where seat claims may live.
            'seat_namespaces': sorted(generations),
            'deleted': {}, 'terminating': {}, 'credentials_deleted': [], 'finalizers_removed': [], 'forced': [],
            'remaining': [], 'failed_seats': [], 'remaining_message': '',
        }
        # Two phases: the workloads (and with rotation the credentials) until no pod is left, then the rest (claims
        # included), each waited for.
        first_kinds = WORKLOAD_KINDS + (CREDENTIAL_KINDS if rotate_credentials else ())
        first = [entry for entry in listed if entry[0].name in first_kinds]
        rest = [entry for entry in listed if entry[0].name not in first_kinds]
        if stage == 'finish':
            # The credentials there now without a deletionTimestamp are the new ones: only the old are waited for.
            first = [(kind, items if kind.name not in CREDENTIAL_KINDS
                      else [item for item in items if (item.get('metadata') or {}).get('deletionTimestamp')])
                     for kind, items in first]
        if stage == 'start':
            phases, waiting = [first], False
        elif check_mode:
            phases, waiting = [listed if stage == 'all' else rest], False
        elif stage == 'finish' or wait:
            phases, waiting = [first, rest], True
        else:
            phases, waiting = [listed], False
        deadline = started + wait_timeout
        for number, phase in enumerate(phases):
            held = set()
            if number == 1:
                # A namespace whose pods outlived the wait keeps its claims: a pod may still use their devices.
                held = set(item['metadata']['namespace'] for _kind, item in state.left if _kind.name == 'pods')
            touched = self._delete(phase, state, result, check_mode, held)
            if waiting and touched:
                state.left += self._wait(result, touched, namespaces, state, deadline, finalizer_grace,
                                         poll_interval, pods_phase=(number == 0))
        if stage == 'start' and not check_mode:
            # The new credentials, issued before the finish, take the old ones' names (the token Secret): no
            # finalizer a seat set may keep an old one there.
            for kind, items in first:
                if kind.name not in CREDENTIAL_KINDS:
                    continue
                for item in items:
                    line = self.remove_finalizers(kind, item)
                    if line:
                        result['finalizers_removed'].append(line)
        for group in (result['deleted'], result['terminating']):
            for names in group.values():
                names.sort()
        result['deleted_count'] = sum(len(names) for names in result['deleted'].values())
        result['credentials_deleted'].sort()
        result['changed'] = bool(result['deleted'] or result['credentials_deleted'] or result['finalizers_removed']
                                 or result['forced'])
        if rotating:
            result['credential_generations'] = dict((ns, generations.get(ns, 0) + 1) for ns in namespaces)
            result['changed'] = result['changed'] or bool(namespaces)
        if state.left:
            result['remaining'] = [describe(kind, item) for kind, item in state.left]
            result['failed_seats'] = sorted(set(item['metadata']['namespace'] for _kind, item in state.left))
            result['remaining_message'] = remaining_message(result)
        return result

    def _delete(self, listed, state, result, check_mode, held):
        """Delete the listed leftovers of each kind (one delete-collection per namespace), in order; the claims of
        the held namespaces stay (reported as remaining). Returns the kinds that had any."""
        touched = []
        for kind, items in listed:
            live = {}
            for item in items:
                meta = item['metadata']
                if kind.name == 'resourceclaims' and meta['namespace'] in held:
                    state.left.append((kind, item))
                    continue
                state.uids.add(meta.get('uid'))
                line = '%s/%s' % (meta['namespace'], meta['name'])
                if meta.get('deletionTimestamp'):
                    result['terminating'].setdefault(kind.name, []).append(line)
                    continue
                live.setdefault(meta['namespace'], []).append(meta['name'])
                if is_credential(kind, meta['namespace'], meta['name'], state.accounts.get(meta['namespace'])):
                    result['credentials_deleted'].append('%s %s' % (kind.name, line))
                else:
                    result['deleted'].setdefault(kind.name, []).append(line)
            if not check_mode:
                parallel_map(lambda ns, kind=kind: self.delete_collection(
                    kind, ns, state.kept(kind, ns), state.grace), sorted(live))
            if live or kind.name in result['terminating']:
                touched.append(kind)
        return touched

    def _wait(self, result, kinds, namespaces, state, deadline, finalizer_grace, poll_interval, pods_phase=False):
        """Wait until the objects deleted (by uid: not ones the cluster recreates, like ServiceAccount default) are
        gone; in the pods phase until no pod at all is left (a dying controller may have made more). Returns what is
        left at the deadline, as (kind, item).

        Only the kinds that still held deleted objects are listed again (in parallel); the pause between
        two looks grows from poll_interval / 10 to poll_interval.
        """
        started = self.clock()
        force_at = None if state.grace is None else started + state.grace + FORCE_AFTER
        forced = False
        stripped = set()  # uids whose finalizers are gone (or that had none)
        pause = poll_interval / 10.0
        while True:
            found = parallel_map(lambda kind: self.leftovers(kind, namespaces, state.rotate, state.accounts), kinds)
            left = [(kind, item) for kind, items in zip(kinds, found) for item in items
                    if (item.get('metadata') or {}).get('uid') in state.uids or (pods_phase and kind.name == 'pods')]
            if not left:
                return []
            kinds = [kind for kind in kinds if any(entry[0] is kind for entry in left)]
            now = self.clock()
            pods = [(kind, item) for kind, item in left if kind.name == 'pods']
            if pods_phase:
                self._delete_new_pods(pods, state)
            if pods and not forced and force_at is not None and now >= force_at:
                forced = True
                self._force(pods, state, result)
                continue
            due = [(kind, item) for kind, item in left if item['metadata'].get('deletionTimestamp')
                   and item['metadata'].get('uid') not in stripped]
            if due and now - started >= finalizer_grace:
                # A seat's finalizer must not hold the handover: whatever is still terminating loses them, except a
                # claim reserved for a pod that still exists (tried again on the next look).
                claims = [entry for entry in due if entry[0].name == 'resourceclaims']
                in_use = self._pods_alive(namespaces) if claims else set()
                touched = False
                for kind, item in due:
                    if kind.name == 'resourceclaims' and reserved_pods(item) & in_use:
                        continue  # never release a claim a pod still holds
                    stripped.add(item['metadata'].get('uid'))
                    line = self.remove_finalizers(kind, item)
                    if line:
                        touched = True
                        result['finalizers_removed'].append(line)
                if touched:
                    continue
            if now >= deadline:
                return left
            self.sleep(pause)
            pause = min(poll_interval, pause * 1.5)

    def _delete_new_pods(self, pods, state):
        """Delete again in a namespace whose pods include one not yet deleted (made since by a dying controller), or
        one deleted with a longer grace period than the reset's (by the seat, before the reset: the reset's shorter
        one overrides it)."""
        def again(meta):
            if not meta.get('deletionTimestamp'):
                return True
            return state.grace is not None and (meta.get('deletionGracePeriodSeconds') or 0) > state.grace
        fresh = sorted(set(item['metadata']['namespace'] for _kind, item in pods if again(item['metadata'])))
        for _kind, item in pods:
            state.uids.add(item['metadata'].get('uid'))
        if fresh:
            kind = pods[0][0]
            parallel_map(lambda ns: self.delete_collection(kind, ns, (), state.grace), fresh)

    def _force(self, pods, state, result):
        """Delete the pods still there with grace 0: their grace period is over (plus FORCE_AFTER)."""
        kind = pods[0][0]
        spaces = sorted(set(item['metadata']['namespace'] for _kind, item in pods))
        parallel_map(lambda ns: self.delete_collection(kind, ns, (), 0), spaces)
        result['forced'] += sorted('pods %s/%s' % (item['metadata']['namespace'], item['metadata']['name'])
                                   for _kind, item in pods)

    def _pods_alive(self, namespaces):
        """{(name, uid)} of the pods in the namespaces now."""
        wanted = set(namespaces)
        return set((item['metadata'].get('name'), item['metadata'].get('uid'))
                   for item in list_all(self.client, '/api/v1/pods')
                   if (item.get('metadata') or {}).get('namespace') in wanted)


class _State:
    """What one run of SeatCleaner carries between its phases."""

    def __init__(self, rotate, accounts, grace):
        self.rotate, self.accounts, self.grace = rotate, accounts, grace
        self.uids = set()
        self.left = []  # (kind, item) still there at a phase's deadline, or claims kept for pods still there

    def kept(self, kind, namespace):
        return kept_names(kind, namespace, self.rotate, self.accounts.get(namespace))


def remaining_message(result):
    """The error for objects a reset could not remove, naming the seats."""
    lines = result['remaining']
    shown = lines[:20]
    more = '' if len(lines) <= 20 else ' ... and %d more' % (len(lines) - 20)
    return ('%d object(s) are still present in the seat namespace(s) %s after waiting: %s%s. Pods stuck terminating '
            'usually sit on a node that does not answer; the claims of a namespace with pods left are not deleted, '
            'since a pod may still use their devices: run the reset again once the node is back or gone.'
            % (len(lines), ', '.join(result['failed_seats']), '; '.join(shown), more))
