# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Admission policies that hold workshop seats to the lab's rules, built as plain dicts.

Each rule is a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) with
a binding of the same name. Both select the seat namespaces by the namespace's
own labels, which only the instructor can change (a seat cannot edit its
Namespace object), never by labels on objects inside the namespace.

- dralab-seat-services: Services stay ClusterIP without externalIPs (no
  NodePort, LoadBalancer, ExternalName or externalIPs: CVE-2020-8554).
- dralab-seat-secrets: no legacy service-account-token Secrets (tokens that
  never expire).
- dralab-seat-claim-size, dralab-seat-claim-template-size: a ResourceClaim, or
  the claim a ResourceClaimTemplate makes, asks for at most DEVICES_PER_CLAIM
  device(s) (counts summed over requests; of a firstAvailable list, the
  largest alternative), never allocationMode All. One policy per kind, so each
  expression is checked against one schema. With companion classes (the NIC
  class of gpu_nic_numa, dra_features.companion_classes), a claim may also hold
  COMPANIONS_PER_CLAIM device(s) of those classes beside its GPU: constraints
  such as matchAttribute act only inside one claim. Devices of a request count
  as companions only when the request names a companion class; in a
  firstAvailable list, each alternative counts towards its own kind (the
  largest of each), so no alternative can slip a second GPU in. A companion
  class selects only the companion driver's devices, and seats cannot create
  DeviceClasses, so naming one never yields a GPU.
- dralab-seat-claim-count: a new ResourceClaim is refused, with a message
  saying what the seat holds and how to free it, when the seat's quota
  (count/resourceclaims.resource.k8s.io, the seat's GPUs) is used up. Its
  parameter is the seat's own ResourceQuota in the request's namespace.
- dralab-seat-pod-grace, dralab-seat-template-grace, dralab-seat-cronjob-grace:
  a pod, or the pod template of a controller, may take at most
  pod_grace_max seconds to stop (terminationGracePeriodSeconds): a pod that
  ignores SIGTERM holds its GPU no longer than that after any deletion, the
  reset's included. The pod's own value, as the API server defaulted it
  (30 s when it names none), is checked.
- dralab-seat-events: a seat's own identities (any ServiceAccount of its
  namespace) may not write Events: the ResourceQuota cannot count them
  (seat/bounds.py UNCOUNTED), so nothing else would bound what a seat stores
  in them. The Events the cluster writes about a seat's objects are not
  concerned.
- dralab-seat-waitlist-gate: a seat's identities may not remove the GPU
  waitlist's scheduling gate (values.WAITLIST_GATE) from a pod; the keeper
  (the lease reaper, an identity of another namespace) removes it when the
  seat's turn comes (seat/waitlist.py).

Together with the quota on the number of claims, a seat holds at most
gpus_per_seat GPUs (and as many companion devices) whatever DeviceClasses it
names; the quota's per-class device keys cap the companion class too.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.seat.bounds import DEFAULT_POD_GRACE
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import CLAIM_COUNT_KEY, QUOTA_NAME, managed_labels
from ansible_collections.dralab.workshop.plugins.module_utils.values import MANAGED_BY, MANAGED_BY_LABEL, SEAT_LABEL, WAITLIST_GATE

POLICY_API_VERSION = 'admissionregistration.k8s.io/v1'
SERVICES_POLICY = 'dralab-seat-services'
SECRETS_POLICY = 'dralab-seat-secrets'
CLAIM_SIZE_POLICY = 'dralab-seat-claim-size'
TEMPLATE_SIZE_POLICY = 'dralab-seat-claim-template-size'
CLAIM_COUNT_POLICY = 'dralab-seat-claim-count'
POD_GRACE_POLICY = 'dralab-seat-pod-grace'
TEMPLATE_GRACE_POLICY = 'dralab-seat-template-grace'
CRONJOB_GRACE_POLICY = 'dralab-seat-cronjob-grace'
EVENTS_POLICY = 'dralab-seat-events'
WAITLIST_GATE_POLICY = 'dralab-seat-waitlist-gate'
POLICY_NAMES = (SERVICES_POLICY, SECRETS_POLICY, CLAIM_SIZE_POLICY, TEMPLATE_SIZE_POLICY, CLAIM_COUNT_POLICY,
                POD_GRACE_POLICY, TEMPLATE_GRACE_POLICY, CRONJOB_GRACE_POLICY, EVENTS_POLICY, WAITLIST_GATE_POLICY)
# The controllers whose spec.template is a pod template: (API group, resource).
POD_TEMPLATE_OWNERS = (('apps', 'deployments'), ('apps', 'replicasets'), ('apps', 'statefulsets'),
                       ('apps', 'daemonsets'), ('batch', 'jobs'), ('', 'replicationcontrollers'))

# Every claim holds one GPU at most, so the claim-count quota is the seat's GPU limit.
DEVICES_PER_CLAIM = 1
# Devices of companion classes (a NIC beside the GPU) a claim may hold when there are companion classes.
COMPANIONS_PER_CLAIM = 1
LEGACY_TOKEN_TYPE = 'kubernetes.io/service-account-token'


def seat_namespace_selector():
    """Label selector (LabelSelector dict) of the seat namespaces."""
    return {
        'matchLabels': {MANAGED_BY_LABEL: MANAGED_BY},
        'matchExpressions': [{'key': SEAT_LABEL, 'operator': 'Exists'}],
    }


def _rules(group, resources, operations):
    return [{'apiGroups': [group], 'apiVersions': ['*'], 'operations': list(operations), 'resources': list(resources)}]


def _grouped_rules(pairs, operations):
    """Rules for (group, resource) pairs, one rule per group in the order first seen."""
    groups = []
    for group, _resource in pairs:
        if group not in groups:
            groups.append(group)
    return [rule for group in groups for rule in _rules(group, [r for g, r in pairs if g == group], operations)]


def _policy(name, description, rules, validations, variables=None, param_kind=None):
    spec = {
        'failurePolicy': 'Fail',
        'matchConstraints': {'namespaceSelector': seat_namespace_selector(), 'resourceRules': rules},
        'validations': validations,
    }
    if variables:
        spec['variables'] = variables
    if param_kind:
        spec['paramKind'] = param_kind
    return {
        'apiVersion': POLICY_API_VERSION, 'kind': 'ValidatingAdmissionPolicy',
        'metadata': {'name': name, 'labels': managed_labels(),
                     'annotations': {'dralab.workshop/description': description}},
        'spec': spec,
    }


def _binding(name, param_ref=None):
    spec = {
        'policyName': name,
        'validationActions': ['Deny'],
        'matchResources': {'namespaceSelector': seat_namespace_selector()},
    }
    if param_ref:
        spec['paramRef'] = param_ref
    return {
        'apiVersion': POLICY_API_VERSION, 'kind': 'ValidatingAdmissionPolicyBinding',
        'metadata': {'name': name, 'labels': managed_labels()},
        'spec': spec,
    }


def services_policy():
    return _policy(
        SERVICES_POLICY,
        'Workshop seats may only create ClusterIP Services without externalIPs (CVE-2020-8554).',
        _rules('', ['services'], ['CREATE', 'UPDATE']),
        [
            {'expression': '!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0',
             'reason': 'Forbidden',
             'message': 'Services in workshop seats may not set externalIPs: they would capture traffic for those '
                        'addresses on every node of the shared lab (CVE-2020-8554).'},
            {'expression': "!has(object.spec.type) || object.spec.type == 'ClusterIP'",
             'reason': 'Forbidden',
             'messageExpression': "'Services in workshop seats must be of type ClusterIP, not ' + object.spec.type + "
                                  "': NodePort and LoadBalancer Services open ports on the nodes of the shared lab. "
                                  "Use kubectl port-forward to reach your pod.'"},
        ])


def secrets_policy():
    return _policy(
        SECRETS_POLICY,
        'Workshop seats may not create legacy service-account-token Secrets (tokens without expiry).',
        _rules('', ['secrets'], ['CREATE', 'UPDATE']),
        [{'expression': "!has(object.type) || object.type != '%s'" % LEGACY_TOKEN_TYPE,
          'reason': 'Forbidden',
          'message': 'Secrets of type %s (tokens that never expire) are not allowed in workshop seats; '
                     'use kubectl create token, whose tokens expire with the event.' % LEGACY_TOKEN_TYPE}])


def _cel_list(names):
    return '[%s]' % ', '.join("'%s'" % name for name in names)


def _claim_variables(spec, companions):
    """CEL variables over a ResourceClaimSpec (the expression spec): its requests, All, the device counts.

    Per request and kind its devices: count (default 1); of a firstAvailable list, the largest alternative of
    that kind. A request (or alternative) is a companion when it names one of the companion classes."""
    companion = "variables.companionClasses.exists(c, has(%s.deviceClassName) && %s.deviceClassName == c)"
    per_kind = ('variables.requests.map(r, has(r.exactly) ? ((%(exact)s) ? (has(r.exactly.count) ? r.exactly.count '
                ': 1) : 0) : ((has(r.firstAvailable) && size(r.firstAvailable) > 0) ? r.firstAvailable.map(s, '
                '(%(sub)s) ? (has(s.count) ? s.count : 1) : 0).max() : 0))')
    return [
        {'name': 'requests',
         'expression': 'has(%s.devices) && has(%s.devices.requests) ? %s.devices.requests : []' % (spec, spec, spec)},
        {'name': 'companionClasses', 'expression': _cel_list(companions)},
        {'name': 'asksAll',
         'expression': "variables.requests.exists(r, (has(r.exactly) && has(r.exactly.allocationMode) "
                       "&& r.exactly.allocationMode == 'All') || (has(r.firstAvailable) "
                       "&& r.firstAvailable.exists(s, has(s.allocationMode) && s.allocationMode == 'All')))"},
        {'name': 'perRequest',
         'expression': per_kind % {'exact': '!' + companion % ('r.exactly', 'r.exactly'),
                                   'sub': '!' + companion % ('s', 's')}},
        {'name': 'companionsPerRequest',
         'expression': per_kind % {'exact': companion % ('r.exactly', 'r.exactly'), 'sub': companion % ('s', 's')}},
        {'name': 'devices', 'expression': 'size(variables.perRequest) == 0 ? 0 : variables.perRequest.sum()'},
        {'name': 'companions',
         'expression': 'size(variables.companionsPerRequest) == 0 ? 0 : variables.companionsPerRequest.sum()'},
    ]


def _size_policy(name, resource, kind, spec, limit, companions):
    companion_limit = COMPANIONS_PER_CLAIM if companions else 0
    validations = [
        {'expression': '!variables.asksAll', 'reason': 'Forbidden',
         'message': 'allocationMode All would take every matching GPU of the shared lab; workshop seats ask '
                    'for one device at a time (allocationMode ExactCount, count 1).'},
        {'expression': 'variables.devices <= %d' % limit, 'reason': 'Forbidden',
         'messageExpression': "'a workshop seat asks for at most %d device(s) per claim; this %s asks for ' + "
                              "string(variables.devices) + '. Ask for one device per claim.'" % (limit, kind)},
    ]
    description = 'A %s of a workshop seat asks for at most %d device(s), never all.' % (kind, limit)
    if companions:
        classes = ', '.join(companions)
        description = ('A %s of a workshop seat asks for at most %d GPU(s) and %d device(s) of %s, never all.'
                       % (kind, limit, companion_limit, classes))
        validations[1]['messageExpression'] = (
            "'a workshop seat asks for at most %d GPU(s) per claim (beside %d device(s) of %s); this %s asks for ' + "
            "string(variables.devices) + ' other than %s. Ask for one GPU per claim.'"
            % (limit, companion_limit, classes, kind, classes))
        validations.append({
            'expression': 'variables.companions <= %d' % companion_limit, 'reason': 'Forbidden',
            'messageExpression': "'a workshop seat asks for at most %d device(s) of %s per claim; this %s asks for ' + "
                                 "string(variables.companions) + '.'" % (companion_limit, classes, kind)})
    return _policy(name, description, _rules('resource.k8s.io', [resource], ['CREATE']), validations,
                   variables=_claim_variables(spec, companions))


def claim_size_policy(devices_per_claim=DEVICES_PER_CLAIM, companion_classes=()):
    return _size_policy(CLAIM_SIZE_POLICY, 'resourceclaims', 'ResourceClaim', 'object.spec', int(devices_per_claim),
                        sorted(companion_classes))


def template_size_policy(devices_per_claim=DEVICES_PER_CLAIM, companion_classes=()):
    return _size_policy(TEMPLATE_SIZE_POLICY, 'resourceclaimtemplates', 'ResourceClaimTemplate', 'object.spec.spec',
                        int(devices_per_claim), sorted(companion_classes))


def claim_count_policy():
    key = CLAIM_COUNT_KEY
    return _policy(
        CLAIM_COUNT_POLICY,
        'Tells a workshop seat whose GPU claims are used up what it holds and how to free one.',
        _rules('resource.k8s.io', ['resourceclaims'], ['CREATE']),
        [{'expression': 'variables.used < variables.hard', 'reason': 'Forbidden',
          'messageExpression': "'this seat already holds ' + string(variables.used) + ' of ' + string(variables.hard) "
                               "+ ' GPU claim(s); list them with kubectl get resourceclaims and delete one to free it'"}],
        variables=[
            {'name': 'used',
             'expression': "has(params.status) && has(params.status.used) && '%s' in params.status.used "
                           "? int(params.status.used['%s']) : 0" % (key, key)},
            {'name': 'hard',
             'expression': "has(params.spec.hard) && '%s' in params.spec.hard "
                           "? int(params.spec.hard['%s']) : variables.used + 1" % (key, key)},
        ],
        param_kind={'apiVersion': 'v1', 'kind': 'ResourceQuota'})


def _grace_policy(name, what, rules, spec, max_seconds):
    """A pod spec (the CEL expression spec, which may be absent) stops within max_seconds."""
    field = spec + '.terminationGracePeriodSeconds'
    steps = field.split('.')
    # has() of every optional step below object.spec, down to the field.
    present = ' && '.join('has(%s)' % '.'.join(steps[:depth]) for depth in range(3, len(steps) + 1))
    return _policy(
        name, 'The pods of a workshop seat stop within %d s of being deleted (terminationGracePeriodSeconds).'
        % max_seconds, rules,
        [{'expression': '!(%s) || %s <= %d' % (present, field, max_seconds), 'reason': 'Forbidden',
          'messageExpression': "'%s of a workshop seat may take at most %d s to stop (terminationGracePeriodSeconds), "
                               "not ' + string(%s) + ' s: a pod that ignores SIGTERM would keep its GPU from the "
                               "next group.'" % (what, max_seconds, field)}])


def pod_grace_policies(max_seconds=DEFAULT_POD_GRACE):
    """Seat pods, and the pod templates of the controllers seats may create, stop within max_seconds."""
    max_seconds = int(max_seconds)
    return [
        _grace_policy(POD_GRACE_POLICY, 'A pod', _rules('', ['pods'], ['CREATE']), 'object.spec', max_seconds),
        _grace_policy(TEMPLATE_GRACE_POLICY, 'The pod template',
                      _grouped_rules(POD_TEMPLATE_OWNERS, ['CREATE', 'UPDATE']), 'object.spec.template.spec',
                      max_seconds),
        _grace_policy(CRONJOB_GRACE_POLICY, 'The pod template', _rules('batch', ['cronjobs'], ['CREATE', 'UPDATE']),
                      'object.spec.jobTemplate.spec.template.spec', max_seconds),
    ]


def events_policy():
    return _policy(
        EVENTS_POLICY,
        'Workshop seats may not write Events: the ResourceQuota cannot count them.',
        _grouped_rules([('', 'events'), ('events.k8s.io', 'events')], ['CREATE', 'UPDATE']),
        [{'expression': "!request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':')",
          'reason': 'Forbidden',
          'message': 'workshop seats may not write Events (no quota can count them); kubectl describe shows the '
                     'Events the cluster writes about your objects.'}])


def waitlist_gate_policy():
    gate = "g.name == '%s'" % WAITLIST_GATE
    return _policy(
        WAITLIST_GATE_POLICY,
        'Only the waitlist keeper (the lease reaper) removes the waitlist gate of a seat pod: a seat cannot jump '
        'the GPU line.',
        _rules('', ['pods'], ['UPDATE']),
        [{'expression': "!(has(oldObject.spec.schedulingGates) && oldObject.spec.schedulingGates.exists(g, %s)) || "
                        "(has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(g, %s)) || "
                        "!request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':')"
                        % (gate, gate),
          'reason': 'Forbidden',
          'message': 'the waitlist gate is removed by the lab when your turn comes: can-has-gpu status shows your '
                     'place in line, can-has-gpu leave gives it up.'}])


def seat_policies(devices_per_claim=DEVICES_PER_CLAIM, companion_classes=(), pod_grace_max=DEFAULT_POD_GRACE):
    """Every policy and its binding, policies first. companion_classes: DeviceClasses of which a claim may hold
    COMPANIONS_PER_CLAIM device(s) beside its GPU (dra_features.companion_classes); pod_grace_max: the longest
    terminationGracePeriodSeconds of a seat pod."""
    policies = [services_policy(), secrets_policy(), claim_size_policy(devices_per_claim, companion_classes),
                template_size_policy(devices_per_claim, companion_classes), claim_count_policy()]
    policies += pod_grace_policies(pod_grace_max) + [events_policy(), waitlist_gate_policy()]
    bindings = [_binding(SERVICES_POLICY), _binding(SECRETS_POLICY), _binding(CLAIM_SIZE_POLICY),
                _binding(TEMPLATE_SIZE_POLICY),
                _binding(CLAIM_COUNT_POLICY, {'name': QUOTA_NAME, 'parameterNotFoundAction': 'Deny'})]
    bindings += [_binding(name) for name in (POD_GRACE_POLICY, TEMPLATE_GRACE_POLICY, CRONJOB_GRACE_POLICY,
                                             EVENTS_POLICY, WAITLIST_GATE_POLICY)]
    return policies + bindings


# The builders other policy files of the seats use (seat/placement.py).
policy_object = _policy
binding_object = _binding
resource_rules = _rules
grouped_rules = _grouped_rules
