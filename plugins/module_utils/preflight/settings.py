# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's checks of the lab-wide dralab_* settings, each on its own value or with the settings it must agree with.

Every check reads config (see preflight/validate.py) and writes to a Report;
the inventory's groups and node addresses are preflight/inventory.py's.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.dra.menu import validate_menu
from ansible_collections.dralab.workshop.plugins.module_utils.dra.feature_gates import parse_feature_gates, unknown_gate_hint
from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import (
    PCIE_ROOT_ATTRIBUTE,
    companion_classes,
    feature_problems,
    gate_conflicts,
    selected,
)
from ansible_collections.dralab.workshop.plugins.module_utils.dra.gates import FEATURE_GATES, FEATURE_GATES_VERSION
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import BY_NAME, DEFAULTS, ROLE_VERSIONS, SETTINGS
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.report import given
from ansible_collections.dralab.workshop.plugins.module_utils.seat.event import window_seconds
from ansible_collections.dralab.workshop.plugins.module_utils.seat.names import generate_seat_names
from ansible_collections.dralab.workshop.plugins.module_utils.seat.waitlist import MIN_TURN_SECONDS
from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    SEMVER,
    as_bool,
    as_int,
    format_age,
    format_time,
    host_port_problem,
    network,
    parse_duration,
    parse_event_time,
    seat_name_problem,
    semver_problem,
    show,
    url_problem,
)

SUPPORTED_KUBERNETES_MINOR = (1, 35)
# TokenRequest refuses expirationSeconds below 10 minutes.
MIN_EVENT_DURATION = 600
# kube-controller-manager gives each node a /24 of the pod network (its --node-cidr-mask-size for IPv4), for at
# most 2^16 nodes; kubeadm init checks the pod network against both. kubeadm gives CoreDNS the Service network's
# 10th address.
NODE_POD_PREFIX = 24
MAX_NODE_NETWORK_BITS = 16
DNS_SERVICE_INDEX = 10


def bounds(name):
    """(low, high) of an integer setting, from lab_settings."""
    return BY_NAME[name].bounds


def check_int_range(config, key, limits, report):
    value = given(config, key)
    try:
        number = as_int(value)
    except ValueError:
        report.error(key, '%s is not an integer' % show(value))
        return None
    if not limits[0] <= number <= limits[1]:
        report.error(key, '%s is outside %d..%d' % (show(number), limits[0], limits[1]))
        return None
    return number


def check_bool(config, key, report):
    value = given(config, key)
    try:
        return as_bool(value)
    except ValueError:
        report.error(key, '%s is not a boolean (true or false)' % show(value))
        return None


def check_version(config, report):
    key = 'dralab_kubernetes_version'
    version = given(config, key)
    allow = check_bool(config, 'dralab_allow_unsupported_kubernetes_version', report)
    if not isinstance(version, str):
        report.error(key, '%s is not a version string like "1.35.4" (quote it in YAML)' % show(version))
        return False
    if version.startswith('v'):
        report.error(key, '%s must be given without the leading "v" (for example "1.35.4")' % show(version))
        return False
    match = SEMVER.match(version)
    if not match:
        report.error(key, '%s is not a semantic version like "1.35.4"' % show(version))
        return False
    minor = (int(match.group(1)), int(match.group(2)))
    if minor == SUPPORTED_KUBERNETES_MINOR:
        return True
    supported = '%d.%d.x' % SUPPORTED_KUBERNETES_MINOR
    if allow:
        report.warn(key, '%s is outside %s; continuing because dralab_allow_unsupported_kubernetes_version '
                         'is true (feature gate names are not checked)' % (show(version), supported))
    else:
        report.error(key, '%s is outside %s; set dralab_allow_unsupported_kubernetes_version: true '
                          'to try it anyway' % (show(version), supported))
    return False


def check_feature_gates(config, supported_version, report):
    key = 'dralab_feature_gates'
    gates, problems = parse_feature_gates(given(config, key))
    for problem in problems:
        report.error(key, problem)
    if not supported_version:
        return gates
    for name in sorted(gates):
        spec = FEATURE_GATES.get(name)
        if spec is None:
            report.error(key, 'unknown feature gate %s for Kubernetes %s%s'
                         % (show(name), FEATURE_GATES_VERSION, unknown_gate_hint(name)))
            continue
        stage, default, locked = spec
        if locked and gates[name] != default:
            report.error(key, '%s is %s and locked to %s in Kubernetes %s; setting it to %s stops the '
                              'components from starting'
                         % (name, stage, str(default).lower(), FEATURE_GATES_VERSION, str(gates[name]).lower()))
        elif locked:
            report.warn(key, '%s is %s and locked to %s in Kubernetes %s; setting it has no effect'
                        % (name, stage, str(default).lower(), FEATURE_GATES_VERSION))
    return gates


def check_dra_features(config, gates, report):
    """dralab_dra_features: known names, each once; no dralab_feature_gates entry switching off what they need."""
    key = 'dralab_dra_features'
    features = given(config, key)
    problems = feature_problems(features, key)
    report.errors.extend(problems)
    if problems:
        return
    for problem in gate_conflicts(features, gates or {}):
        report.error('dralab_feature_gates', problem)
    check_companion_menu(features, config.get('dralab_device_classes'), report)
    if not given(config, 'dralab_registry_mirror'):
        for feature in selected(features):
            if feature.lab_build:
                report.warn(key, '%s needs the lab\'s own build of dra-example-driver (the offline mirror\'s image, '
                                 'dralab_build/mirror): with dralab_registry_mirror empty the nodes pull the '
                                 'upstream image, whose drivers publish no %s, and its demo\'s claim stays pending'
                            % (feature.name, PCIE_ROOT_ATTRIBUTE))
    try:
        per_seat = as_int(given(config, 'dralab_gpus_per_seat'))
    except ValueError:
        return
    for feature in selected(features):
        if feature.seat_claims > per_seat:
            report.warn(key, '%s: its demo (docs/demos/%s) makes %d claims in a seat, and dralab_gpus_per_seat %d '
                             'lets a seat hold %d; raise dralab_gpus_per_seat to %d for the seats to run it'
                        % (feature.name, feature.demo, feature.seat_claims, per_seat, per_seat, feature.seat_claims))


def check_companion_menu(features, menu, report):
    """A companion class (a seat's claim may hold one of it beside its GPU) that the instructor's menu redefines
    must select what the feature's class selects, or a seat could take a second GPU through it."""
    for index, item in enumerate(menu if isinstance(menu, list) else []):
        if not isinstance(item, dict) or item.get('name') not in companion_classes(features):
            continue
        feature_class = next(c for f in selected(features) for c in f.device_classes if c['name'] == item['name'])
        if list(item.get('selectors') or []) != feature_class['selectors']:
            report.error('dralab_device_classes[%d]' % index,
                         '%s is the companion class of dralab_dra_features (a seat\'s claim may hold one of it '
                         'beside its GPU), so its selectors must be %s, or a seat could take a second GPU through '
                         'it; remove it from the menu or rename it' % (item['name'], feature_class['selectors']))


def check_seats(config, report):
    """Validate the seat settings; return the effective seat names (or None)."""
    explicit = config.get('dralab_seat_names')
    if explicit is not None:
        key = 'dralab_seat_names'
        if not isinstance(explicit, (list, tuple)):
            report.error(key, '%s is not a list of names' % show(explicit))
            return None
        names = list(explicit)
    else:
        key = 'dralab_seats'
        count = check_int_range(config, 'dralab_seats', bounds('dralab_seats'), report)
        width = check_int_range(config, 'dralab_seat_width', bounds('dralab_seat_width'), report)
        prefix = given(config, 'dralab_seat_prefix')
        if not isinstance(prefix, str):
            report.error('dralab_seat_prefix', '%s is not a string' % show(prefix))
            return None
        if count is None or width is None:
            return None
        names = generate_seat_names(count, prefix, width)
        # Generated names are unique; a bad one comes from the prefix (the
        # last name is the longest).
        for name in names[:1] + names[-1:]:
            problem = seat_name_problem(name)
            if problem:
                report.error('dralab_seat_prefix', '%s gives bad seat names: %s' % (show(prefix), problem))
                break
        if not names:
            report.warn(key, 'no workshop seats are configured')
        return names
    seen = set()
    duplicates = []
    for index, name in enumerate(names):
        problem = seat_name_problem(name)
        if problem:
            report.error(key, 'seat %d: %s' % (index + 1, problem))
            continue
        if name in seen and name not in duplicates:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        report.error(key, 'duplicate seat names: %s' % ', '.join(duplicates))
    if not names:
        report.warn(key, 'no workshop seats are configured')
    return names


def check_device_classes(config, report, compile_problem=None):
    """The device_classes role's own menu validation, so that both accept the same menu."""
    classes = config.get('dralab_device_classes')
    if classes is None:
        return
    report.errors.extend(validate_menu(classes, variable='dralab_device_classes', compile_problem=compile_problem))


def check_networks(config, report):
    """Pod and Service networks: IPv4 CIDRs that do not overlap, big enough for kubeadm; {setting: network} of the good ones."""
    subnets = {}
    for key in ('dralab_pod_subnet', 'dralab_service_subnet'):
        try:
            subnet = network(given(config, key))
        except ValueError as exc:
            report.error(key, str(exc))
            continue
        if subnet.version != 4:
            report.error(key, '%s is an IPv6 network; the lab is IPv4 only (kubeadm gets one pod and one Service '
                              'network, flannel\'s net-conf an IPv4 Network): pick an IPv4 CIDR such as %s'
                         % (subnet, DEFAULTS[key]))
            continue
        subnets[key] = subnet
    pod = subnets.get('dralab_pod_subnet')
    if pod is not None and not NODE_POD_PREFIX - MAX_NODE_NETWORK_BITS <= pod.prefixlen <= NODE_POD_PREFIX:
        report.error('dralab_pod_subnet', '%s: every node gets a /%d of the pod network and kubeadm init refuses a pod '
                                          'network outside /%d../%d; pick one such as %s'
                     % (pod, NODE_POD_PREFIX, NODE_POD_PREFIX - MAX_NODE_NETWORK_BITS, NODE_POD_PREFIX,
                        DEFAULTS['dralab_pod_subnet']))
    service = subnets.get('dralab_service_subnet')
    if service is not None and service.num_addresses <= DNS_SERVICE_INDEX:
        report.error('dralab_service_subnet', '%s has %d addresses and kubeadm init gives the cluster DNS the %dth: '
                                              'pick a /28 or larger, such as %s'
                     % (service, service.num_addresses, DNS_SERVICE_INDEX, DEFAULTS['dralab_service_subnet']))
    if pod is not None and service is not None and pod.overlaps(service):
        report.error('dralab_service_subnet', '%s overlaps dralab_pod_subnet %s' % (service, pod))
    return subnets


def check_role_versions(config, report):
    """Chart and image versions of the roles (ROLE_VERSIONS) that the inventory sets."""
    for key, value in sorted((config.get('role_versions') or {}).items()):
        if key not in ROLE_VERSIONS or value is None:
            continue
        problem = semver_problem(value, leading_v=ROLE_VERSIONS[key][1])
        if problem:
            report.error(key, problem)


def check_strings(config, report):
    for setting in SETTINGS:
        value = config.get(setting.name)
        # The seat prefix is checked with the seat names.
        if setting.kind == 'str' and setting.name != 'dralab_seat_prefix' and value is not None \
                and not isinstance(value, str):
            report.error(setting.name, '%s is not a string' % show(value))


def check_event_duration(config, report):
    key = 'dralab_event_duration'
    value = given(config, key)
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        report.error(key, str(exc))
        return
    if seconds < MIN_EVENT_DURATION:
        report.error(key, '%s is shorter than 10m, the shortest token lifetime Kubernetes issues' % show(value))


# An event window longer than this is a typo (a wrong month or year): every seat could mint tokens that long.
MAX_EVENT_SECONDS = 14 * 86400


def _event_time(config, key, report):
    try:
        return parse_event_time(given(config, key))
    except ValueError as exc:
        report.error(key, str(exc))
        return False


def check_event_window(config, report, now):
    """dralab_event_start and dralab_event_end: both or neither, end after start and after now, a sane length; a
    warning when tokens issued now (more than dralab_event_lead before the start) would end before the event does.

    now: aware datetime. Returns the window seconds (the API server's longest token), or None.
    """
    try:
        lead = parse_duration(given(config, 'dralab_event_lead'))
    except ValueError as exc:
        report.error('dralab_event_lead', str(exc))
        lead = None
    start = _event_time(config, 'dralab_event_start', report)
    end = _event_time(config, 'dralab_event_end', report)
    if start is False or end is False or (start is None and end is None):
        return None
    if start is None or end is None:
        missing, other = ('dralab_event_start', 'dralab_event_end') if start is None else (
            'dralab_event_end', 'dralab_event_start')
        report.error(missing, 'empty while %s is set: set both (when the workshop starts and ends), or neither '
                              'to give seat tokens dralab_event_duration from when users.yml runs' % other)
        return None
    if end <= start:
        report.error('dralab_event_end', '%s is not after dralab_event_start %s'
                     % (show(given(config, 'dralab_event_end')), show(given(config, 'dralab_event_start'))))
        return None
    if end <= now:
        report.error('dralab_event_end', '%s is in the past (now is %s): set the next event\'s start and end, or '
                     'empty both' % (show(given(config, 'dralab_event_end')), format_time(now)))
        return None
    length = (end - start).total_seconds()
    if length > MAX_EVENT_SECONDS:
        report.error('dralab_event_end', 'the event would last %s, more than %s (a wrong date?): every seat could '
                     'mint tokens that long' % (format_age(length), format_age(MAX_EVENT_SECONDS)))
        return None
    if lead is None:
        return None
    if (start - now).total_seconds() > lead:
        cap = window_seconds(start, end, lead)
        report.warn('dralab_event_lead', 'dralab_event_start is %s away, more than dralab_event_lead %s: the API '
                    'server issues tokens of at most %s, so seat tokens issued now end at %s, before the event ends. '
                    'Run playbooks/users.yml again after %s, or raise dralab_event_lead before the cluster is built'
                    % (format_age((start - now).total_seconds()), show(given(config, 'dralab_event_lead')),
                       format_age(cap), format_time(now + datetime.timedelta(seconds=cap)),
                       format_time(start - datetime.timedelta(seconds=lead))))
    return window_seconds(start, end, lead)


def check_leases(config, report):
    seconds = {}
    for key in ('dralab_lease_default', 'dralab_lease_max'):
        try:
            seconds[key] = parse_duration(given(config, key))
        except ValueError as exc:
            report.error(key, str(exc))
    if len(seconds) == 2 and seconds['dralab_lease_default'] > seconds['dralab_lease_max']:
        report.error('dralab_lease_default', '%s is longer than dralab_lease_max %s'
                     % (show(given(config, 'dralab_lease_default')), show(given(config, 'dralab_lease_max'))))
    try:
        turn = parse_duration(given(config, 'dralab_waitlist_turn'))
    except ValueError as exc:
        report.error('dralab_waitlist_turn', str(exc))
    else:
        if turn < MIN_TURN_SECONDS:
            report.error('dralab_waitlist_turn', '%s is shorter than %ss: a seat given a GPU needs the time to '
                         'make its claim' % (show(given(config, 'dralab_waitlist_turn')), MIN_TURN_SECONDS))


def check_mirrors(config, report):
    """The registry mirror is host[:port], the download mirror an http(s) URL; empty means upstream."""
    for key, problem_of, sentence in (('dralab_registry_mirror', host_port_problem, '%(problem)s'),
                                      ('dralab_download_mirror', url_problem, '%(value)s is %(problem)s')):
        value = given(config, key)
        if not isinstance(value, str):
            report.error(key, '%s is not a string' % show(value))
            continue
        problem = problem_of(value.strip()) if value.strip() else None
        if problem:
            report.error(key, sentence % {'problem': problem, 'value': show(value)})
