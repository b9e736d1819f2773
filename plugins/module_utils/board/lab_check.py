# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_health's one pass over the lab: read the objects, build the report (and the board's snapshot with
snapshot_dest), add the checks beyond DRA, and word it for people. The module only turns it into its answer."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import snapshot as board_file
from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError


class CheckFailed(Exception):
    """The lab could not be read, or the snapshot not written: the message says what to do."""


def check(client, params, now=None, check_mode=False):
    """{'report': the report (summarized without params['detail']) with its report_lines, 'result': the module's
    other keys (changed, snapshot, etcd), 'warnings': [str]}. params: dra_health's. Raises CheckFailed."""
    warnings = []
    try:
        # The board reads the FailedScheduling events whatever include_events says.
        data = dra_collect.collect(client, include_events=params['include_events'] or bool(params['snapshot_dest']))
    except K8sError as exc:
        raise CheckFailed(str(exc))
    warnings.extend(data.pop('warnings'))
    board = dict(lease_max=params['snapshot_lease_max'], title=params['snapshot_title']) if params['snapshot_dest'] else None
    lab = board_build.build(
        data, now=now, board=board, report_events=params['include_events'], lease_max=params['snapshot_lease_max'],
        driver=params['driver'], expected_devices_per_node=params['expected_devices_per_node'], expected_nodes=params['nodes'],
        node_selector=params['node_selector'], stale_claim_age=params['stale_claim_age'],
        plugin_labels=params['plugin_labels'] if params['check_plugins'] else None)
    report, result = lab['report'], dict(changed=False)
    report, more, more_warnings = dra_collect.more_checks(client, report, data.get('namespaces'), params, now)
    warnings.extend(more_warnings)
    result.update(more)
    if params['snapshot_dest']:
        try:
            snapshot = board_file.keep(lab['board'], params['snapshot_dest'], check_mode=check_mode)
        except (IOError, OSError) as exc:
            raise CheckFailed(board_file.cannot_write(params['snapshot_dest'], exc, 'snapshot_dest'))
        result = dict(changed=snapshot.pop('changed'), snapshot=snapshot)
    report['report_lines'] = dra_report.report_lines(report, detail=params['detail'])
    if not params['detail']:
        report = dra_report.summarize(report)
    return {'report': report, 'result': result, 'warnings': warnings}
