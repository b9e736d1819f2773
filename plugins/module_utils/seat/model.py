# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes objects of workshop seats, built as plain dicts.

A seat NAME owns the namespace NAME, in which it has its ServiceAccount (NAME,
then after each credential rotation a new name nobody could guess beforehand,
NAME-gN-<random>, recorded on the Namespace: recorded_account()), a RoleBinding
of that account to the ClusterRole ``edit``, a ResourceQuota that caps DRA
devices per DeviceClass, ResourceClaims (one device each, so this is the seat's
GPU limit), the objects of every kind the seat may create (seat/bounds.py),
pods, CPU and memory, a LimitRange that gives containers
default requests and limits, and a Secret that the seat's tokens are bound to
(deleting the Secret revokes them). The instructor's objects in a seat
namespace are known by kind and name (BASELINE_NAMES), not by labels a seat
could change. One ClusterRole
lets every seat read DeviceClasses, ResourceSlices and Nodes; one
ClusterRoleBinding lists all seat ServiceAccounts.

Everything here is pure: the seat_objects, seat_tokens and seat_cleanup modules
use it, and so do the unit tests.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SEAT_LABEL,
    is_dns1123_subdomain,
    seat_name_problem,
)

DESCRIPTION_ANNOTATION = 'dralab.workshop/description'
# A namespace with this label may request admin access to devices (DRAAdminAccess):
# a seat namespace never gets it.
ADMIN_ACCESS_LABEL = 'resource.kubernetes.io/admin-access'
POD_SECURITY_LABEL = 'pod-security.kubernetes.io/enforce'
POD_SECURITY_LEVELS = ('privileged', 'baseline', 'restricted')

# Label selector of every object this collection created.
MANAGED_SELECTOR = '%s=%s' % (MANAGED_BY_LABEL, MANAGED_BY)
# Label selector of every seat namespace this collection created.
SEAT_NAMESPACE_SELECTOR = '%s=%s,%s' % (MANAGED_BY_LABEL, MANAGED_BY, SEAT_LABEL)

TOKEN_SECRET_NAME = 'dralab-seat-token'
# On a seat Namespace (which a seat cannot change): how many times its credentials were rotated, and the name of
# the ServiceAccount of this generation (the one the seat's RoleBinding names).
GENERATION_ANNOTATION = 'dralab.workshop/credential-generation'
ACCOUNT_ANNOTATION = 'dralab.workshop/credential-account'
ROLE_BINDING_NAME = 'dralab-seat-edit'
QUOTA_NAME = 'dralab-seat-quota'
LIMIT_RANGE_NAME = 'dralab-seat-limits'
# Put into every seat namespace by the participant_tool role and the lease reaper
# (tools/can_has_gpu): kept by a reset like the baseline.
REAPER_ROLE_BINDING_NAME = 'dralab-lease-reaper'
# The lease reaper's occupancy ConfigMap: the lab's allocated claims, which a seat cannot list itself.
OCCUPANCY_CONFIGMAP_NAME = 'dralab-gpu-occupancy'
DEFAULT_EDIT_CLUSTER_ROLE = 'edit'
DEFAULT_READER_NAME = 'dralab-seat-dra-reader'

CLAIM_COUNT_KEY = 'count/resourceclaims.resource.k8s.io'
DEVICE_QUOTA_SUFFIX = '.deviceclass.resource.k8s.io/devices'

READER_RULES = (
    # devicetaintrules: can-has-gpu tells a claim blocked by the instructor's DeviceTaintRule as dra_health does.
    {'apiGroups': ['resource.k8s.io'], 'resources': ['deviceclasses', 'resourceslices', 'devicetaintrules'],
     'verbs': ['get', 'list', 'watch']},
    {'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch']},
)


# The quota keys of pods, CPU, memory and ephemeral storage: (key, which of pods/cpu/memory/ephemeral-storage sets it).
COMPUTE_QUOTA_KEYS = (('pods', 'pods'), ('requests.cpu', 'cpu'), ('limits.cpu', 'cpu'),
                      ('requests.memory', 'memory'), ('limits.memory', 'memory'),
                      ('requests.ephemeral-storage', 'ephemeral-storage'),
                      ('limits.ephemeral-storage', 'ephemeral-storage'))
# What a LimitRange gives a container that names none of them.
CONTAINER_RESOURCES = ('cpu', 'memory', 'ephemeral-storage')


def account_name(seat, generation=0):
    """The seat's ServiceAccount of a credential generation in a Namespace that records no account (made before
    accounts were recorded): NAME, then NAME-g1, NAME-g2, ..."""
    return '%s-g%d' % (seat, generation) if generation else seat


def rotated_account_name(seat, generation, nonce):
    """The ServiceAccount a credential rotation gives a seat: NAME-gN-NONCE, nonce random (seat/cleanup.py).

    Nobody can guess it before the rotation picks it, and the rotation points the seat's RoleBinding at it before it
    records the name where the seat could read it: a seat cannot prepare that account, nor a token for it, for the
    next group (kube-apiserver would accept such a token, and keep accepting it from its 10 s cache, the moment the
    binding names the account).
    """
    name = '%s-g%d-%s' % (seat, generation, nonce)
    if not is_dns1123_subdomain(name):
        raise ValueError('the rotated account name %r is not a DNS-1123 subdomain' % (name,))
    return name


def recorded_account(namespace_obj):
    """The ServiceAccount the seat Namespace object records (its annotation), else the name of its generation."""
    meta = (namespace_obj or {}).get('metadata') or {}
    recorded = (meta.get('annotations') or {}).get(ACCOUNT_ANNOTATION)
    if isinstance(recorded, str) and is_dns1123_subdomain(recorded):
        return recorded
    return account_name(meta.get('name'), credential_generation(namespace_obj))


def credential_generation(namespace_obj):
    """The credential generation of a seat Namespace object (its annotation; 0 when missing or unreadable)."""
    value = (((namespace_obj or {}).get('metadata') or {}).get('annotations') or {}).get(GENERATION_ANNOTATION)
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def credential_generations(namespace_objects):
    """{namespace name: credential generation} of the seat Namespace objects among namespace_objects."""
    return dict(((ns.get('metadata') or {}).get('name'), credential_generation(ns))
                for ns in namespace_objects or [] if seat_of(ns) is not None)


def credential_accounts(namespace_objects):
    """{namespace name: recorded_account} of the seat Namespace objects among namespace_objects."""
    return dict(((ns.get('metadata') or {}).get('name'), recorded_account(ns))
                for ns in namespace_objects or [] if seat_of(ns) is not None)


def baseline_names(seat, with_credentials=True, account=None):
    """{resource: {names}} of the instructor's objects in a seat namespace (what a reset keeps).

    account: the seat's ServiceAccount now (recorded_account; default NAME). Without credentials (a rotation), the
    seat's ServiceAccount and token Secret are not kept either.
    """
    names = {'rolebindings': {ROLE_BINDING_NAME, REAPER_ROLE_BINDING_NAME}, 'resourcequotas': {QUOTA_NAME},
             'limitranges': {LIMIT_RANGE_NAME},
             # kube-root-ca.crt: published by kube-controller-manager in every namespace (it restores the content
             # itself); the occupancy: rewritten by the lease reaper whenever it differs from the lab's claims.
             'configmaps': {'kube-root-ca.crt', OCCUPANCY_CONFIGMAP_NAME}}
    if with_credentials:
        names['serviceaccounts'] = {account or seat, 'default'}
        names['secrets'] = {TOKEN_SECRET_NAME}
    return names


def managed_labels(seat=None):
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if seat is not None:
        labels[SEAT_LABEL] = seat
    return labels


def is_managed(obj):
    """Whether an API object carries the managed-by label of this collection."""
    labels = ((obj or {}).get('metadata') or {}).get('labels') or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY


def seat_of(namespace_obj):
    """The seat a namespace object belongs to (our labels), or None."""
    if not is_managed(namespace_obj):
        return None
    return ((namespace_obj.get('metadata') or {}).get('labels') or {}).get(SEAT_LABEL)


def device_quota_key(device_class):
    """ResourceQuota key that caps the devices a namespace requests from one DeviceClass."""
    return device_class + DEVICE_QUOTA_SUFFIX


def _count(value, what):
    if isinstance(value, bool):
        raise ValueError('%s must be a whole number, got %r' % (what, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError('%s must be a whole number, got %r' % (what, value)) from None
    if number < 0 or str(number) != str(value).strip():
        raise ValueError('%s must be a whole number of 0 or more, got %r' % (what, value))
    return number


def _quantity(value, what):
    if value is None or isinstance(value, (bool, dict, list)) or str(value).strip() == '':
        raise ValueError('%s must be a quantity such as 10, 500m or 2Gi, got %r' % (what, value))
    return str(value).strip()


def compute_hard(pods=None, cpu=None, memory=None, ephemeral_storage=None):
    """Quota keys for pods, CPU, memory and ephemeral storage (requests and limits each); empty ones are left out.

    Ephemeral storage is what the seat's pods write on their nodes' disks: containers' writable layers, their logs
    and emptyDir volumes on disk (the kubelet evicts a pod past the sum of its containers' limits)."""
    given = {'pods': pods, 'cpu': cpu, 'memory': memory, 'ephemeral-storage': ephemeral_storage}
    hard = {}
    for key, source in COMPUTE_QUOTA_KEYS:
        value = given[source]
        if value is None or (isinstance(value, str) and value.strip() == ''):
            continue
        hard[key] = _quantity(value, source.replace('-', '_') + '_per_seat')
    return hard


def quota_hard(device_classes, devices_per_seat=1, devices_per_class=None, gpus_per_seat=1, extra=None,
               compute=None, counts=None):
    """spec.hard of a seat's ResourceQuota: one devices key per DeviceClass, the claim count, compute keys.

    Every seat claim holds one device at most (admission policy), so the claim count
    gpus_per_seat is the seat's device limit whatever the classes. devices_per_class
    overrides devices_per_seat for the classes it names; compute (see compute_hard), counts
    (count/<kind> keys: seat_bounds.count_hard) and extra add other quota keys and may not
    redefine the DRA keys, nor extra the compute or count keys.
    """
    devices_per_class = devices_per_class or {}
    extra = extra or {}
    default = _count(devices_per_seat, 'devices_per_seat')
    unknown = sorted(set(devices_per_class) - set(device_classes))
    if unknown:
        raise ValueError('devices_per_class names DeviceClasses that get no quota: %s (known: %s)'
                         % (', '.join(unknown), ', '.join(sorted(device_classes)) or 'none'))
    hard = {}
    for name in device_classes:
        if not is_dns1123_subdomain(name):
            raise ValueError('DeviceClass name %r is not a DNS-1123 subdomain' % (name,))
        if len(device_quota_key(name).split('/')[0]) > 253:
            raise ValueError('DeviceClass name %r is too long for a ResourceQuota key' % (name,))
        value = devices_per_class.get(name, default)
        hard[device_quota_key(name)] = str(_count(value, 'devices_per_class[%s]' % name))
    hard[CLAIM_COUNT_KEY] = str(_count(gpus_per_seat, 'gpus_per_seat'))
    hard.update(compute or {})
    for key, value in (counts or {}).items():
        if key in hard:
            raise ValueError('the object counts may not redefine %s' % key)
        hard[key] = value
    for key, value in extra.items():
        if key in hard:
            raise ValueError('quota_extra may not redefine %s (set it with the gpus/devices/pods/cpu/memory/objects '
                             'options)' % key)
        hard[str(key)] = _quantity(value, 'quota_extra[%s]' % key)
    return hard


def namespace_object(seat, pod_security='baseline', generation=0, account=None):
    labels = managed_labels(seat)
    if pod_security:
        labels[POD_SECURITY_LABEL] = pod_security
    annotations = {GENERATION_ANNOTATION: str(generation), ACCOUNT_ANNOTATION: account or account_name(seat, generation)}
    return {
        'apiVersion': 'v1', 'kind': 'Namespace',
        'metadata': {'name': seat, 'labels': labels, 'annotations': annotations},
    }


def service_account_object(seat, account=None):
    return {
        'apiVersion': 'v1', 'kind': 'ServiceAccount',
        'metadata': {'name': account or seat, 'namespace': seat, 'labels': managed_labels(seat)},
    }


def token_secret_object(seat, secret_name=TOKEN_SECRET_NAME):
    return {
        'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
        'metadata': {
            'name': secret_name, 'namespace': seat, 'labels': managed_labels(seat),
            'annotations': {DESCRIPTION_ANNOTATION: 'The tokens of seat %s are bound to this Secret: '
                                                    'deleting it revokes them.' % seat},
        },
    }


def account_subject(seat, account=None):
    """The RBAC subject of the seat's ServiceAccount (recorded_account; default NAME)."""
    return {'kind': 'ServiceAccount', 'name': account or seat, 'namespace': seat}


def role_binding_object(seat, cluster_role=DEFAULT_EDIT_CLUSTER_ROLE, account=None):
    return {
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'RoleBinding',
        'metadata': {'name': ROLE_BINDING_NAME, 'namespace': seat, 'labels': managed_labels(seat)},
        'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': cluster_role},
        'subjects': [account_subject(seat, account)],
    }


def resource_quota_object(seat, hard):
    return {
        'apiVersion': 'v1', 'kind': 'ResourceQuota',
        'metadata': {'name': QUOTA_NAME, 'namespace': seat, 'labels': managed_labels(seat)},
        'spec': {'hard': dict(hard)},
    }


def limit_range_object(seat, default_limits=None, default_requests=None):
    """Defaults for containers that name no requests/limits (a CPU, memory or ephemeral storage quota needs them)."""
    limit = {'type': 'Container'}
    for field, values in (('default', default_limits), ('defaultRequest', default_requests)):
        values = dict((str(k), _quantity(v, 'container %s %s' % (field, k))) for k, v in (values or {}).items())
        unknown = sorted(set(values) - set(CONTAINER_RESOURCES))
        if unknown:
            raise ValueError('container %s may only set %s, not %s'
                             % (field, ', '.join(CONTAINER_RESOURCES), ', '.join(unknown)))
        if values:
            limit[field] = values
    return {
        'apiVersion': 'v1', 'kind': 'LimitRange',
        'metadata': {'name': LIMIT_RANGE_NAME, 'namespace': seat, 'labels': managed_labels(seat)},
        'spec': {'limits': [limit]},
    }


def reader_cluster_role(name=DEFAULT_READER_NAME, extra_rules=None):
    return {
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole',
        'metadata': {'name': name, 'labels': managed_labels(),
                     'annotations': {DESCRIPTION_ANNOTATION: 'Lets workshop seats read DeviceClasses, '
                                                             'ResourceSlices and Nodes.'}},
        'rules': [dict(rule) for rule in READER_RULES] + [dict(rule) for rule in (extra_rules or [])],
    }


def reader_cluster_role_binding(seats, name=DEFAULT_READER_NAME, accounts=None):
    accounts = accounts or {}
    return {
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding',
        'metadata': {'name': name, 'labels': managed_labels()},
        'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': name},
        'subjects': [account_subject(seat, accounts.get(seat)) for seat in seats],
    }


def seat_problems(seats):
    """Messages about seat names that cannot be used (bad names, duplicates)."""
    problems = []
    if not isinstance(seats, (list, tuple)):
        return ['seats must be a list of names, got %r' % (seats,)]
    seen = set()
    for index, seat in enumerate(seats):
        problem = seat_name_problem(seat)
        if problem:
            problems.append('seat %d: %s' % (index + 1, problem))
        elif seat in seen:
            problems.append('seat %d: %s is listed twice' % (index + 1, seat))
        else:
            seen.add(seat)
    return problems


def build_seat_objects(seats, device_classes, devices_per_seat=1, devices_per_class=None, gpus_per_seat=1,
                       quota_extra=None, pod_security='baseline', edit_cluster_role=DEFAULT_EDIT_CLUSTER_ROLE,
                       reader_name=DEFAULT_READER_NAME, reader_extra_rules=None, secret_name=TOKEN_SECRET_NAME,
                       pods_per_seat=None, cpu_per_seat=None, memory_per_seat=None,
                       container_default_limits=None, container_default_requests=None, generations=None,
                       accounts=None, counts=None, ephemeral_storage_per_seat=None):
    """Every object of every seat, in an order the API server accepts (namespaces first).

    generations: {seat: credential generation} of the seats whose namespace exists (credential_generations);
    the others start at 0. accounts: {seat: recorded_account} of those seats (credential_accounts); the others
    get the name of their generation. counts: count/<kind> quota keys (seat_bounds.count_hard). Raises ValueError
    with a message naming the bad value.
    """
    problems = seat_problems(seats)
    if problems:
        raise ValueError('; '.join(problems))
    if pod_security and pod_security not in POD_SECURITY_LEVELS:
        raise ValueError('pod_security must be one of %s or empty, got %r' % (', '.join(POD_SECURITY_LEVELS), pod_security))
    classes = []
    for name in device_classes or []:
        if name not in classes:
            classes.append(name)
    hard = quota_hard(classes, devices_per_seat, devices_per_class, gpus_per_seat, quota_extra,
                      compute_hard(pods_per_seat, cpu_per_seat, memory_per_seat, ephemeral_storage_per_seat), counts)
    limit_range_object('check', container_default_limits, container_default_requests)  # bad values fail first
    generations = dict((seat, (generations or {}).get(seat, 0)) for seat in seats)
    accounts = dict((seat, (accounts or {}).get(seat) or account_name(seat, generations[seat])) for seat in seats)
    objects = [namespace_object(seat, pod_security, generations[seat], accounts[seat]) for seat in seats]
    objects.append(reader_cluster_role(reader_name, reader_extra_rules))
    objects.append(reader_cluster_role_binding(seats, reader_name, accounts))
    for seat in seats:
        objects.append(service_account_object(seat, accounts[seat]))
        objects.append(token_secret_object(seat, secret_name))
        objects.append(role_binding_object(seat, edit_cluster_role, accounts[seat]))
        objects.append(resource_quota_object(seat, hard))
        objects.append(limit_range_object(seat, container_default_limits, container_default_requests))
    return objects


def namespace_findings(seats, namespaces):
    """Compare the wanted seats with the Namespace objects of the cluster.

    Returns a dict:
      foreign: seat names whose namespace exists but is not managed by this collection;
      admin_access: seat namespaces that carry the DRA admin-access label;
      stale: seat namespaces of this collection whose seat is no longer configured.
    """
    wanted = set(seats)
    foreign, admin_access, stale = [], [], []
    for ns in namespaces or []:
        meta = ns.get('metadata') or {}
        name = meta.get('name')
        labels = meta.get('labels') or {}
        if name in wanted:
            if not is_managed(ns):
                foreign.append(name)
            elif ADMIN_ACCESS_LABEL in labels:
                admin_access.append(name)
        elif seat_of(ns) is not None:
            stale.append(name)
    return {'foreign': sorted(foreign), 'admin_access': sorted(admin_access), 'stale': sorted(stale)}
