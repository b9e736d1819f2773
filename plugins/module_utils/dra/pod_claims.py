# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pods that wait for their claims, which no pending claim tells: a ResourceClaim or a ResourceClaimTemplate that
does not exist (`missing_claims`), a claim from a template that the API refused to make (quota, admission policy:
`refused_claims`), a claim allocated on nodes the pod cannot go to (a claim shared with a pod on another node:
`unreachable_claims`). `pods_waiting` gives all three, each finding with its problem type for dra_health.

The kube-scheduler keeps such a pod out of its queue without a word (no PodScheduled condition, no
FailedScheduling event: its DRA plugin refuses it before scheduling), and no claim of it is pending, so neither the
claims nor the scheduler tell anybody: a typo in resourceClaimName or resourceClaimTemplateName, or a claim made in
another namespace (a pod only uses claims of its own), leaves the pod Pending for ever. `missing_claims` finds them
from the pods, claims and templates as the API serves them, each with the one sentence dra_health, the board and
can-has-gpu say (dra/diagnosis.py verdict claim_missing).
"""

from __future__ import annotations

import datetime
import os
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import VERDICTS
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import TERMINATED_PHASES, event_time, has_gate
from ansible_collections.dralab.workshop.plugins.module_utils.dra.placement import node_blocker, node_selector_matches
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import join_names, natural_key
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta, object_name
from ansible_collections.dralab.workshop.plugins.module_utils.values import WAITLIST_GATE, parse_time

VERDICT = 'claim_missing'
# The resource claim controller makes a pod's claim from its template within a second; a pod older than this
# without it was refused (or the controller is not running).
CLAIM_MAKING_SECONDS = 10
# The reason of the Event the resource claim controller writes on a pod whose claim it could not make.
REFUSED_EVENT = 'FailedResourceClaimCreation'
# What the event recorder puts before the message of an event that stands for several alike.
COMBINED = '(combined from similar events): '
# Why a node is closed to a pod because of the pod's own spec (placement.node_blocker): the pod can change it.
POD_BLOCKERS = ("not the pod's nodeName", "not selected by the pod's nodeSelector", "not selected by the pod's node affinity")
# The names of a namespace's claims (or templates) a sentence lists, the closest first.
NAMES_IN_SENTENCE = 5
KINDS = {'resourceClaimName': ('ResourceClaim', 'claims', 'resourceclaims'),
         'resourceClaimTemplateName': ('ResourceClaimTemplate', 'templates', 'resourceclaimtemplates')}


def _by_namespace(objects):
    names = defaultdict(set)
    for obj in objects or ():
        names[object_meta(obj).get('namespace')].add(object_meta(obj).get('name'))
    return names


def _closest(name, names):
    """The names, those sharing the longest prefix with name first (a typo's target), at most NAMES_IN_SENTENCE."""
    return sorted(names, key=lambda other: (-len(os.path.commonprefix([name or '', other])),
                                            natural_key(other)))[:NAMES_IN_SENTENCE]


def _waiting(pod):
    """Whether a pod waits to be scheduled: not bound to a node, not finished, not being deleted, not in the GPU
    waitlist (its claim is made when its turn comes: seat/waitlist.py)."""
    meta = object_meta(pod)
    spec = pod.get('spec') or {}
    return not (spec.get('nodeName') or meta.get('deletionTimestamp')
                or (pod.get('status') or {}).get('phase') in TERMINATED_PHASES
                or has_gate(pod, WAITLIST_GATE))


def missing_claims(pods, claims, templates=None):
    """Every pod waiting for a claim or template that does not exist in its namespace, one finding per such entry.

    templates None: the ResourceClaimTemplates were not read, so template entries are not judged. A template entry
    whose claim was made already (status.resourceClaimStatuses) is fine: the template is needed only to make it.

    A finding: namespace, pod, entry (the pod's resourceClaims name), kind (ResourceClaim or ResourceClaimTemplate),
    missing (the name asked for), elsewhere (other namespaces that have one of that name), verdict, action, sentence.
    """
    claim_names = _by_namespace(claims)
    known = {'resourceClaimName': claim_names,
             'resourceClaimTemplateName': _by_namespace(templates) if templates is not None else None}
    findings = []
    for pod in sorted(pods or (), key=lambda p: (object_meta(p).get('namespace') or '', object_meta(p).get('name') or '')):
        if not _waiting(pod):
            continue
        meta = object_meta(pod)
        ns = meta.get('namespace')
        made = dict((s.get('name'), s.get('resourceClaimName'))
                    for s in (pod.get('status') or {}).get('resourceClaimStatuses') or [])
        for entry in (pod.get('spec') or {}).get('resourceClaims') or []:
            for field, names in known.items():
                wanted = entry.get(field)
                if not wanted or names is None or wanted in names.get(ns, ()):
                    continue
                if field == 'resourceClaimTemplateName' and made.get(entry.get('name')) in claim_names.get(ns, ()):
                    continue
                elsewhere = sorted((other for other, found in names.items() if other != ns and wanted in found),
                                   key=natural_key)
                findings.append(_finding(ns, meta.get('name'), entry.get('name'), field, wanted,
                                         sorted(names.get(ns, ())), elsewhere))
    return findings


def _finding(ns, pod, entry, field, wanted, present, elsewhere):
    kind, plural_word, resource = KINDS[field]
    there = ''
    if elsewhere:
        there = ('; namespace%s %s %s one, but a pod can only use a %s of its own namespace'
                 % ('s' if len(elsewhere) > 1 else '', join_names(elsewhere[:3]) + (' ...' if len(elsewhere) > 3 else ''),
                    'have' if len(elsewhere) > 1 else 'has', kind))
    listed = ('the %s of %s: %s' % (plural_word, ns, ', '.join(_closest(wanted, present))
                                    + (' ...' if len(present) > NAMES_IN_SENTENCE else '')) if present
              else '%s has no %s' % (ns, plural_word))
    sentence = ('pod %s/%s waits for %s %s (its resourceClaims entry %s), which does not exist in namespace %s%s, so '
                'the pod stays Pending. Create %s %s in %s, or delete the pod and create it again with the '
                'right %s (%s; kubectl -n %s get %s).'
                % (ns, pod, kind, wanted, entry, ns, there, kind, wanted, ns, field, listed, ns, resource))
    action, headline = VERDICTS[VERDICT]
    return {'namespace': ns, 'pod': pod, 'entry': entry, 'kind': kind, 'missing': wanted, 'elsewhere': elsewhere,
            'verdict': VERDICT, 'action': action, 'headline': headline, 'sentence': sentence}


def _allocated_claims(claims):
    return dict(((object_meta(c).get('namespace'), object_meta(c).get('name')), c) for c in claims or ()
                if ((c.get('status') or {}).get('allocation')))


def _claim_of(pod, entry):
    """The name of the claim a resourceClaims entry of a pod uses: its own, or the one made from its template."""
    if entry.get('resourceClaimName'):
        return entry['resourceClaimName']
    made = dict((s.get('name'), s.get('resourceClaimName'))
                for s in (pod.get('status') or {}).get('resourceClaimStatuses') or [])
    return made.get(entry.get('name'))


def unreachable_claims(pods, claims, nodes):
    """Every pod waiting for a claim allocated on nodes it cannot go to (the claim is shared with a pod that got it on
    another node, or the pod was changed): the scheduler keeps it Pending and no claim is pending.

    A finding: namespace, pod, entry, claim, nodes (where the claim's devices are), blockers ({node: why not}),
    holders (the other pods of its reservedFor), verdict claim_elsewhere (the pod's own nodeName, nodeSelector or
    node affinity) or blocked (the node: NotReady, cordoned, tainted), action, headline, sentence.
    """
    if not nodes:
        return []
    allocated = _allocated_claims(claims)
    findings = []
    for pod in sorted(pods or (), key=lambda p: (object_meta(p).get('namespace') or '', object_meta(p).get('name') or '')):
        if not _waiting(pod):
            continue
        ns, name = object_meta(pod).get('namespace'), object_meta(pod).get('name')
        for entry in (pod.get('spec') or {}).get('resourceClaims') or []:
            claim = allocated.get((ns, _claim_of(pod, entry)))
            selector = ((claim or {}).get('status') or {}).get('allocation', {}).get('nodeSelector')
            if not selector:
                continue  # not allocated, or its devices are reachable from every node
            there = sorted((n for n in nodes if node_selector_matches(selector, n)), key=lambda n: natural_key(object_name(n)))
            blockers = dict((object_name(n), node_blocker(n, pod)) for n in there)
            if there and not all(blockers.values()):
                continue
            findings.append(_unreachable(ns, name, entry.get('name'), claim, blockers))
    return findings


def _unreachable(ns, pod, entry, claim, blockers):
    claim_name = object_meta(claim).get('name')
    holders = [r.get('name') for r in (claim.get('status') or {}).get('reservedFor') or []
               if r.get('resource') == 'pods' and r.get('name') != pod]
    where = join_names(sorted(blockers, key=natural_key)) or 'a node that does not exist any more'
    why = join_names(['%s is %s' % (node, blockers[node]) for node in sorted(blockers, key=natural_key)])
    plural = len(holders) > 1
    holder_names = join_names(['%s/%s' % (ns, h) for h in holders])
    shared = ''
    if holders:
        shared = ' (it got them for pod%s %s, which share%s it)' % (
            's' if plural else '', holder_names, '' if plural else 's')
    cause = ('pod %s/%s uses claim %s, whose devices are on %s%s, and the pod cannot go there%s.'
             % (ns, pod, claim_name, where, shared, ': ' + why if why else ''))
    if blockers and all(b.startswith(POD_BLOCKERS) for b in blockers.values()):
        verdict = 'claim_elsewhere'
        advice = ('Change the pod: let it run on %s (its nodeName, nodeSelector or node affinity), or give it a claim '
                  'of its own (a resourceClaimTemplateName) if it needs devices of its own.' % where)
    else:
        verdict = 'blocked'
        advice = ('Ask the instructor: the claim keeps its devices on %s while a pod holds it; the pod starts when '
                  'the node takes pods again.' % where)
    action, headline = VERDICTS[verdict]
    return {'problem': 'pod_claim_unreachable', 'namespace': ns, 'pod': pod, 'entry': entry, 'claim': claim_name,
            'nodes': sorted(blockers, key=natural_key), 'blockers': blockers, 'holders': holders,
            'verdict': verdict, 'action': action, 'headline': headline, 'sentence': '%s %s' % (cause, advice)}


def _refusal(events, pod):
    """The message of the newest FailedResourceClaimCreation event of a pod, or None."""
    meta = object_meta(pod)
    found = [e for e in events or () if e.get('reason') == REFUSED_EVENT
             and (e.get('involvedObject') or e.get('regarding') or {}).get('name') == meta.get('name')
             and (e.get('involvedObject') or e.get('regarding') or {}).get('namespace', meta.get('namespace')) == meta.get('namespace')]
    if not found:
        return None
    newest = max(found, key=event_time)
    message = (newest.get('message') or newest.get('note') or '').strip()
    return message[len(COMBINED):] if message.startswith(COMBINED) else message or None


def refused_claims(pods, claims, templates, events=(), now=None):
    """Every pod waiting for a claim from a template that exists but was not made CLAIM_MAKING_SECONDS after the
    pod was created: the API refused it (the namespace's quota, an admission policy; the resource claim controller
    says why in a FailedResourceClaimCreation event on the pod and retries with a growing delay) or the controller
    is not running.

    A finding: namespace, pod, entry, template, refusal (the event's message, or None), verdict refused, action,
    headline, sentence.
    """
    if templates is None:
        return []
    now = parse_time(now) if now is not None else datetime.datetime.now(datetime.timezone.utc)
    template_names = _by_namespace(templates)
    claim_names = _by_namespace(claims)
    findings = []
    for pod in sorted(pods or (), key=lambda p: (object_meta(p).get('namespace') or '', object_meta(p).get('name') or '')):
        meta = object_meta(pod)
        created = parse_time(meta.get('creationTimestamp'))
        if not _waiting(pod) or created is None or (now - created).total_seconds() < CLAIM_MAKING_SECONDS:
            continue
        ns = meta.get('namespace')
        for entry in (pod.get('spec') or {}).get('resourceClaims') or []:
            template = entry.get('resourceClaimTemplateName')
            if not template or template not in template_names.get(ns, ()):
                continue  # no template entry, or missing_claims reports it
            if _claim_of(pod, entry) in claim_names.get(ns, ()):
                continue
            findings.append(_refused(ns, meta.get('name'), entry.get('name'), template, _refusal(events, pod)))
    return findings


def _refused(ns, pod, entry, template, refusal):
    if refusal:
        cause = ('pod %s/%s waits for its claim from ResourceClaimTemplate %s (entry %s), which the API refused to '
                 'make: %s.' % (ns, pod, template, entry, refusal.rstrip('.')))
    else:
        cause = ('pod %s/%s waits for its claim from ResourceClaimTemplate %s (entry %s), which was not made: the '
                 'API refused it or the resource claim controller is not running (kubectl -n %s describe pod %s).'
                 % (ns, pod, template, entry, ns, pod))
    advice = ('Change the template to what the namespace may hold, or release a claim first if its quota is full; '
              'the controller tries again by itself, with a growing delay (delete the pod to retry at once).')
    action, headline = VERDICTS['refused']
    return {'problem': 'pod_claim_refused', 'namespace': ns, 'pod': pod, 'entry': entry, 'template': template,
            'refusal': refusal, 'verdict': 'refused', 'action': action, 'headline': headline,
            'sentence': '%s %s' % (cause, advice)}


def pods_waiting(pods, claims, templates=None, nodes=(), events=(), now=None):
    """Every pod that waits for its claim and no pending claim tells: missing_claims (problem pod_claim_missing),
    refused_claims (pod_claim_refused) and unreachable_claims (pod_claim_unreachable), in pod order."""
    found = [dict(f, problem='pod_claim_missing') for f in missing_claims(pods, claims, templates)]
    found += refused_claims(pods, claims, templates, events, now) + unreachable_claims(pods, claims, nodes)
    return sorted(found, key=lambda f: (f['namespace'] or '', natural_key(f['pod'] or '')))
