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
import json
import re

from ansible_collections.dralab.workshop.plugins.module_utils.feature_gates import (
    FEATURE_GATES,
    FEATURE_GATES_VERSION,
)

# The lab-wide defaults of docs/conventions.md (only the ones validated here).
DEFAULTS = {
    'dralab_kubernetes_version': '1.35.4',
    'dralab_allow_unsupported_kubernetes_version': False,
    'dralab_download_mirror': '',
    'dralab_registry_mirror': '',
    'dralab_feature_gates': [],
    'dralab_cgroup_v1': False,
    'dralab_devices_per_node': 8,
    'dralab_seats': 72,
    'dralab_seat_prefix': 'user',
    'dralab_seat_width': 2,
    'dralab_seat_names': None,
    'dralab_event_duration': '8h',
    'dralab_device_classes': None,
    'dralab_login_hosts': None,
}

SUPPORTED_KUBERNETES_MINOR = (1, 35)
DEVICES_PER_NODE_RANGE = (1, 128)
# Far above any workshop; stops a typo from generating millions of accounts.
SEATS_RANGE = (0, 10000)
SEAT_WIDTH_RANGE = (1, 10)
# TokenRequest refuses expirationSeconds below 10 minutes.
MIN_EVENT_DURATION = 600

# Names a seat must never take: the Linux account would be an existing system
# account, or the namespace an existing system namespace.
RESERVED_SEAT_NAMES = frozenset((
    'root', 'daemon', 'bin', 'sys', 'sync', 'games', 'man', 'lp', 'mail',
    'news', 'uucp', 'proxy', 'www-data', 'backup', 'list', 'irc', 'gnats',
    'nobody', 'messagebus', 'sshd', 'admin', 'ubuntu', 'debian', 'kubernetes',
    'default', 'kube-system', 'kube-public', 'kube-node-lease',
))

_DNS1123_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
_DNS1123_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
# Debian's useradd NAME_REGEX (^[a-z][-a-z0-9_]*$) intersected with a DNS-1123 label.
_SEAT_NAME = re.compile(r'^[a-z]([-a-z0-9]*[a-z0-9])?$')
_SEAT_NAME_MAX = 32
_SEMVER = re.compile(
    r'^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)'
    r'(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$'
)
_HOSTNAME = re.compile(
    r'^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?$'
)
_IPV6 = re.compile(r'^\[[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?\]$')
_HOST_PORT = re.compile(r'^(\[[^\]]*\]|[^:/\[\]]+)(?::([0-9]+))?$')
_URL = re.compile(r'^(https?)://([^/?#\s]+)([/?#]\S*)?$', re.IGNORECASE)
_SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*://')
_DURATION = re.compile(r'^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$')
_DURATION_UNITS = (7 * 86400, 86400, 3600, 60, 1)
_GATE_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9]*$')
_BOOL_TRUE = ('true', 'yes', 'on', '1')
_BOOL_FALSE = ('false', 'no', 'off', '0')


def show(value):
    """Render a value for a message the way an instructor wrote it in YAML."""
    if isinstance(value, str):
        return repr(str(value))
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def as_int(value):
    """Return value as an int (ints and strings of digits), else raise ValueError."""
    if isinstance(value, bool):
        raise ValueError('%s is not an integer' % show(value))
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'^\s*[-+]?\d+\s*$', value):
        return int(value)
    raise ValueError('%s is not an integer' % show(value))


def as_bool(value):
    """Return value as a bool (booleans and the usual YAML spellings), else raise ValueError."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _BOOL_TRUE:
            return True
        if lowered in _BOOL_FALSE:
            return False
    raise ValueError('%s is not a boolean' % show(value))


def is_dns1123_label(value):
    return isinstance(value, str) and len(value) <= 63 and bool(_DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value):
    return isinstance(value, str) and len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.match(value))


def seat_name_problem(name):
    """Why name cannot be a seat (Linux user name and DNS-1123 label), or None."""
    if not isinstance(name, str):
        return '%s is not a string' % show(name)
    if not name:
        return 'the name is empty'
    if len(name) > _SEAT_NAME_MAX:
        return '%s is longer than %d characters (Linux user name limit)' % (show(name), _SEAT_NAME_MAX)
    if not _SEAT_NAME.match(name):
        return ('%s is not a valid Linux user name and DNS-1123 label '
                '(lower case letters, digits and "-", starting with a letter, ending with a letter or digit)' % show(name))
    if name in RESERVED_SEAT_NAMES:
        return '%s is reserved (an existing system account or namespace)' % show(name)
    return None


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


def url_problem(value):
    """Why value is not an http(s):// URL with a host, or None."""
    match = _URL.match(value)
    if not match:
        return 'not an http:// or https:// URL (for example http://10.88.0.1:8080)'
    problem = host_port_problem(match.group(2))
    if problem:
        return 'bad host: %s' % problem
    return None


def host_port_problem(value):
    """Why value is not host[:port] (name, IPv4 address or [IPv6] address), or None."""
    if not isinstance(value, str) or not value:
        return '%s is not a host[:port]' % show(value)
    if '://' in value:
        return '%s has a scheme; give host[:port] only (for example 10.88.0.1:5000)' % show(value)
    match = _HOST_PORT.match(value)
    if not match:
        return '%s is not host[:port] (for example 10.88.0.1:5000 or mirror.lab:5000)' % show(value)
    host, port = match.group(1), match.group(2)
    if host.startswith('['):
        if not _IPV6.match(host):
            return '%s is not a valid [IPv6] address' % show(host)
    elif not _HOSTNAME.match(host):
        return '%s is not a valid host name or IPv4 address' % show(host)
    if port is not None and not 1 <= int(port) <= 65535:
        return 'port %s is outside 1..65535' % port
    return None


def bounded_int(field, value, minimum, too_small):
    """value as an int of at least minimum, else ValueError '<field> <value> is not an integer' / '... <too_small>'."""
    try:
        number = as_int(value)
    except ValueError:
        raise ValueError('%s %s is not an integer' % (field, show(value))) from None
    if number < minimum:
        raise ValueError('%s %s %s' % (field, show(value), too_small))
    return number


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


def parse_duration(value):
    """Seconds in a duration: an int, a string of digits, or units w, d, h, m, s as in 8h, 90m, 1h30m, 2d."""
    if isinstance(value, bool):
        raise ValueError('%s is not a duration' % show(value))
    if isinstance(value, int):
        if value < 0:
            raise ValueError('%s is a negative duration' % show(value))
        return value
    if isinstance(value, str):
        text = value.strip().lower().replace(' ', '')
        if text.isdigit():
            return int(text)
        match = _DURATION.match(text)
        if text and match:
            return sum(int(amount) * unit for amount, unit in zip(match.groups(), _DURATION_UNITS) if amount)
    raise ValueError('%s is not a duration (use seconds or units w, d, h, m, s in that order, '
                     'for example 8h, 90m, 2d, 1h30m, 3600s)' % show(value))


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
    if not control_plane:
        report.error("groups['control_plane']",
                     'the inventory has no control_plane host; put the host to initialise with kubeadm '
                     'in the control_plane group')
    elif len(control_plane) > 1:
        details = (len(control_plane), ', '.join(control_plane), control_plane[0])
        report.warn("groups['control_plane']",
                    '%d hosts (%s); only the first, %s, is initialised (no HA control plane), the others '
                    'are not set up as control plane nodes' % details)


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
    match = _SEMVER.match(version)
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
        count = _check_int_range(config, 'dralab_seats', SEATS_RANGE, report)
        width = _check_int_range(config, 'dralab_seat_width', SEAT_WIDTH_RANGE, report)
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


def _check_device_classes(config, report):
    """The device_classes role's own menu validation, so that both accept the same menu."""
    classes = config.get('dralab_device_classes')
    if classes is None:
        return
    # Imported here: device_class_menu itself imports this module.
    from ansible_collections.dralab.workshop.plugins.module_utils.device_class_menu import validate_menu
    report.errors.extend(validate_menu(classes, variable='dralab_device_classes'))


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


def validate(config):
    """Check a lab configuration; return (errors, warnings), lists of strings naming their field.

    config holds the dralab_* variables under their own names (a missing key
    or None means the default of docs/conventions.md), plus:
    groups: the inventory's groups (name -> list of host names);
    hosts: every inventory host name (groups['all']); when missing, the union of groups.
    """
    report = _Report()
    _check_inventory(config, report)
    supported = _check_version(config, report)
    _check_feature_gates(config, supported, report)
    _check_bool(config, 'dralab_cgroup_v1', report)
    _check_int_range(config, 'dralab_devices_per_node', DEVICES_PER_NODE_RANGE, report)
    _check_seats(config, report)
    _check_device_classes(config, report)
    _check_login_hosts(config, report)
    _check_event_duration(config, report)
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
