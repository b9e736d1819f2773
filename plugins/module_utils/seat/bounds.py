# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one seat may keep in the shared API server: how many objects of each kind, and how long its pods take to stop.

Counts: every namespaced kind the seat's RBAC lets it create gets a ResourceQuota key count/<kind>. The kinds
are derived here, once, from the RBAC rules themselves (the seat's edit ClusterRole as the API server
aggregated it, and the seats' reader ClusterRole) and the kinds the API server serves (creatable_kinds), never
from a list written by hand: a kind a ClusterRole aggregates into edit later (a CRD's) is counted too. The
quota system does not count Events (UNCOUNTED); seats may not write them at all
(seat/policies.py events_policy).

Bytes: etcd stores no object above MAX_OBJECT_BYTES (its --max-request-bytes), so a seat's objects take at most
its object count times that (byte_ceiling); docs/security.md puts the numbers next to etcd's quota.

The instructor's numbers (workshop_users_quota_objects, workshop_users_quota_objects_by_kind,
workshop_users_pod_grace_max) are checked against what the workshop itself keeps in a seat namespace and what
its demos and can-has-gpu make (needs, grace_problem), by the preflight before any change.

Pure: seat_objects reads the rules and the discovery and hands them here.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    as_int,
    format_quantity,
    is_dns1123_subdomain,
    parse_quantity,
    show,
)

# etcd refuses a write above its --max-request-bytes, 1.5 MiB unless set otherwise: no object is bigger.
MAX_OBJECT_BYTES = 3 * 512 * 1024
# Kinds kube-apiserver's quota admission ignores (a count/ key of them is accepted and never enforced).
UNCOUNTED = frozenset([('', 'events'), ('events.k8s.io', 'events')])
# The claims' count key is the seat's GPU limit, set from dralab_gpus_per_seat (seat/model.py quota_hard).
CLAIMS_KIND = 'resourceclaims.resource.k8s.io'
# The API groups of the kinds the lab keeps in a seat namespace that are not core (seat/model.py baseline_names).
BASELINE_GROUPS = {'rolebindings': 'rbac.authorization.k8s.io'}
# Kubernetes gives a pod that names no terminationGracePeriodSeconds 30 s; the demos name none.
DEFAULT_POD_GRACE = 30
# can-has-gpu keeps each GPU with a holder pod and runs the command in a second pod (tools/can_has_gpu/objects.py).
CAN_HAS_GPU_PODS_PER_CLAIM = 2
# Seconds after a pod's grace period after which the reset deletes a pod still there with grace 0 (seat/cleanup.py):
# a kubelet that killed the pod's containers at the end of its grace period confirms within seconds; one that does
# not answer never does.
FORCE_AFTER = 10
# The smallest ephemeral-storage limit of a container: the kubelet keeps up to 5 log files of 10 MiB per container
# (containerLogMaxFiles, containerLogMaxSize) and counts them against that limit, so a demo that logs would be
# evicted below it.
MIN_CONTAINER_EPHEMERAL = 50 * 1024 * 1024
# workshop_users_container_default_limits['ephemeral-storage'], the role's default (a unit test keeps them equal).
DEFAULT_CONTAINER_EPHEMERAL = '1Gi'


def kind_name(group, resource):
    """A kind as a quota key and kubectl name it: the plural resource, with its API group unless core."""
    return '%s.%s' % (resource, group) if group else resource


def count_key(name):
    return 'count/' + name


def _grants_create(rule, group, resource):
    if rule.get('resourceNames'):  # create cannot be limited by name: such a rule never allows it
        return False
    verbs = set(rule.get('verbs') or [])
    groups = set(rule.get('apiGroups') or [])
    resources = set(rule.get('resources') or [])
    return (bool(verbs & {'create', '*'}) and bool(groups & {group, '*'})
            and bool(resources & {resource, '*'}))


def creatable_kinds(rules, served):
    """The kind names (kind_name) of the served kinds some rule lets the holder create, sorted.

    rules: RBAC PolicyRules (dicts); served: (group, resource) of every namespaced kind the API server serves with
    the verb create (subresources such as pods/exec are not kinds and are left out by the caller).
    """
    found = set()
    for group, resource in served:
        if '/' not in resource and any(_grants_create(rule, group, resource) for rule in rules or []):
            found.add((group, resource))
    return sorted(kind_name(group, resource) for group, resource in found)


def counted(kinds):
    """The kinds among kinds that a ResourceQuota can count (UNCOUNTED left out)."""
    ignored = set(kind_name(group, resource) for group, resource in UNCOUNTED)
    return [name for name in kinds if name not in ignored]


def _count(value, what):
    try:
        number = as_int(value)
    except ValueError:
        raise ValueError('%s must be a whole number, got %s' % (what, show(value))) from None
    if number < 0:
        raise ValueError('%s must be 0 or more, got %s' % (what, show(value)))
    return number


def object_counts(kinds, per_kind, by_kind=None):
    """{kind name: count} for every countable kind of kinds (the seat's claims excepted: gpus_per_seat).

    per_kind is every kind's count unless by_kind names it. Raises ValueError naming a bad value, or a kind of
    by_kind that is not among the seat's countable kinds (a misspelt one would silently count nothing).
    """
    by_kind = dict(by_kind or {})
    names = [name for name in counted(kinds) if name != CLAIMS_KIND]
    if CLAIMS_KIND in by_kind:
        raise ValueError('quota_objects_by_kind may not set %s: a seat\'s claims are its GPUs '
                         '(dralab_gpus_per_seat)' % CLAIMS_KIND)
    unknown = sorted(set(by_kind) - set(names))
    if unknown:
        raise ValueError('quota_objects_by_kind names %s, which the seats cannot create or the quota cannot count '
                         '(the kinds their RBAC lets them create: %s)'
                         % (', '.join(map(str, unknown)), ', '.join(names) or 'none'))
    default = _count(per_kind, 'quota_objects')
    return dict((name, _count(by_kind.get(name, default), 'quota_objects_by_kind[%s]' % name)) for name in names)


def count_hard(counts):
    """The ResourceQuota keys (count/<kind>) of object_counts."""
    return dict((count_key(name), str(number)) for name, number in counts.items())


def byte_ceiling(hard):
    """The most bytes a seat's objects can take in etcd under a quota's hard keys: every counted object at
    MAX_OBJECT_BYTES (objects the quota does not count are not the seat's to make)."""
    total = 0
    for key, value in (hard or {}).items():
        if key.startswith('count/'):
            total += as_int(value)
    return total * MAX_OBJECT_BYTES


def needs(baseline, gpus_per_seat, demo_pods=0):
    """{kind name: the fewest objects of that kind a seat namespace must be allowed}.

    baseline: {plural: names} of what the collection itself keeps in every seat namespace (seat/model.py
    baseline_names; the quota counts those too); pods: can-has-gpu's pods for every GPU, or the largest demo of
    the lab's features.
    """
    wanted = dict((kind_name(BASELINE_GROUPS.get(plural, ''), plural), len(names))
                  for plural, names in (baseline or {}).items())
    wanted['pods'] = max(wanted.get('pods', 0), CAN_HAS_GPU_PODS_PER_CLAIM * max(as_int(gpus_per_seat), 0),
                         as_int(demo_pods))
    return wanted


def count_problems(per_kind, by_kind, wanted):
    """(field, sentence) for every count below what the workshop needs (wanted: needs()) or not a number."""
    problems = []
    try:
        default = _count(per_kind, 'quota_objects')
    except ValueError as exc:
        return [('workshop_users_quota_objects', str(exc).split(' ', 1)[1])]
    if not isinstance(by_kind, dict):
        return [('workshop_users_quota_objects_by_kind', 'must be a mapping of kind to count, got %s'
                 % show(by_kind))]
    for name, value in sorted(by_kind.items()):
        field = 'workshop_users_quota_objects_by_kind[%s]' % name
        if not isinstance(name, str) or not is_dns1123_subdomain(name):
            problems.append((field, 'is not a kind name such as configmaps or deployments.apps'))
            continue
        if name == CLAIMS_KIND:
            problems.append((field, 'a seat\'s claims are its GPUs: set dralab_gpus_per_seat instead'))
            continue
        try:
            number = _count(value, 'count')
        except ValueError as exc:
            problems.append((field, str(exc)))
            continue
        if number < wanted.get(name, 0):
            problems.append((field, _too_small(name, number, wanted[name])))
    short = ['%s %d' % (name, minimum) for name, minimum in sorted(wanted.items())
             if name not in by_kind and default < minimum]
    if short:
        problems.append(('workshop_users_quota_objects', '%d of each kind is fewer than the workshop itself needs in '
                         'every seat namespace (%s: %s); the lab\'s own objects would be refused'
                         % (default, WHY, ', '.join(short))))
    return problems


WHY = 'what the lab keeps there, and the pods of can-has-gpu and the demos'


def _too_small(name, number, minimum):
    return ('%d %s per seat is fewer than the workshop itself needs in every seat namespace (%d: %s); the lab\'s own '
            'objects would be refused' % (number, name, minimum, WHY))


def grace_problem(value):
    """Why value cannot be the longest termination grace period of seat pods, or None."""
    try:
        number = as_int(value)
    except ValueError:
        return 'must be a whole number of seconds, got %s' % show(value)
    if number < DEFAULT_POD_GRACE:
        return ('%d s is less than the %d s Kubernetes gives every pod that names no terminationGracePeriodSeconds: '
                'the demos\' pods would be refused' % (number, DEFAULT_POD_GRACE))
    return None


def _bytes(value):
    if value is None or isinstance(value, (bool, dict, list)):
        raise ValueError('%s is not a quantity such as 10Gi' % show(value))
    return parse_quantity(str(value).strip())


def ephemeral_problems(quota, default_limits, default_requests, pods):
    """(field, sentence) for ephemeral storage bounds too small for pods pods (needs()['pods']) of one container
    that names none (the demos and can-has-gpu name none: the LimitRange's default is theirs).

    quota: workshop_users_quota_ephemeral_storage ('' or None: no quota); default_limits / default_requests:
    workshop_users_container_default_limits / _requests (None: the role's default)."""
    problems = []
    limit = DEFAULT_CONTAINER_EPHEMERAL
    for field, values in (('workshop_users_container_default_limits', default_limits),
                          ('workshop_users_container_default_requests', default_requests)):
        if values is not None and not isinstance(values, dict):
            problems.append((field, 'must be a mapping such as {cpu: 500m, memory: 512Mi, ephemeral-storage: 1Gi}'))
    if isinstance(default_limits, dict):
        limit = default_limits.get('ephemeral-storage')
    try:
        limit_bytes = None if limit in (None, '') else _bytes(limit)
    except ValueError as exc:
        return problems + [("workshop_users_container_default_limits['ephemeral-storage']", str(exc))]
    if limit_bytes is not None and limit_bytes < MIN_CONTAINER_EPHEMERAL:
        problems.append(("workshop_users_container_default_limits['ephemeral-storage']",
                         '%s is less than %s, the container logs the kubelet keeps (5 files of 10Mi) and counts '
                         'against it: a demo pod that logs would be evicted'
                         % (show(limit), format_quantity(MIN_CONTAINER_EPHEMERAL))))
    if quota is None or str(quota).strip() == '':
        return problems
    try:
        quota_bytes = _bytes(quota)
    except ValueError as exc:
        return problems + [('workshop_users_quota_ephemeral_storage', str(exc))]
    if limit_bytes is None:
        problems.append(('workshop_users_quota_ephemeral_storage', 'a quota on ephemeral storage needs a default '
                         "ephemeral-storage limit for containers (workshop_users_container_default_limits): the "
                         "demos' pods name none and would be refused"))
    elif quota_bytes < pods * limit_bytes:
        problems.append(('workshop_users_quota_ephemeral_storage',
                         '%s is less than the %d pods can-has-gpu and the demos need at %s each (the containers\' '
                         'default limit): their pods would be refused' % (show(quota), pods, show(limit))))
    return problems
