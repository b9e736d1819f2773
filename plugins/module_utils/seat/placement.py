# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a seat's pods may run and which tainted devices its claims may get: admission policies of the seat
namespaces.

- dralab-seat-pod-placement, dralab-seat-template-placement, dralab-seat-cronjob-placement: a pod, or the pod
  template of a controller (the same controllers as the grace-period policies, seat/policies.py), sets no
  spec.nodeName (which would put the pod on a node without the scheduler, past every taint) and tolerates only
  the taints of an allow list: the two Kubernetes itself adds to every pod (DefaultTolerationSeconds admission,
  a mutating plugin, runs before these policies: node.kubernetes.io/not-ready and node.kubernetes.io/unreachable,
  NoExecute) and those the instructor adds (workshop_users_pod_tolerations). A toleration without a key
  (operator Exists: every taint, the control plane's too) is never on the list. Pods are checked on update
  too (a running pod's tolerations may be added to). DaemonSets are refused: their controller makes every pod
  tolerate cordoned nodes and nodes under disk, memory or PID pressure.
- dralab-seat-claim-tolerations, dralab-seat-claim-template-tolerations: a claim's requests
  (spec.devices.requests[].exactly.tolerations and firstAvailable[].tolerations) tolerate only the device taints
  of an allow list (workshop_users_device_tolerations: by default the key the device_taints demo's own claim
  tolerates), so a device the instructor tainted under another key stays out of the seats' reach.

An allow list entry: {'key': taint key, 'effect': one effect or absent for any}. A toleration is allowed when an
entry has its key and either names no effect or the toleration's own (a toleration without an effect tolerates
every effect of its key, so it needs an entry without one).
"""

from __future__ import annotations

import re

from ansible_collections.dralab.workshop.plugins.module_utils.seat.policies import (
    POD_TEMPLATE_OWNERS,
    binding_object,
    grouped_rules,
    policy_object,
    resource_rules,
)
from ansible_collections.dralab.workshop.plugins.module_utils.values import show

POD_PLACEMENT_POLICY = 'dralab-seat-pod-placement'
TEMPLATE_PLACEMENT_POLICY = 'dralab-seat-template-placement'
CRONJOB_PLACEMENT_POLICY = 'dralab-seat-cronjob-placement'
CLAIM_TOLERATIONS_POLICY = 'dralab-seat-claim-tolerations'
CLAIM_TEMPLATE_TOLERATIONS_POLICY = 'dralab-seat-claim-template-tolerations'
POLICY_NAMES = (POD_PLACEMENT_POLICY, TEMPLATE_PLACEMENT_POLICY, CRONJOB_PLACEMENT_POLICY, CLAIM_TOLERATIONS_POLICY,
                CLAIM_TEMPLATE_TOLERATIONS_POLICY)
# What kube-apiserver's DefaultTolerationSeconds admission adds to every pod that has none of them (300 s each).
DEFAULT_POD_TOLERATIONS = ({'key': 'node.kubernetes.io/not-ready', 'effect': 'NoExecute'},
                           {'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'})
POD_TAINT_EFFECTS = ('NoSchedule', 'PreferNoSchedule', 'NoExecute')
DEVICE_TAINT_EFFECTS = ('NoSchedule', 'NoExecute', 'None')
CONTROL_PLANE_TAINT = 'node-role.kubernetes.io/control-plane'
_NAME = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')
_PREFIX = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')


def _key_problem(key):
    if not isinstance(key, str) or not key:
        return 'needs a key (a toleration without one tolerates every taint)'
    prefix, _sep, name = key.rpartition('/')
    if len(name) > 63 or not _NAME.match(name) or (_sep and (len(prefix) > 253 or not _PREFIX.match(prefix))):
        return 'key %s is not a taint key such as example.com/maintenance' % show(key)
    return None


def toleration_problems(entries, field, effects=POD_TAINT_EFFECTS):
    """(field, sentence) for every entry of an allow list that is not {key, effect (optional)}."""
    if not isinstance(entries, (list, tuple)):
        return [(field, 'must be a list of {key, effect} entries, got %s' % show(entries))]
    problems = []
    for index, entry in enumerate(entries):
        where = '%s[%d]' % (field, index)
        if not isinstance(entry, dict):
            problems.append((where, 'must be a mapping with a key (and an effect), got %s' % show(entry)))
            continue
        unknown = sorted(str(name) for name in entry if name not in ('key', 'effect'))
        if unknown:
            problems.append((where, 'has %s; an entry has only key and effect' % ', '.join(unknown)))
        problem = _key_problem(entry.get('key'))
        if problem:
            problems.append((where, problem))
        effect = entry.get('effect')
        if effect not in (None, '') and effect not in effects:
            problems.append((where, 'effect %s is not one of %s (or leave it out for any)'
                             % (show(effect), ', '.join(effects))))
    return problems


def allow_list(entries, field, effects=POD_TAINT_EFFECTS, always=()):
    """The entries as [{'key', 'effect'}] (effect '' for any), always first, duplicates dropped; ValueError naming
    the first bad entry."""
    problems = toleration_problems(list(entries or []), field, effects)
    if problems:
        raise ValueError('%s: %s' % problems[0])
    result = []
    for entry in list(always) + list(entries or []):
        item = {'key': entry['key'], 'effect': entry.get('effect') or ''}
        if item not in result:
            result.append(item)
    return result


def _cel_allowed(entries):
    return '[%s]' % ', '.join("{'key': '%s', 'effect': '%s'}" % (e['key'], e['effect']) for e in entries)


def _describe(entries):
    return ', '.join('%s (%s)' % (e['key'], e['effect'] or 'any effect') for e in entries) or 'none'


ALLOWED = ("variables.allowed.exists(a, has(%(t)s.key) && %(t)s.key == a.key && (a.effect == '' || "
           "(has(%(t)s.effect) && %(t)s.effect == a.effect)))")


def _present(spec):
    """has() of every optional step of the CEL path spec below object (object.spec.template.spec: 3 steps)."""
    steps = spec.split('.')
    return ' && '.join('has(%s)' % '.'.join(steps[:depth]) for depth in range(2, len(steps) + 1))


def _placement_policy(name, what, rules, spec, allowed, pods=False):
    present = _present(spec)
    tolerated = ALLOWED % {'t': 't'}
    refused = ("variables.tolerations.filter(t, !(%s)).map(t, has(t.key) && t.key != '' ? t.key : "
               "'(no key: every taint)').join(', ')" % tolerated)
    node_name = '!has(%s.nodeName) || %s.nodeName == \'\'' % (spec, spec)
    if pods:  # a pod is bound to its node by an update of nodeName through pods/binding: only its creation counts
        node_name = "request.operation != 'CREATE' || " + node_name
    validations = [
        {'expression': '!(%s) || %s' % (present, node_name), 'reason': 'Forbidden',
         'message': '%s of a workshop seat may not set spec.nodeName: the scheduler places the seats\' pods, on the '
                    'nodes the instructor allows. Use a nodeSelector to ask for a node.' % what},
        {'expression': 'variables.tolerations.all(t, %s)' % tolerated, 'reason': 'Forbidden',
         'messageExpression': "'%s of a workshop seat may tolerate only the taints the instructor allows (%s), not ' "
                              "+ %s" % (what, _describe(allowed), refused)},
    ]
    if not pods and spec.startswith('object.spec.template'):
        validations.append({
            'expression': "request.resource.resource != 'daemonsets'", 'reason': 'Forbidden',
            'message': 'workshop seats may not create DaemonSets: their controller makes every pod tolerate '
                       'cordoned nodes and nodes under disk, memory or PID pressure. Use a Deployment.'})
    return policy_object(
        name, 'The pods of a workshop seat are placed by the scheduler and tolerate only the allowed taints: %s.'
        % _describe(allowed), rules, validations,
        variables=[{'name': 'allowed', 'expression': _cel_allowed(allowed)},
                   {'name': 'tolerations',
                    'expression': '(%s) && has(%s.tolerations) ? %s.tolerations : []' % (present, spec, spec)}])


def pod_placement_policies(extra_tolerations=()):
    """Seat pods, and the pod templates of the controllers seats may create, set no nodeName and tolerate only
    DEFAULT_POD_TOLERATIONS and extra_tolerations (workshop_users_pod_tolerations)."""
    allowed = allow_list(extra_tolerations, 'pod_tolerations', POD_TAINT_EFFECTS, DEFAULT_POD_TOLERATIONS)
    return [
        _placement_policy(POD_PLACEMENT_POLICY, 'A pod', resource_rules('', ['pods'], ['CREATE', 'UPDATE']),
                          'object.spec', allowed, pods=True),
        _placement_policy(TEMPLATE_PLACEMENT_POLICY, 'The pod template',
                          grouped_rules(POD_TEMPLATE_OWNERS, ['CREATE', 'UPDATE']), 'object.spec.template.spec',
                          allowed),
        _placement_policy(CRONJOB_PLACEMENT_POLICY, 'The pod template',
                          resource_rules('batch', ['cronjobs'], ['CREATE', 'UPDATE']),
                          'object.spec.jobTemplate.spec.template.spec', allowed),
    ]


def _claim_tolerations_policy(name, resource, kind, spec, allowed):
    tolerated = ALLOWED % {'t': 't'}
    requests = 'has(%s.devices) && has(%s.devices.requests) ? %s.devices.requests : []' % (spec, spec, spec)
    check = ("variables.requests.all(r, (!has(r.exactly) || !has(r.exactly.tolerations) || "
             "r.exactly.tolerations.all(t, %s)) && (!has(r.firstAvailable) || r.firstAvailable.all(s, "
             "!has(s.tolerations) || s.tolerations.all(t, %s))))" % (tolerated, tolerated))
    return policy_object(
        name, 'A %s of a workshop seat tolerates only the allowed device taints: %s.' % (kind, _describe(allowed)),
        resource_rules('resource.k8s.io', [resource], ['CREATE', 'UPDATE']),
        [{'expression': check, 'reason': 'Forbidden',
          'message': 'a %s of a workshop seat may tolerate only the device taints the instructor allows (%s): a '
                     'device the instructor tainted is out of service for the seats.' % (kind, _describe(allowed))}],
        variables=[{'name': 'allowed', 'expression': _cel_allowed(allowed)},
                   {'name': 'requests', 'expression': requests}])


def claim_toleration_policies(device_tolerations=()):
    """Seat claims and claim templates tolerate only the device taints of device_tolerations
    (workshop_users_device_tolerations)."""
    allowed = allow_list(device_tolerations, 'device_tolerations', DEVICE_TAINT_EFFECTS)
    return [
        _claim_tolerations_policy(CLAIM_TOLERATIONS_POLICY, 'resourceclaims', 'ResourceClaim', 'object.spec', allowed),
        _claim_tolerations_policy(CLAIM_TEMPLATE_TOLERATIONS_POLICY, 'resourceclaimtemplates', 'ResourceClaimTemplate',
                                  'object.spec.spec', allowed),
    ]


def placement_policies(pod_tolerations=(), device_tolerations=()):
    """Every placement and toleration policy, then their bindings."""
    policies = pod_placement_policies(pod_tolerations) + claim_toleration_policies(device_tolerations)
    return policies + [binding_object(name) for name in POLICY_NAMES]
