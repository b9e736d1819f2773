# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One diagnosis per situation of a claim without devices: what the room is told, in the same words by dra_health,
the board and can-has-gpu.

The explainer (dra/explain_claim.py) finds the cause (a reason code of dra/explain.py REASONS and a sentence); here
it becomes a verdict (it never fits as asked, it waits for devices in use, ...), the action that follows (wait and
how long, change the request and how, ask the instructor, nothing) and the one sentence that says both. A claim
that waits names who holds the devices it waits for: a seat's claim (namespace/claim, with its lease end), or
"in use outside the seats" for any other namespace, whose names a seat may not see. The scheduler's own message is
evidence, kept apart (`scheduler_message`), never glued into the sentence.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import condition
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_time

# verdict: (action, headline). Actions: nothing, wait, change (the request), instructor (ask the instructor).
# The headline completes "the claim ...": "claim user01/big is pending (...) and never fits as asked: ...".
VERDICTS = {
    'allocated': ('nothing', 'has its devices'),
    'fits_now': ('wait', 'fits now'),
    'waits': ('wait', 'waits for a device in use'),
    'never_fits': ('change', 'never fits as asked'),
    'blocked': ('instructor', 'is blocked (ask the instructor)'),
    'over_quota': ('change', 'is over the quota'),
    'undecided': ('wait', 'is undecided'),
    'claim_missing': ('change', 'waits for a claim that does not exist'),
    'refused': ('change', 'waits for a claim the API refused to make'),
    'claim_elsewhere': ('change', "cannot go where its claim's devices are"),
    'gated': ('wait', 'waits for its scheduling gates'),
    'other_scheduler': ('change', 'waits for a scheduler that does not run'),
    'pod_unschedulable': ('change', 'fits, but its pod fits no node'),
}

# The verdict of each reason code of dra/explain.py REASONS; None: whether the claim fits once the devices in use
# are free decides (never_fits, else waits).
REASON_VERDICTS = {
    'allocated': 'allocated', 'allocatable': 'fits_now', 'no_such_class': 'never_fits',
    'invalid_selector': 'never_fits', 'selector_runtime_error': 'never_fits', 'no_matching_device': 'never_fits',
    'too_few_per_node': 'never_fits', 'pool_incomplete': 'blocked', 'nodes_not_ready': 'blocked',
    'all_matching_tainted': 'blocked', 'all_matching_in_use': 'waits', 'constraint_unsatisfiable': None,
    'requests_do_not_fit': None, 'quota_exceeded': 'over_quota', 'search_limit': 'undecided',
}

# What to do, per reason code, when the explainer has no more precise advice.
ADVICE = {
    'no_such_class': 'Change the request: name one of those classes.',
    'invalid_selector': 'Change the request: fix the selector.',
    'selector_runtime_error': 'Change the request: fix the selector so that it works on every device of its class.',
    'no_matching_device': 'Change the request: ask for what the published devices offer.',
    'too_few_per_node': 'Change the request: ask for fewer devices in one claim.',
    'constraint_unsatisfiable': 'Change the request: drop the matchAttribute constraint, or the selectors that keep '
                                'the devices apart.',
    'requests_do_not_fit': 'Change the request: ask for fewer devices in one claim (they must all be on one node).',
    'pool_incomplete': 'Wait a few seconds while the driver publishes its devices again; ask the instructor if it '
                       'lasts.',
    'nodes_not_ready': 'Ask the instructor: those nodes cannot take the pod now.',
    'all_matching_tainted': 'Ask the instructor when the taint is lifted, or whether the request may tolerate it.',
    'quota_exceeded': 'Release a claim of the namespace first (kubectl get resourceclaims lists them).',
    'search_limit': 'Wait: the scheduler may still find devices; if the claim stays pending, ask for fewer.',
}

FITS_NOW = 'Wait a few seconds: the scheduler allocates it at its next try.'
FITS_WITHOUT_POD = 'It gets its devices when a pod uses it; no pod does yet.'
NO_POD = 'No pod uses this claim yet: the scheduler allocates a claim only for a pod.'
OUTSIDE_SEATS = 'in use outside the seats'
# A pod with spec.schedulingGates is not tried by the scheduler at all until they are removed (by whoever added them).
GATED = ('The scheduler does not try pod %s while it has the scheduling gate%s %s: whoever added %s (a queue such '
         'as Kueue, an operator) removes %s when the pod may start; ask the instructor if %s stay%s.')

# The schedulerName of the pods the lab's kube-scheduler tries (its one profile); a pod naming any other scheduler is
# never tried, whatever its claims: no PodScheduled condition, no event, the claim stays pending.
LAB_SCHEDULERS = ('default-scheduler',)
OTHER_SCHEDULER = ("The lab's scheduler (%s) never tries pod %s: its schedulerName is %s, a scheduler that does not "
                   "run in the lab. Change the pod: drop its schedulerName (or set it to %s); ask the instructor if %s "
                   "should run.")

# A pod whose claim fits now but whom the scheduler places on no node for reasons of its own (cpu, memory, pods,
# ports, inter-pod affinity, topology spread, volumes: what the explainer does not model), in the scheduler's words.
POD_UNSCHEDULABLE = ('%s, but the scheduler finds no node for pod %s itself: %s.')
POD_UNSCHEDULABLE_ADVICE = ("Change the pod: ask for what a node has room for (its cpu, memory and ports) and relax "
                            "its affinity and spread rules; ask the instructor if the nodes should have room.")
# The scheduler's words for a node its DRA filter refused (the claims), as opposed to every other filter.
CLAIM_FILTER_WORDS = ('cannot allocate all claims', 'resourceclaim', 'dynamicresources')

# The holders a sentence names; the others are counted.
HOLDERS_IN_SENTENCE = 3


def holder_phrase(holder):
    """(before, age, after): a holder of a device as the sentences name it, its age apart (the board keeps the age
    as a time). A seat's claim by namespace/claim with its lease end; any other claim as in use outside the seats."""
    where = holder.get('node') or holder.get('pool')
    if holder.get('seat'):
        before = '%s on %s by %s for ' % (holder['device'], where, holder['claim'])
        after = ' (lease until %s)' % holder['lease_until'] if holder.get('lease_until') else ''
    else:
        before, after = '%s on %s %s for ' % (holder['device'], where, OUTSIDE_SEATS), ''
    stuck = holder.get('stuck') or []
    if stuck:  # its pod is being deleted on a node that does not answer: no lease end frees it
        pods = ', '.join('%s %s' % ('pod %s/%s' % (holder['namespace'], s['pod']) if holder.get('seat') else 'its pod',
                                    s['why']) for s in stuck)
        after += ', held while %s (only a forced deletion of the pod frees it: ask the instructor)' % pods
    elif holder.get('node_blocked'):  # the pod cannot go to that node now, so its release does not help
        after += ', on a node the pod cannot use now (%s is %s)' % (where, holder['node_blocked'])
    return before, holder.get('age') or 'unknown time', after


def holders_text(holders):
    """The first HOLDERS_IN_SENTENCE holders in words, and how many more."""
    shown = [''.join(holder_phrase(h)) for h in holders[:HOLDERS_IN_SENTENCE]]
    more = len(holders) - len(shown)
    return ', '.join(shown) + (', and %d more' % more if more > 0 else '')


def first_lease(holders):
    """The holder whose lease ends first (seat claims only, not those held by a pod stuck being deleted nor those on a
    node the pod cannot use now), or None."""
    leased = [h for h in holders if h.get('seat') and not h.get('stuck') and not h.get('node_blocked')
              and parse_time(h.get('lease_until')) is not None]
    return min(leased, key=lambda h: parse_time(h['lease_until'])) if leased else None


def wait_advice(holders, now=None):
    """How long a claim that waits for these holders waits: until one is released, the first lease end at the latest."""
    first = first_lease(holders)
    if first is None:
        return 'Wait until one of them is released (no lease ends theirs by itself).'
    if now is not None and parse_time(first['lease_until']) <= now:
        return ('Wait until one of them is released: the lease of %s ended at %s, so the lease reaper releases it '
                'within seconds.' % (first['claim'], first['lease_until']))
    return 'Wait until one of them is released: the first of their leases ends at %s (%s).' % (
        first['lease_until'], first['claim'])


def gated_advice(pod_ref, gates):
    """What a claim whose pod has scheduling gates waits for."""
    many = len(gates) > 1
    return GATED % (pod_ref, 's' if many else '', ', '.join(gates), 'them' if many else 'it', 'them' if many else 'it',
                    'they' if many else 'it', '' if many else 's')


def other_scheduler(pod):
    """The schedulerName of a pod when it names a scheduler the lab does not run (LAB_SCHEDULERS), else None."""
    name = ((pod or {}).get('spec') or {}).get('schedulerName')
    return name if name and name not in LAB_SCHEDULERS else None


def other_scheduler_advice(pod_ref, scheduler):
    """What a claim whose pod names a scheduler that does not run waits for."""
    return OTHER_SCHEDULER % (LAB_SCHEDULERS[0], pod_ref, scheduler, LAB_SCHEDULERS[0], scheduler)


def pod_blockers(said):
    """The reasons of a scheduler message ("0/3 nodes are available: 3 Insufficient cpu. preemption: ...") that are
    not about the pod's claims, when they keep it off every node (their node counts add up to all the nodes); else
    []. A message that names the claims for some nodes may be older than the devices freed since: then []."""
    if not said or not said.startswith('0/') or ': ' not in said:
        return []
    try:
        total = int(said[2:].split(' ', 1)[0])
    except ValueError:
        return []
    # The reasons end with the first sentence; then "preemption: ..." or "still not schedulable, preemption: ...".
    reasons = [part.strip() for part in said.split(': ', 1)[1].split('. ', 1)[0].rstrip('.').split(', ')]
    others = [part for part in reasons if part and not any(w in part.lower() for w in CLAIM_FILTER_WORDS)]
    counted = 0
    for part in others:
        number = part.split(' ', 1)[0]
        counted += int(number) if number.isdigit() else 0
    return others if len(others) == len(reasons) and counted >= total > 0 else []


def diagnose(reason, cause, advice=None, verdict=None, holders=(), has_pod=True, now=None, gated=None, scheduler=None,
             unschedulable=None):
    """The diagnosis of a claim: verdict, action, headline, cause, advice and the sentence of both.

    reason: a reason code of REASON_VERDICTS; cause: the explainer's sentence; advice / verdict: the explainer's
    own when it knows better than the reason code; holders: who holds the devices a waiting claim waits for
    (the explainer's holder rows); has_pod: whether a pod uses the claim; now: aware datetime (a lease that ended);
    gated: (pod namespace/name, [scheduling gate names]) of the claim's pod when it has gates: a claim that would
    fit (now or once devices are free) waits for them, as the scheduler does not try the pod before; scheduler:
    (pod namespace/name, schedulerName) of the claim's pod when it names a scheduler the lab does not run
    (other_scheduler): such a claim waits for ever, gates or not, and whatever blocks the lab's nodes for now, so
    this verdict comes first (a claim that never fits as asked is still told so); unschedulable: (pod namespace/name,
    pod_blockers of its scheduler message) when the scheduler places that pod on no node for reasons of its own: a
    claim that fits now is told that its pod does not (pod_unschedulable).
    """
    verdict = verdict or REASON_VERDICTS.get(reason) or 'undecided'
    holders = list(holders)
    if scheduler and scheduler[1] and verdict in ('fits_now', 'waits', 'undecided', 'blocked'):
        verdict, advice = 'other_scheduler', other_scheduler_advice(*scheduler)
    elif gated and gated[1] and verdict in ('fits_now', 'waits', 'undecided'):
        verdict, advice = 'gated', gated_advice(*gated)
    elif unschedulable and unschedulable[1] and verdict == 'fits_now':
        verdict, advice = 'pod_unschedulable', POD_UNSCHEDULABLE_ADVICE
        cause = POD_UNSCHEDULABLE % (cause.rstrip('.'), unschedulable[0], ', '.join(unschedulable[1]))
    if advice is None:
        if verdict == 'waits':
            advice = wait_advice(holders, now)
        elif verdict == 'fits_now':
            advice = FITS_NOW if has_pod else FITS_WITHOUT_POD
        else:
            advice = ADVICE.get(reason, '')
    if verdict == 'waits' and not has_pod:
        advice = '%s %s' % (advice, NO_POD)
    action, headline = VERDICTS[verdict]
    first = first_lease(holders) if verdict == 'waits' else None
    return {'verdict': verdict, 'action': action, 'headline': headline, 'cause': cause, 'advice': advice,
            'sentence': ('%s %s' % (cause, advice)).strip(),
            'first_lease_end': first['lease_until'] if first else None,
            'first_lease_claim': first['claim'] if first else None}


def scheduler_message(pod):
    """What the scheduler last said about a pod it could not schedule (PodScheduled False), or None."""
    cond = condition(pod or {}, 'PodScheduled')
    if cond and cond.get('status') == 'False' and cond.get('message'):
        return cond['message'].strip()
    return None
