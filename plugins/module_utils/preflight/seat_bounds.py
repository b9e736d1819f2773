# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's check of the role variables that bound one seat (lab_settings.ROLE_BOUNDS).

Only the variables the inventory sets are checked (config['role_bounds']); a role's default is known to fit. A
count below what the lab itself keeps in a seat namespace, or below the pods of can-has-gpu and of the lab's
demos, would make the API server refuse the lab's own objects: it stops the run before any change, naming the
variable. When only one of workshop_users_quota_objects and workshop_users_quota_objects_by_kind is set, the other
is taken as empty (so the check may ask for a per-kind entry the role's default would have given).
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import feature_problems, selected
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.report import given
from ansible_collections.dralab.workshop.plugins.module_utils.seat import bounds as seat_bounds
from ansible_collections.dralab.workshop.plugins.module_utils.seat.flow import flow_problems
from ansible_collections.dralab.workshop.plugins.module_utils.seat import placement as seat_placement
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import baseline_names
from ansible_collections.dralab.workshop.plugins.module_utils.values import as_int, show


def workshop_needs(config):
    """seat_bounds.needs for the lab's dralab_gpus_per_seat and dralab_dra_features."""
    try:
        gpus = as_int(given(config, 'dralab_gpus_per_seat'))
    except ValueError:
        gpus = 0  # reported by the settings check
    features = given(config, 'dralab_dra_features')
    demo_pods = 0
    if not feature_problems(features, 'dralab_dra_features'):
        demo_pods = max([feature.seat_pods for feature in selected(features) if feature.demo] or [0])
    return seat_bounds.needs(baseline_names('seat'), gpus, demo_pods)


def check_seat_bounds(config, report):
    values = config.get('role_bounds') or {}
    wanted = workshop_needs(config)
    if 'workshop_users_quota_objects' in values or 'workshop_users_quota_objects_by_kind' in values:
        per_kind = values.get('workshop_users_quota_objects')
        by_kind = values.get('workshop_users_quota_objects_by_kind')
        if per_kind is None:  # only the mapping is set: the role's default covers the other kinds
            per_kind = max(wanted.values())
        for field, sentence in seat_bounds.count_problems(per_kind, {} if by_kind is None else by_kind, wanted):
            report.error(field, sentence)
    pods = values.get('workshop_users_quota_pods')
    if pods is not None and str(pods).strip() != '':
        try:
            number = as_int(pods)
        except ValueError:
            report.error('workshop_users_quota_pods', '%s is not a whole number (or empty for no cap)' % show(pods))
        else:
            if number < wanted['pods']:
                report.error('workshop_users_quota_pods', '%d pods per seat is fewer than can-has-gpu and the demos '
                             'need (%d)' % (number, wanted['pods']))
    if values.get('workshop_users_pod_grace_max') is not None:
        problem = seat_bounds.grace_problem(values['workshop_users_pod_grace_max'])
        if problem:
            report.error('workshop_users_pod_grace_max', problem)
    check_api_share(values, report)
    check_pod_room(values, wanted, report)
    check_reset_grace(values, report)
    check_host_bounds(values, report)


def check_api_share(values, report):
    """workshop_users_api_concurrency_shares and workshop_users_api_queue_length: whole numbers from 1 to 1000."""
    shares = values.get('workshop_users_api_concurrency_shares')
    length = values.get('workshop_users_api_queue_length')
    for option, sentence in flow_problems(1 if shares is None else shares, 1 if length is None else length):
        report.error('workshop_users_api_' + option, sentence)


def check_pod_room(values, wanted, report):
    """Ephemeral storage against the demos' and can-has-gpu's pods; the toleration allow lists' entries."""
    names = ('workshop_users_quota_ephemeral_storage', 'workshop_users_container_default_limits',
             'workshop_users_container_default_requests')
    if any(name in values for name in names):
        for field, sentence in seat_bounds.ephemeral_problems(*[values.get(name) for name in names],
                                                              pods=wanted['pods']):
            report.error(field, sentence)
    for name, effects in (('workshop_users_pod_tolerations', seat_placement.POD_TAINT_EFFECTS),
                          ('workshop_users_device_tolerations', seat_placement.DEVICE_TAINT_EFFECTS)):
        if values.get(name) is not None:
            for field, sentence in seat_placement.toleration_problems(values[name], name, effects):
                report.error(field, sentence)


def check_reset_grace(values, report):
    """lab_reset_grace_period_seconds: 0 or more, and leaving the wait time to delete a pod with grace 0."""
    key = 'lab_reset_grace_period_seconds'
    if values.get(key) is None:
        return
    try:
        grace = as_int(values[key])
    except ValueError:
        report.error(key, '%s is not a whole number of seconds' % show(values[key]))
        return
    if grace < 0:
        report.error(key, '%d is negative' % grace)
        return
    try:
        timeout = as_int(values.get('lab_reset_wait_timeout'))
    except ValueError:
        return
    if grace + seat_bounds.FORCE_AFTER >= timeout:
        report.error(key, '%d s (and the %d s after it before a pod still there is deleted with grace 0) is not less '
                          'than lab_reset_wait_timeout %d s: the reset would give up before it'
                     % (grace, seat_bounds.FORCE_AFTER, timeout))


# The fewest PIDs a pod may be given: the control plane's own pods run under the same limit (kube-apiserver and etcd
# hold a thread per busy connection).
POD_PIDS_MIN = 256
# Files the board needs beside its streams: its watches, the pages being served, its own files.
BOARD_SPARE_FILES = 64


def whole(values, key, report, minimum):
    """values[key] as a number of at least minimum, else None (and the problem reported)."""
    try:
        number = as_int(values[key])
    except (TypeError, ValueError):
        report.error(key, '%s is not a whole number' % show(values[key]))
        return None
    if number < minimum:
        report.error(key, '%d is less than %d' % (number, minimum))
        return None
    return number


def check_host_bounds(values, report):
    """What one seat or one source may take from a host: a pod's PIDs, sshd's slots, the board's streams."""
    key = 'control_plane_kubelet_pod_pids_limit'
    if values.get(key) is not None:
        pids = whole(values, key, report, 0)
        if pids is not None and 0 < pids < POD_PIDS_MIN:
            report.error(key, '%d PIDs per pod is fewer than the control plane\'s own pods need (%d or more; 0 for no '
                              'limit)' % (pids, POD_PIDS_MIN))
    key = 'workshop_users_sshd_per_source_max_startups'
    per_source = values.get(key)
    if per_source is not None and str(per_source).strip().lower() != 'none':
        per_source = whole(values, key, report, 1)
        start = str(values.get('workshop_users_sshd_max_startups') or '').split(':', maxsplit=1)[0]
        if per_source is not None and start.isdigit() and per_source >= int(start):
            report.error(key, '%d is not below the start of workshop_users_sshd_max_startups (%s): one source could '
                              'take every pre-authentication slot' % (per_source, start))
    streams = dict((name, whole(values, name, report, 1)) for name in (
        'lab_board_streams_per_client', 'lab_board_streams_max', 'lab_board_streams_max_instructor')
        if values.get(name) is not None)
    if values.get('lab_board_limit_nofile') is not None:
        files = whole(values, 'lab_board_limit_nofile', report, 1)
        total = streams.get('lab_board_streams_max'), streams.get('lab_board_streams_max_instructor')
        if files is not None and None not in total and files < sum(total) + BOARD_SPARE_FILES:
            report.error('lab_board_limit_nofile', '%d files do not hold lab_board_streams_max and '
                                                   'lab_board_streams_max_instructor (%d) and %d more for the board '
                                                   'itself' % (files, sum(total), BOARD_SPARE_FILES))
