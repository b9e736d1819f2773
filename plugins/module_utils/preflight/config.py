# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of the lab-wide dralab_* settings, and the helpers behind the filters.

Everything here is pure Python on plain values: the lab_preflight module and
the filters (mirror_url, seat_names, duration_seconds, feature_gates,
feature_gate_map) call it, and so do the unit tests.

Helpers raise ValueError with a message that names the bad value; validate()
collects every problem and returns (errors, warnings), each message starting
with the name of the variable (or inventory group) it is about.
"""

from __future__ import annotations

import difflib
import re

from ansible_collections.dralab.workshop.plugins.module_utils.dra.menu import validate_menu
from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import (
    PCIE_ROOT_ATTRIBUTE,
    companion_classes,
    feature_problems,
    gate_conflicts,
    selected,
)
from ansible_collections.dralab.workshop.plugins.module_utils.dra.gates import (
    FEATURE_GATES,
    FEATURE_GATES_VERSION,
)
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import (
    BY_NAME,
    DEFAULTS,
    NAMES,
    ROLE_VERSIONS,
    SETTINGS,
    unknown_name_problem,
)
# Re-exported: the filters and older callers import these from here.
from ansible_collections.dralab.workshop.plugins.module_utils.values import (  # noqa: F401 pylint: disable=unused-import
    RESERVED_SEAT_NAMES,
    SEMVER,
    as_bool,
    as_int,
    bounded_int,
    host_port_problem,
    ip_address,
    is_dns1123_label,
    is_dns1123_subdomain,
    network,
    parse_duration,
    seat_name_problem,
    semver_problem,
    show,
    url_problem,
)

SUPPORTED_KUBERNETES_MINOR = (1, 35)
# TokenRequest refuses expirationSeconds below 10 minutes.
MIN_EVENT_DURATION = 600

_SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*://')
_GATE_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9]*$')


def _bounds(name):
    return BY_NAME[name].bounds


# ---------------------------------------------------------------- filters' logic

def mirror_url(upstream_url, mirror):
    """Map an upstream URL onto a files mirror laid out as <mirror>/<host>/<path>.

    An empty or None mirror returns upstream_url unchanged.
    """
    if not isinstance(upstream_url, str) or not upstream_url.strip():
        raise ValueError('upstream URL %s is not a non-empty string' % show(upstream_url))
    if mirror is None:
        return upstream_url
    if not isinstance(mirror, str):
        raise ValueError('mirror %s is not a string' % show(mirror))
    mirror = mirror.strip()
    if not mirror:
        return upstream_url
    problem = url_problem(mirror)
    if problem:
        raise ValueError('mirror %s: %s' % (show(mirror), problem))
    rest = _SCHEME.sub('', upstream_url.strip(), count=1).lstrip('/')
    return mirror.rstrip('/') + '/' + rest


def generate_seat_names(count, prefix='user', width=2):
    """Seat names prefix + the number zero-padded to at least width digits, from 1 to count."""
    count = bounded_int('count', count, 0, 'is negative')
    width = bounded_int('width', width, 0, 'is negative')
    if not isinstance(prefix, str):
        raise ValueError('prefix %s is not a string' % show(prefix))
    return ['%s%0*d' % (prefix, width, number) for number in range(1, count + 1)]


def password_lookup_terms(seats, directory, length, encrypt=None):
    """One ansible.builtin.password lookup term per seat: a file of its own under directory."""
    if not isinstance(directory, str) or not directory.startswith('/'):
        raise ValueError('directory %s is not an absolute path' % show(directory))
    if any(ch.isspace() for ch in directory):
        raise ValueError('directory %s contains white space, which the password lookup cannot read'
                         % show(directory))
    length = bounded_int('length', length, 8, 'is shorter than 8 characters')
    if encrypt is not None and not re.match(r'^[a-z0-9_]+$', str(encrypt)):
        raise ValueError('encrypt %s is not a hash scheme name such as sha512_crypt' % show(encrypt))
    terms = []
    for seat in seats:
        problem = seat_name_problem(seat)
        if problem:
            raise ValueError('seat name: %s' % problem)
        term = '%s/%s length=%d chars=ascii_letters,digits' % (directory.rstrip('/'), seat, length)
        terms.append(term + (' encrypt=%s' % encrypt if encrypt else ''))
    return terms


# kube-apiserver refuses a --service-account-max-token-expiration shorter than this.
MIN_MAX_TOKEN_EXPIRATION = 3600


def max_token_expiration(value):
    """kube-apiserver's --service-account-max-token-expiration for a duration (the event's): 'Ns', at least 1h."""
    return '%ds' % max(parse_duration(value), MIN_MAX_TOKEN_EXPIRATION)


def parse_feature_gates(gates):
    """Normalise feature gates to ({name: bool}, [problems]).

    gates is None, a dict name -> bool, a comma-separated string
    "A=true,B", or a list whose items are "Name", "Name=true|false" or dicts
    name -> bool. A bare name means true. A later setting of the same gate
    overrides an earlier one. Names are not checked against a release here.
    """
    result = {}
    problems = []

    def add(name, value, where):
        if not isinstance(name, str) or not _GATE_NAME.match(name.strip()):
            problems.append('%s: %s is not a feature gate name' % (where, show(name)))
            return
        try:
            result[name.strip()] = as_bool(value)
        except ValueError:
            problems.append('%s: %s must be true or false, not %s' % (where, name.strip(), show(value)))

    def add_item(item, where):
        if isinstance(item, dict):
            for name, value in item.items():
                add(name, value, where)
        elif isinstance(item, str):
            name, sep, value = item.partition('=')
            add(name, value if sep else True, where)
        else:
            problems.append('%s: %s is not "Name", "Name=true|false" or a mapping' % (where, show(item)))

    if gates is None or gates == '':
        return result, problems
    if isinstance(gates, str):
        for index, item in enumerate(part for part in gates.split(',') if part.strip()):
            add_item(item.strip(), 'item %d' % index)
    elif isinstance(gates, dict):
        add_item(gates, 'mapping')
    elif isinstance(gates, (list, tuple)):
        for index, item in enumerate(gates):
            add_item(item, 'item %d' % index)
    else:
        problems.append('%s is not a list, a mapping or a comma-separated string' % show(gates))
    return result, problems


def feature_gate_string(gates):
    """"A=true,B=false" from a {name: bool} map, sorted by name."""
    return ','.join('%s=%s' % (name, 'true' if gates[name] else 'false') for name in sorted(gates))


def merge_feature_gates(gates, extra=None, strict=False):
    """Merge gates, then extra, into one {name: bool} map sorted by name; raise ValueError on bad input.

    With strict, also refuse names Kubernetes 1.35 does not know and locked
    gates set to a value other than their default.
    """
    merged = {}
    for label, value in (('input', gates), ('extra', extra)):
        parsed, problems = parse_feature_gates(value)
        if problems:
            raise ValueError('%s: %s' % (label, '; '.join(problems)))
        merged.update(parsed)
    if strict:
        for name in sorted(merged):
            spec = FEATURE_GATES.get(name)
            if spec is None:
                raise ValueError('unknown feature gate %s for Kubernetes %s%s'
                                 % (show(name), FEATURE_GATES_VERSION, unknown_gate_hint(name)))
            stage, default, locked = spec
            if locked and merged[name] != default:
                raise ValueError('%s is %s and locked to %s in Kubernetes %s'
                                 % (name, stage, str(default).lower(), FEATURE_GATES_VERSION))
    return dict((name, merged[name]) for name in sorted(merged))


def unknown_gate_hint(name):
    """A "did you mean" suffix for an unknown gate name, or ''."""
    by_lower = dict((known.lower(), known) for known in FEATURE_GATES)
    if name.lower() in by_lower:
        return ' (did you mean %s?)' % by_lower[name.lower()]
    close = difflib.get_close_matches(name, list(FEATURE_GATES), n=1, cutoff=0.8)
    return ' (did you mean %s?)' % close[0] if close else ''


# ---------------------------------------------------------------- validation

def _given(config, key):
    """The configured value of key, or its default when missing or None."""
    value = config.get(key)
    return DEFAULTS.get(key) if value is None else value


class _Report(object):
    def __init__(self):
        self.errors = []
        self.warnings = []

    def error(self, field, message):
        self.errors.append('%s: %s' % (field, message))

    def warn(self, field, message):
        self.warnings.append('%s: %s' % (field, message))


def _check_inventory(config, report):
    groups = config.get('groups') or {}
    control_plane = list(groups.get('control_plane') or [])
    if not control_plane and config.get('dralab_kubeconfig') is not None:
        report.warn("groups['control_plane']",
                    'the inventory has no control_plane host: only the plays that use the API through '
                    'dralab_kubeconfig (DeviceClasses, seats, reset, health) act')
    elif not control_plane:
        report.error("groups['control_plane']",
                     'the inventory has no control_plane host; put the host to initialise with kubeadm '
                     'in the control_plane group (or set dralab_kubeconfig to use an existing cluster)')
    elif len(control_plane) > 1:
        report.error("groups['control_plane']",
                     '%d hosts (%s); the lab builds one control plane node (no HA): keep one host in '
                     'control_plane and put the others in workers' % (len(control_plane), ', '.join(control_plane)))


def _inventory_hosts(config):
    hosts = config.get('hosts')
    if hosts is None:
        hosts = set()
        for members in (config.get('groups') or {}).values():
            hosts.update(members or [])
    return set(hosts)


def _check_int_range(config, key, bounds, report):
    value = _given(config, key)
    try:
        number = as_int(value)
    except ValueError:
        report.error(key, '%s is not an integer' % show(value))
        return None
    if not bounds[0] <= number <= bounds[1]:
        report.error(key, '%s is outside %d..%d' % (show(number), bounds[0], bounds[1]))
        return None
    return number


def _check_bool(config, key, report):
    value = _given(config, key)
    try:
        return as_bool(value)
    except ValueError:
        report.error(key, '%s is not a boolean (true or false)' % show(value))
        return None


def _check_version(config, report):
    key = 'dralab_kubernetes_version'
    version = _given(config, key)
    allow = _check_bool(config, 'dralab_allow_unsupported_kubernetes_version', report)
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


def _check_feature_gates(config, supported_version, report):
    key = 'dralab_feature_gates'
    gates, problems = parse_feature_gates(_given(config, key))
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


def _check_dra_features(config, gates, report):
    """dralab_dra_features: known names, each once; no dralab_feature_gates entry switching off what they need."""
    key = 'dralab_dra_features'
    features = _given(config, key)
    problems = feature_problems(features, key)
    report.errors.extend(problems)
    if problems:
        return
    for problem in gate_conflicts(features, gates or {}):
        report.error('dralab_feature_gates', problem)
    _check_companion_menu(features, config.get('dralab_device_classes'), report)
    if not _given(config, 'dralab_registry_mirror'):
        for feature in selected(features):
            if feature.lab_build:
                report.warn(key, '%s needs the lab\'s own build of dra-example-driver (the offline mirror\'s image, '
                                 'dralab_build/mirror): with dralab_registry_mirror empty the nodes pull the '
                                 'upstream image, whose drivers publish no %s, and its demo\'s claim stays pending'
                            % (feature.name, PCIE_ROOT_ATTRIBUTE))
    try:
        per_seat = as_int(_given(config, 'dralab_gpus_per_seat'))
    except ValueError:
        return
    for feature in selected(features):
        if feature.seat_claims > per_seat:
            report.warn(key, '%s: its demo (docs/demos/%s) makes %d claims in a seat, and dralab_gpus_per_seat %d '
                             'lets a seat hold %d; raise dralab_gpus_per_seat to %d for the seats to run it'
                        % (feature.name, feature.demo, feature.seat_claims, per_seat, per_seat, feature.seat_claims))


def _check_companion_menu(features, menu, report):
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


def _check_seats(config, report):
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
        count = _check_int_range(config, 'dralab_seats', _bounds('dralab_seats'), report)
        width = _check_int_range(config, 'dralab_seat_width', _bounds('dralab_seat_width'), report)
        prefix = _given(config, 'dralab_seat_prefix')
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


def _check_device_classes(config, report, compile_problem=None):
    """The device_classes role's own menu validation, so that both accept the same menu."""
    classes = config.get('dralab_device_classes')
    if classes is None:
        return
    report.errors.extend(validate_menu(classes, variable='dralab_device_classes', compile_problem=compile_problem))


def _check_networks(config, report):
    """Pod and Service networks: CIDRs that overlap neither each other nor a node address."""
    subnets = {}
    for key in ('dralab_pod_subnet', 'dralab_service_subnet'):
        try:
            subnets[key] = network(_given(config, key))
        except ValueError as exc:
            report.error(key, str(exc))
    if len(subnets) == 2 and subnets['dralab_pod_subnet'].overlaps(subnets['dralab_service_subnet']):
        report.error('dralab_service_subnet', '%s overlaps dralab_pod_subnet %s'
                     % (subnets['dralab_service_subnet'], subnets['dralab_pod_subnet']))
    addresses = config.get('node_addresses') or {}
    for key, subnet in sorted(subnets.items()):
        inside = ['%s (%s)' % (host, addresses[host]) for host in sorted(addresses)
                  if ip_address(addresses[host]) is not None and ip_address(addresses[host]) in subnet]
        if inside:
            report.error(key, '%s contains node address%s %s; pick a network the nodes are not on'
                         % (subnet, 'es' if len(inside) > 1 else '', ', '.join(inside)))


def _check_role_versions(config, report):
    """Chart and image versions of the roles (ROLE_VERSIONS) that the inventory sets."""
    for key, value in sorted((config.get('role_versions') or {}).items()):
        if key not in ROLE_VERSIONS or value is None:
            continue
        problem = semver_problem(value, leading_v=ROLE_VERSIONS[key][1])
        if problem:
            report.error(key, problem)


def _check_strings(config, report):
    for setting in SETTINGS:
        value = config.get(setting.name)
        # The seat prefix is checked with the seat names.
        if setting.kind == 'str' and setting.name != 'dralab_seat_prefix' and value is not None \
                and not isinstance(value, str):
            report.error(setting.name, '%s is not a string' % show(value))


def _check_login_hosts(config, report):
    key = 'dralab_login_hosts'
    hosts = config.get(key)
    inventory = _inventory_hosts(config)
    if hosts is None:
        hosts = (config.get('groups') or {}).get('login') or []
    if not isinstance(hosts, (list, tuple)):
        report.error(key, '%s is not a list of inventory host names' % show(hosts))
        return
    for host in hosts:
        if not isinstance(host, str) or host not in inventory:
            report.error(key, '%s is not a host in the inventory' % show(host))
    if not hosts:
        report.warn(key, 'no login hosts; seats get a kubeconfig but no Linux account')


def _check_event_duration(config, report):
    key = 'dralab_event_duration'
    value = _given(config, key)
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        report.error(key, str(exc))
        return
    if seconds < MIN_EVENT_DURATION:
        report.error(key, '%s is shorter than 10m, the shortest token lifetime Kubernetes issues' % show(value))


def _check_leases(config, report):
    seconds = {}
    for key in ('dralab_lease_default', 'dralab_lease_max'):
        try:
            seconds[key] = parse_duration(_given(config, key))
        except ValueError as exc:
            report.error(key, str(exc))
    if len(seconds) == 2 and seconds['dralab_lease_default'] > seconds['dralab_lease_max']:
        report.error('dralab_lease_default', '%s is longer than dralab_lease_max %s'
                     % (show(_given(config, 'dralab_lease_default')), show(_given(config, 'dralab_lease_max'))))


def _check_mirrors(config, report):
    key = 'dralab_registry_mirror'
    value = _given(config, key)
    if not isinstance(value, str):
        report.error(key, '%s is not a string' % show(value))
    elif value.strip():
        problem = host_port_problem(value.strip())
        if problem:
            report.error(key, problem)
    key = 'dralab_download_mirror'
    value = _given(config, key)
    if not isinstance(value, str):
        report.error(key, '%s is not a string' % show(value))
    elif value.strip():
        problem = url_problem(value.strip())
        if problem:
            report.error(key, '%s is %s' % (show(value), problem))


def validate(config, compile_problem=None):
    """Check a lab configuration; return (errors, warnings), lists of strings naming their field.

    config holds the dralab_* variables under their own names (a missing key
    or None means the default of docs/conventions.md), plus:
    groups: the inventory's groups (name -> list of host names);
    hosts: every inventory host name (groups['all']); when missing, the union of groups;
    node_addresses: host -> ansible_host of the nodes (names that are not IP addresses are skipped);
    role_versions: the ROLE_VERSIONS variables the inventory sets, name -> value.
    compile_problem(expression) -> str or None checks a CEL selector of dralab_device_classes.
    """
    report = _Report()
    _check_inventory(config, report)
    supported = _check_version(config, report)
    gates = _check_feature_gates(config, supported, report)
    _check_dra_features(config, gates, report)
    _check_bool(config, 'dralab_cgroup_v1', report)
    for key in ('dralab_devices_per_node', 'dralab_gpus_per_seat'):
        _check_int_range(config, key, _bounds(key), report)
    _check_networks(config, report)
    _check_role_versions(config, report)
    _check_strings(config, report)
    _check_seats(config, report)
    _check_device_classes(config, report, compile_problem)
    _check_login_hosts(config, report)
    _check_event_duration(config, report)
    _check_leases(config, report)
    _check_mirrors(config, report)
    return report.errors, report.warnings


def effective_settings(config):
    """The normalised values other plays can use: seat names and feature gates (None when invalid)."""
    report = _Report()
    names = _check_seats(config, report)
    gates, problems = parse_feature_gates(_given(config, 'dralab_feature_gates'))
    return {
        'seat_names': names if not report.errors else None,
        'feature_gates': gates if not problems else None,
    }


def _short(text, limit=60):
    return text if len(text) <= limit else text[:limit - 3] + '...'


def resolve_hosts(host_settings):
    """The one value of each lab setting, from the dralab_* variables every lab host sees.

    host_settings maps each host that runs a play of the lab (localhost
    included) to the dralab_* variables set for it (inventory, group_vars,
    host_vars, extra vars). A setting must mean the same on every host: set
    on a group other than "all" (or in host_vars), the Kubernetes half of a
    play would use one value and the Linux half another.

    Returns (settings, errors): settings maps each setting set somewhere to
    its value; errors name each setting whose value differs between hosts
    and each dralab_* variable that is no setting, with the closest known
    name (a misspelt name would otherwise be ignored and its default used).
    """
    errors = []
    settings = {}
    hosts = sorted(host_settings)
    unknown = set()
    for host in hosts:
        unknown.update(name for name in (host_settings[host] or {}) if name not in NAMES)
    for name in sorted(unknown):
        where = [host for host in hosts if name in (host_settings[host] or {})]
        errors.append('%s (set for %s)' % (unknown_name_problem(name), ', '.join(where)))
    for name in NAMES:
        default = DEFAULTS.get(name)
        seen = {}
        for host in hosts:
            variables = host_settings[host] or {}
            if name in variables:
                key = show(variables[name])
            else:
                # Unset means the default; a derived default (None) is its own value.
                key = show(default) if default is not None else None
            seen.setdefault(key, []).append(host)
        if len(seen) > 1:
            parts = []
            for key, members in seen.items():
                text = _short(key) if key is not None else 'not set'
                parts.append('%s on %s' % (text, ', '.join(members)))
            errors.append('%s: differs between the hosts of the lab: %s; set it once for the whole lab '
                          '(group_vars/all.yml, or -e)' % (name, '; '.join(parts)))
            continue
        for host in hosts:
            if name in (host_settings[host] or {}):
                settings[name] = host_settings[host][name]
                break
    return settings, errors
