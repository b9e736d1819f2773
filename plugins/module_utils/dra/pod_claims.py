# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pods that wait for a ResourceClaim or a ResourceClaimTemplate that does not exist.

The kube-scheduler keeps such a pod out of its queue without a word (no PodScheduled condition, no
FailedScheduling event: its DRA plugin refuses it before scheduling), and no claim of it is pending, so neither the
claims nor the scheduler tell anybody: a typo in resourceClaimName or resourceClaimTemplateName, or a claim made in
another namespace (a pod only uses claims of its own), leaves the pod Pending for ever. `missing_claims` finds them
from the pods, claims and templates as the API serves them, each with the one sentence dra_health, the board and
can-has-gpu say (dra/diagnosis.py verdict claim_missing).
"""

from __future__ import annotations

import os
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import VERDICTS
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import TERMINATED_PHASES
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import join_names, natural_key
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta

VERDICT = 'claim_missing'
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
    """Whether a pod waits to be scheduled: not bound to a node, not finished, not being deleted."""
    meta = object_meta(pod)
    return not ((pod.get('spec') or {}).get('nodeName') or meta.get('deletionTimestamp')
                or (pod.get('status') or {}).get('phase') in TERMINATED_PHASES)


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
