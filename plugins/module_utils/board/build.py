# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one chain from the objects read to the lab's report and its board: explain -> analyze -> board state.

dra_health (its report, and its snapshot with snapshot_dest), board_snapshot and
the board's server (dralab-board) all call build(); nothing else explains,
analyzes and arranges a board. The pending claims are explained once, at one
time `now`, and the report and the board share those answers.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_state
from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain as dra_explain
from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.seat import token_health, waitlist
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_time

# The objects build() reads (dra_collect.collect() returns them under these keys; a missing key is none, but for
# claim_templates: not read, so no pod is judged on its templates).
OBJECT_KINDS = ('device_classes', 'slices', 'claims', 'pods', 'nodes', 'namespaces', 'events', 'device_taint_rules',
                'claim_templates')
# What the board's own judgement takes of the options (without the report's events it judges apart, with these).
BOARD_JUDGEMENT = ('driver', 'expected_devices_per_node', 'stale_claim_age')


def build(objects, now=None, board=None, report_events=True, lease_max=None, **options):
    """The lab's report and, when board options are given, its board.

    objects: {kind: [object]} as dra_collect.collect() reads them (OBJECT_KINDS); now: aware datetime or RFC 3339
    (default: the current time); options: dra_health.analyze's (driver, expected_devices_per_node, stale_claim_age,
    expected_nodes, node_selector, plugin_labels); board: None (no board) or board_state.arrange's options
    (lease_max, title, people, activity); report_events: whether the report reads the FailedScheduling events
    (dra_health's include_events). The board always reads them: a report without them is not the board's, which
    is then judged on its own with the board's options (BOARD_JUDGEMENT). lease_max: the lab's longest lease, for
    the lease end of the holders a waiting claim is told about (default: the board's lease_max, that is the lab's,
    else only the claims' lease annotations).

    Returns {'report': dra_health.analyze's report with the GPU waitlist (waitlist: seat/waitlist.py lab_line,
    summary.waiting, and its waitlist_not_kept problem), 'board': the board's state or None}.
    """
    now = parse_time(now) if now is not None else datetime.datetime.now(datetime.timezone.utc)
    lists = dict((kind, list(objects.get(kind) or [])) for kind in OBJECT_KINDS)
    lists['events'] += list(objects.get('claim_events') or [])  # the board's watch reads them apart (collect merges)
    templates = lists['claim_templates'] if objects.get('claim_templates') is not None else None
    cluster = dict((kind, lists[kind]) for kind in OBJECT_KINDS if kind not in ('events', 'claim_templates'))
    if board is not None:
        # The lease ends on the tiles and in the sentences come from one maximum.
        board = dict(board, lease_max=board.get('lease_max') or lab_settings.default('dralab_lease_max'))
        lease_max = board['lease_max'] if lease_max is None else lease_max
    explanations = dra_explain.explain_pending(now=now, lease_max=lease_max, **cluster)
    by_claim = dict((answer['claim'], answer) for answer in explanations)

    def judge(events, **judgement):
        return dra_health.analyze(events=events, now=now, explanations=by_claim, claim_templates=templates,
                                  **dict(cluster, **judgement))

    seats = waitlist.seat_namespaces(cluster['namespaces'])
    line = waitlist.lab_line(cluster, now, lease_max, seats)
    line_problems = waitlist.line_problems(cluster, now, seats)

    def with_line(analysed):
        analysed = dict(analysed, waitlist=line, summary=dict(analysed['summary'], waiting=len(line)))
        return token_health.add_problems(analysed, line_problems)

    report = with_line(judge(lists['events'] if report_events else [], **options))
    if board is None:
        return {'report': report, 'board': None}
    board_report = report if report_events else with_line(judge(
        lists['events'], **dict((k, options[k]) for k in BOARD_JUDGEMENT if k in options)))
    state = board_state.arrange(lists, board_report, explanations, now,
                                driver=options.get('driver', dra_objects.DEFAULT_DRIVER), **board)
    return {'report': report, 'board': state}
