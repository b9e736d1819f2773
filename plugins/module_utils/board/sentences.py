# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sentences of a board as data: text with the ages it names kept as absolute times.

dra_health and the explainer word their sentences at one time, with ages in
them ("created 2h40m ago", "gpu-3 on node1 by user07/gpu-x7k2p for 12m"). The board keeps
such a sentence as a list of parts: strings, and {'since': RFC 3339 time} where
an age stood, so the board's state does not change while only the clock moves
on; the page writes each age back against its own clock (board_page.words), in
the same words (format_age).

Only ages whose time the board knows become parts: the explainer's holders (the
holder claim's creation), a stale claim's age (its creation) and a kubelet
plugin's last restart (its container's finishedAt). Any other text stays as it is.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import holder_phrase
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, parse_time
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta

SINCE = 'since'
# How diagnosis.holder_phrase's before ends: the holder's age follows.
HOLDER_AGE_AFTER = ' for '


def parts(text, phrases):
    """text as parts, every phrase (before, age text, after, time) in it written before, {'since': time}, after."""
    found = []
    for before, age, after, stamp in phrases:
        literal = before + age + after
        start = text.find(literal)
        while start >= 0:
            found.append((start, start + len(literal), before, after, stamp))
            start = text.find(literal, start + len(literal))
    return _assembled(text, found)


class HolderPhrases:
    """The holders' phrases of many sentences (800 holders when 100 nodes' GPUs are in use) found in one pass over a
    sentence: a holder's phrase (diagnosis.holder_phrase) always ends its before with HOLDER_AGE_AFTER, so only
    where a sentence has those words can one end, and the befores are looked up by their length there."""

    def __init__(self, phrases):
        self.phrases = phrases
        self.by_before = {}
        for phrase in phrases:
            self.by_before.setdefault(phrase[0], []).append(phrase)
        self.lengths = sorted(set(len(before) for before in self.by_before))
        self.regular = all(before.endswith(HOLDER_AGE_AFTER) for before in self.by_before)

    def parts(self, text):
        """The same parts as parts(text, phrases)."""
        if not self.regular:
            return parts(text, self.phrases)
        found = []
        end = text.find(HOLDER_AGE_AFTER)
        while end >= 0:
            end += len(HOLDER_AGE_AFTER)
            for length in self.lengths:
                for before, age, after, stamp in self.by_before.get(text[max(end - length, 0):end], ()):
                    if end - length >= 0 and text.startswith(age + after, end):
                        found.append((end - length, end + len(age + after), before, after, stamp))
            end = text.find(HOLDER_AGE_AFTER, end - 1)
        return _assembled(text, found)


def _assembled(text, found):
    """text with the found phrases (start, end, before, after, time) as parts; of overlapping ones the first."""
    out, at = [], 0
    for start, end, before, after, stamp in sorted(found):
        if start < at:
            continue  # overlaps a phrase already taken
        out.extend([text[at:start] + before, {SINCE: stamp}])
        out.append(after)
        at = end
    out.append(text[at:])
    return _joined(out)


def _joined(items):
    """Adjacent strings as one, empty ones dropped."""
    out = []
    for item in items:
        if isinstance(item, str) and out and isinstance(out[-1], str):
            out[-1] += item
        elif item != '':
            out.append(item)
    return out


class Sentences:
    """The board's sentences of one lab state at one time: the explainer's answers and dra_health's problems."""

    def __init__(self, objects, explanations, now):
        self.now = now
        self.created = {}
        for claim in objects['claims']:
            meta = object_meta(claim)
            self.created['%s/%s' % (meta.get('namespace'), meta.get('name'))] = meta.get('creationTimestamp')
        self.pods = dict(('%s/%s' % (object_meta(p).get('namespace'), object_meta(p).get('name')), p)
                         for p in objects['pods'])
        self.answers = dict((answer['claim'], answer) for answer in explanations)
        self.known = {}  # explainer sentence -> its parts (9,000 claims waiting alike share one sentence)
        # id of an answer's request rows -> (the rows, their holders' phrases): claims that ask alike share the
        # explainer's rows, and so their holders (800 of them each, when 100 nodes' GPUs are in use).
        self.phrases = {}

    def explained(self, ref, sentence):
        """The parts of an explainer's sentence about claim ref (the ages of the holders it names)."""
        if sentence not in self.known:
            self.known[sentence] = self._holders(self.answers.get(ref) or {}).parts(sentence)
        return list(self.known[sentence])

    def _holders(self, answer):
        rows = answer.get('requests') or ()
        key = tuple(id(row) for row in rows)
        kept = self.phrases.get(key)
        if kept is not None and all(mine is theirs for mine, theirs in zip(kept[0], rows)):
            return kept[1]
        phrases = []
        for row in rows:
            for holder in row.get('holders') or ():
                stamp = self.created.get(holder.get('claim'))
                if holder.get('age') and stamp:
                    before, age, after = holder_phrase(holder)
                    phrases.append((before, age, after, stamp))
        self.phrases[key] = (rows, HolderPhrases(phrases))
        return self.phrases[key][1]

    def pending(self, row):
        """The parts of a waiting claim's sentence (a report's claim row)."""
        ref = '%s/%s' % (row['namespace'], row['name'])
        if row['explain_sentence']:
            return self.explained(ref, row['explain_sentence'])
        return parts(row['pending_reason'] or '', ())

    def problem(self, problem):
        """The parts of a problem's reason."""
        reason = problem.get('reason') or ''
        sentence = problem.get('explain_sentence')
        if sentence and reason.endswith(sentence):
            ref = '%s/%s' % (problem.get('namespace'), problem.get('name'))
            return _joined([reason[:len(reason) - len(sentence)]] + self.explained(ref, sentence))
        return parts(reason, self._problem_phrases(problem))

    def _problem_phrases(self, problem):
        ref = '%s/%s' % (problem.get('namespace'), problem.get('name'))
        if problem['type'] == 'claim_allocated_unused' and self.created.get(ref):
            return [('claim %s was created ' % ref, format_age(problem.get('age_seconds')), ' ago',
                     self.created[ref])]
        if problem['type'] == 'driver_plugin_restarted' and problem.get('pod') in self.pods:
            return [('(pod %s) ended ' % problem['pod'], self._age(stamp), ' ago', stamp)
                    for stamp in _finished(self.pods[problem['pod']])]
        return []

    def _age(self, stamp):
        return format_age((self.now - parse_time(stamp)).total_seconds())


def _finished(pod):
    """When the pod's containers last ended (lastState.terminated.finishedAt), each readable time."""
    statuses = (pod.get('status') or {}).get('containerStatuses') or []
    stamps = [((c.get('lastState') or {}).get('terminated') or {}).get('finishedAt') for c in statuses]
    return [s for s in stamps if parse_time(s) is not None]
