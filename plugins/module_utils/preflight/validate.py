# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight in one call: every check of the settings and the inventory, and the values the plays use.

validate() collects every problem and returns (errors, warnings), each message
starting with the name of the variable (or inventory group) it is about; the
lab_preflight module and the unit tests call it. The checks live in
preflight/settings.py (the dralab_* values) and preflight/inventory.py (the
groups and the nodes' addresses).
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.dra.feature_gates import parse_feature_gates
from ansible_collections.dralab.workshop.plugins.module_utils.preflight import inventory, seat_bounds, settings
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.report import Report, given


def validate(config, compile_problem=None, now=None):
    """Check a lab configuration; return (errors, warnings), lists of strings naming their field.

    config holds the dralab_* variables under their own names (a missing key
    or None means the default of docs/conventions.md), plus:
    groups: the inventory's groups (name -> list of host names);
    hosts: every inventory host name (groups['all']); when missing, the union of groups;
    node_addresses: host -> ansible_host of the control_plane, workers and login hosts (names that are not IP
    addresses are only compared with each other);
    internal_addresses, access_addresses: host -> internal_address / access_address of those hosts, where set;
    role_versions: the ROLE_VERSIONS variables the inventory sets, name -> value;
    role_bounds: the ROLE_BOUNDS variables the inventory sets, name -> value.
    compile_problem(expression) -> str or None checks a CEL selector of dralab_device_classes.
    now: aware datetime the event window is checked against (default: the current time).
    """
    report = Report()
    inventory.check_control_plane(config, report)
    inventory.check_groups(config, report)
    supported = settings.check_version(config, report)
    gates = settings.check_feature_gates(config, supported, report)
    settings.check_dra_features(config, gates, report)
    settings.check_bool(config, 'dralab_cgroup_v1', report)
    for key in ('dralab_devices_per_node', 'dralab_gpus_per_seat'):
        settings.check_int_range(config, key, settings.bounds(key), report)
    subnets = settings.check_networks(config, report)
    inventory.check_node_addresses(config, subnets, report)
    inventory.check_access_addresses(config, report)
    inventory.check_pod_network_size(config, subnets, report)
    settings.check_role_versions(config, report)
    seat_bounds.check_seat_bounds(config, report)
    settings.check_strings(config, report)
    seats = settings.check_seats(config, report)
    settings.check_device_classes(config, report, compile_problem)
    inventory.check_login_hosts(config, report)
    inventory.check_seat_login_hosts(config, seats, report)
    settings.check_event_duration(config, report)
    settings.check_event_window(config, report, now or datetime.datetime.now(datetime.timezone.utc))
    settings.check_leases(config, report)
    settings.check_mirrors(config, report)
    inventory.check_mirror_addresses(config, subnets, report)
    return report.errors, report.warnings


def effective_settings(config):
    """The normalised values other plays can use: seat names and feature gates (None when invalid)."""
    report = Report()
    names = settings.check_seats(config, report)
    gates, problems = parse_feature_gates(given(config, 'dralab_feature_gates'))
    return {
        'seat_names': names if not report.errors else None,
        'feature_gates': gates if not problems else None,
    }
