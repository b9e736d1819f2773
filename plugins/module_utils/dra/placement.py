# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a claim's pod may run: node selectors (nodeSelector terms of slices and pods, the pod's required node
affinity), node readiness, unschedulable nodes and the NoSchedule/NoExecute taints the pod does not tolerate."""

from __future__ import annotations

from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta, object_name


UNTOLERATED_EFFECTS = ('NoSchedule', 'NoExecute')


def _requirement_matches(requirement, values_of):
    key, operator = requirement.get('key'), requirement.get('operator')
    values = [str(v) for v in requirement.get('values') or []]
    present, value = values_of(key)
    if operator == 'In':
        return present and value in values
    if operator == 'NotIn':
        return not present or value not in values
    if operator == 'Exists':
        return present
    if operator == 'DoesNotExist':
        return not present
    if operator in ('Gt', 'Lt') and present and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if operator == 'Gt' else left < right
    return False


def node_selector_matches(selector, node):
    """Whether a v1 NodeSelector (nodeSelectorTerms, ORed) selects a Node object."""
    labels = object_meta(node).get('labels') or {}
    fields = {'metadata.name': object_name(node)}

    def label(key):
        return (key in labels, str(labels.get(key, '')))

    def field(key):
        return (key in fields, str(fields.get(key, '')))

    for term in (selector or {}).get('nodeSelectorTerms') or []:
        expressions = term.get('matchExpressions') or []
        field_reqs = term.get('matchFields') or []
        if not expressions and not field_reqs:
            continue
        if all(_requirement_matches(r, label) for r in expressions) and \
                all(_requirement_matches(r, field) for r in field_reqs):
            return True
    return False


def tolerated(taint, tolerations):
    for toleration in tolerations or []:
        if toleration.get('effect') and toleration.get('effect') != taint.get('effect'):
            continue
        operator = toleration.get('operator') or 'Equal'
        if not toleration.get('key'):
            if operator == 'Exists':
                return True
            continue
        if toleration.get('key') != taint.get('key'):
            continue
        if operator == 'Exists' or str(toleration.get('value') or '') == str(taint.get('value') or ''):
            return True
    return False


# What the DefaultTolerationSeconds admission plugin adds to every pod that has none of its own: a claim
# whose pod does not exist yet is judged as that pod will be created.
DEFAULT_TOLERATIONS = (
    {'key': 'node.kubernetes.io/not-ready', 'operator': 'Exists', 'effect': 'NoExecute', 'tolerationSeconds': 300},
    {'key': 'node.kubernetes.io/unreachable', 'operator': 'Exists', 'effect': 'NoExecute', 'tolerationSeconds': 300},
)


def node_blocker(node, pod=None):
    """Why a pod cannot run on a node (a short phrase), or None if it can."""
    cond = next((c for c in (node.get('status') or {}).get('conditions') or [] if c.get('type') == 'Ready'), None)
    if not cond or cond.get('status') != 'True':
        return 'NotReady'
    spec = node.get('spec') or {}
    if spec.get('unschedulable'):
        return 'cordoned (unschedulable)'
    tolerations = DEFAULT_TOLERATIONS if pod is None else (pod.get('spec') or {}).get('tolerations') or []
    for taint in spec.get('taints') or []:
        if taint.get('effect') in ('NoSchedule', 'NoExecute') and not tolerated(taint, tolerations):
            value = '=' + taint['value'] if taint.get('value') else ''
            return 'tainted %s%s:%s' % (taint.get('key'), value, taint.get('effect'))
    if pod is not None:
        pod_spec = pod.get('spec') or {}
        wanted = pod_spec.get('nodeName')
        if wanted and wanted != object_name(node):
            return 'not the pod\'s nodeName %s' % wanted
        labels = object_meta(node).get('labels') or {}
        for key, value in (pod_spec.get('nodeSelector') or {}).items():
            if str(labels.get(key)) != str(value) or key not in labels:
                return 'not selected by the pod\'s nodeSelector %s=%s' % (key, value)
        required = ((pod_spec.get('affinity') or {}).get('nodeAffinity') or {}).get(
            'requiredDuringSchedulingIgnoredDuringExecution')
        if required and not node_selector_matches(required, node):
            return 'not selected by the pod\'s node affinity'
    return None


class ByNode:
    """devices grouped once by the node each is bound to, so the devices a node reaches are found without testing
    every device for every node (the explainer asks for every node, for every pending claim). Order kept."""

    def __init__(self, devices):
        self.bound = defaultdict(list)
        self.unbound = []  # allNodes or a nodeSelector: tested per node
        for position, device in enumerate(devices):
            if device.node:
                self.bound[device.node].append((position, device))
            else:
                self.unbound.append((position, device))

    def reachable_from(self, node_name, node_obj):
        """The devices reachable from the node, in the order they were given (as _Device.reachable_from filters)."""
        found = self.bound.get(node_name, [])
        if self.unbound:
            found = sorted(found + [entry for entry in self.unbound if entry[1].reachable_from(node_name, node_obj)],
                           key=lambda entry: entry[0])
        return [device for _position, device in found]
