# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health report as people read it: the lines lab_health prints, and the summary dra_health returns
without per-claim detail."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.dra.health import ERROR
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import device_label, plural
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration, parse_event_time


# Without detail, more problems than this of one kind (severity, type, explainer reason, verdict) become one line,
# which gives the count and the first SHOWN_NAMES objects; so do more nodes than this in the same state.
AGGREGATE_AT = 5


SHOWN_NAMES = 5


def _groups(rows, key):
    """rows grouped by key(row), in the order each key first appears: [[row, ...], ...]."""
    groups = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return list(groups.values())


def _problem_kind(problem):
    return problem['severity'], problem['type'], problem.get('explain_reason'), problem.get('verdict')


def _evidence(problem):
    """The scheduler's own words about a problem, on a line of their own under it (evidence, not our sentence)."""
    return ['      scheduler said: %s' % problem['scheduler_said']] if problem.get('scheduler_said') else []


def _first_names(names, total):
    shown = ', '.join(names[:SHOWN_NAMES])
    return shown + (' and %d more' % (total - SHOWN_NAMES) if total > SHOWN_NAMES else '')


def _line_lines(line):
    """The GPU waitlist (board/build.py adds it to the report), one line per class: its seats in order, and who
    gets the next GPU when."""
    if not line:
        return []
    lines = ['GPU waitlist: %s in line' % plural(len(line), 'seat')]
    for rows in _groups(line, lambda row: row['device_class']):
        ordered = [row['seat'] for row in rows if row['position'] is not None]
        words = '  %s: %s' % (rows[0]['device_class'], _first_names(ordered, len(ordered)) or 'nobody in order')
        first = next((row for row in rows if row['position'] is not None), None)
        if first is not None and first['position'] == 0:
            words += '; a GPU is free for %s (its turn)' % first['seat']
        elif first is not None and first['estimate']:
            words += "; the next GPU about %s, when %s's lease ends" % (first['estimate'], first['estimate_seat'])
        at_limit = [row['seat'] for row in rows if row['position'] is None]
        if at_limit:
            words += '; at their GPU limit, behind nobody: %s' % _first_names(at_limit, len(at_limit))
        lines.append(words)
    return lines


def _node_state(node):
    state = 'not in the cluster' if node['ready'] is None else ('Ready' if node['ready'] else 'NotReady')
    return '%d/%d devices, %d slice(s), %s' % (node['published'], node['expected'], node['slices'], state)


def report_lines(report, detail=True):
    """The health report as the lab_health role prints it: a summary, one line per node, one per problem.

    Without detail, repeated problems (and nodes in the same state) share one line with their count and
    the first few names, so 9,000 pending claims take one line and every kind of problem is still named.
    What the scheduler said about a pending claim's pod follows its problem on a line of its own.
    """
    summary = report['summary']
    lines = [
        'DRA lab %s: %d error(s), %d warning(s)' % ('healthy' if report['healthy'] else 'UNHEALTHY',
                                                    summary['errors'], summary['warnings']),
        'Devices (%s): %d/%d published on %d/%d nodes, %d allocated, %d free' % (
            summary['driver'], summary['devices_published'], summary['devices_expected'],
            summary['nodes_publishing'], summary['nodes_expected'], summary['devices_allocated'],
            summary['devices_free']),
        'Claims: %d total, %d pending, %d allocated (%d in use by pods)' % (
            summary['claims_total'], summary['claims_pending'], summary['claims_allocated'],
            summary['claims_reserved']),
    ]
    lines.extend(_line_lines(report.get('waitlist') or []))
    if report.get('shared_devices'):
        lines.append('Shared devices (consumable capacity):')
    for row in report.get('shared_devices') or []:
        use = ', '.join('%s %s used, %s free of %s' % (name, item['used'], item['free'], item['total'])
                        for name, item in sorted(row['capacity'].items()))
        lines.append('  %s: %s; %s' % (device_label(row['driver'], row['pool'], row['device'], row['node']),
                                       plural(len(row['claims']), 'claim'), use or 'no capacity published'))
    lines.append('Nodes:' + ('' if report['nodes'] else ' none'))
    for nodes in _groups(report['nodes'], (lambda node: node['name']) if detail else _node_state):
        if len(nodes) <= AGGREGATE_AT:
            lines.extend('  %s: %s' % (node['name'], _node_state(node)) for node in nodes)
        else:
            lines.append('  %d nodes: %s (%s)' % (len(nodes), _node_state(nodes[0]),
                                                  _first_names([node['name'] for node in nodes], len(nodes))))
    lines.append('Problems:' + ('' if report['problems'] else ' none'))
    for problems in _groups(report['problems'], id if detail else _problem_kind):
        first = problems[0]
        count = sum(problem.get('count', 1) for problem in problems)
        if count <= AGGREGATE_AT and 'objects' not in first:
            for problem in problems:
                lines.append('  %s %s: %s' % (problem['severity'].upper(), problem['object'], problem['reason']))
                lines.extend(_evidence(problem))
            continue
        objects = first.get('objects') or [problem['object'] for problem in problems]
        lines.append('  %s %d x %s%s: %s. The first: %s' % (
            first['severity'].upper(), count, first['type'],
            ' (%s)' % ', '.join(filter(None, (first.get('explain_reason'), first.get('verdict'))))
            if first.get('explain_reason') or first.get('verdict') else '',
            _first_names(objects, count), first['reason']))
        lines.extend(_evidence(first))
    return lines


def summarize(report):
    """The report without per-claim detail: claims holding devices only, repeated problems as one each.

    A problem of a kind (see report_lines) that occurs more than AGGREGATE_AT times is kept once, with
    count (how many) and objects (the first SHOWN_NAMES); summary keeps every count.
    """
    problems = []
    for group in _groups(report['problems'], _problem_kind):
        if len(group) <= AGGREGATE_AT:
            problems.extend(group)
            continue
        problems.append(dict(group[0], count=len(group), objects=[p['object'] for p in group[:SHOWN_NAMES]],
                             object='%s and %d more' % (group[0]['object'], len(group) - 1)))
    return dict(report, problems=problems, claims=[claim for claim in report['claims'] if claim['state'] != 'pending'])


# A failure message names at most this many errors with their reasons.
MAX_REASONS_IN_MESSAGE = 10


def unhealthy_message(report, reasons=True):
    """The failure message (with each error's reason), or the shorter warning (objects only)."""
    errors = [p for p in report['problems'] if p['severity'] == ERROR]
    head = 'The DRA lab is unhealthy: %d error(s), %d warning(s)' % (
        report['summary']['errors'], report['summary']['warnings'])
    if not reasons:
        return '%s: %s. The reasons and what to do are in the returned problems.' % (
            head, ', '.join(p['object'] for p in errors))
    lines = ['%s: %s' % (p['object'], p['reason']) for p in errors[:MAX_REASONS_IN_MESSAGE]]
    if len(errors) > MAX_REASONS_IN_MESSAGE:
        lines.append('... and %d more (see problems)' % (len(errors) - MAX_REASONS_IN_MESSAGE))
    return '%s: %s' % (head, ' | '.join(lines))


def option_problem(params):
    """What dra_health fails with when one of its options cannot be read (None when all can)."""
    for option, parse in (('stale_claim_age', parse_duration), ('event_end', parse_event_time),
                          ('snapshot_lease_max', parse_duration)):
        try:
            parse(params[option])
        except ValueError as exc:
            return 'Invalid %s: %s.' % (option, exc)
    if params['expected_devices_per_node'] < 0:
        return 'expected_devices_per_node must be 0 or more, got %d.' % params['expected_devices_per_node']
    return None
