# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one definition of every lab-wide dralab_* setting.

Each setting has its name, type, default, bounds or choices and description
here and nowhere else. The preflight (preflight/settings.py) validates against it; the
defaults of role dralab (roles/dralab/defaults/main.yml, a dependency of every
role that reads a setting) and the tables of README.md and docs/conventions.md
are generated from it (``make settings-docs``); module argument specs and the
node programs' settings file take their defaults from it.
tests/unit/test_settings_registry.py fails when a generated file, an argument
spec's description or a sample inventory's group_vars say something else, and
tests/unit/test_default_literals.py when a default is written a second time.

Settings whose default is derived from the inventory or the controller (the
login group, the instructor's home) have ``default=None`` and say how it is
derived in ``fallback`` (the Jinja expression of role dralab's default) and
``doc_default`` (the text of the documentation tables).

This module imports only values.py (docs/architecture.md).
"""

from __future__ import annotations

import difflib
import json
import os

from ansible_collections.dralab.workshop.plugins.module_utils.values import show

PREFIX = 'dralab_'

# Operating system releases a lab node may run: (ansible_facts distribution,
# distribution_major_version for Debian / distribution_version for Ubuntu).
# Only what a test boots: the podman lab runs Debian 12 (make lab,
# molecule/default) and Debian 13 (molecule/debian13). The preflight refuses
# every other release, and the roles' meta/main.yml platforms list these
# (tests/unit/test_metadata.py).
OS_RELEASES = (('Debian', '12'), ('Debian', '13'))

# The controller folder of the lab's files (dralab_artifacts_dir) and the admin kubeconfig in it
# (dralab_kubeconfig) when they are not set, relative to the home folder.
ARTIFACTS_DIR = '.dralab'
ADMIN_KUBECONFIG = ARTIFACTS_DIR + '/admin.conf'

# The default DeviceClass menu (role device_classes).
DEFAULT_DEVICE_CLASSES = [
    {'name': 'gpu.example.com',
     'description': 'Any emulated GPU of the example driver.',
     'selectors': ["device.driver == 'gpu.example.com'"]},
    {'name': 'gpu-40gi.example.com',
     'description': 'An emulated GPU with at least 40Gi of memory.',
     'selectors': ["device.driver == 'gpu.example.com' && "
                   "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"]},
]


class Setting:
    """One lab-wide setting.

    kind: str, bool, int, list, dict, network, duration, semver, url, host_port
    (a str with a format), time (RFC 3339 with a UTC offset, or empty) or
    menu (the DeviceClass menu).
    bounds: (minimum, maximum) of an int.
    fallback: the Jinja expression role defaults give after default(...),
    only for derived defaults (default None); literal defaults are written
    as their Jinja literal (see jinja_literal()).
    doc_default: the default as the documentation tables show it.
    spec_default: how argument specs end "Defaults to C(name), else ...".
    role_spec_defaults: role variables that read the setting but whose
    argument spec states another default, with the reason beside them.
    in_role: whether role dralab gives the setting its default (False for a
    default derived from role variables, or asked by a playbook).
    """

    def __init__(self, name, kind, default, description, bounds=None, fallback=None, doc_default=None,
                 spec_default=None, role_spec_defaults=None, in_role=True):
        self.name = name
        self.kind = kind
        self.default = default
        self.description = description
        self.bounds = bounds
        self.fallback = fallback if fallback is not None else jinja_literal(default)
        self.doc_default = doc_default if doc_default is not None else markdown_literal(default)
        self.spec_default = spec_default if spec_default is not None else spec_literal(default)
        self.role_spec_defaults = role_spec_defaults or {}
        self.in_role = in_role

    def __repr__(self):
        return 'Setting(%s)' % self.name


def jinja_literal(value):
    """value written as a Jinja literal, as role defaults write fallbacks: 'user', 72, false, []."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return 'none'
    return show(value)


def markdown_literal(value):
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return show(value)


def spec_literal(value):
    if value == '':
        return 'empty'
    if value in ([], {}):
        return 'none'
    if isinstance(value, bool):
        return 'V(%s)' % ('true' if value else 'false')
    if isinstance(value, int):
        return str(value)
    return 'V(%s)' % value


SETTINGS = (
    Setting('dralab_kubernetes_version', 'semver', '1.35.4',
            'Kubernetes version (no leading v); 1.35.x unless dralab_allow_unsupported_kubernetes_version'),
    Setting('dralab_allow_unsupported_kubernetes_version', 'bool', False,
            'allow a Kubernetes version outside 1.35.x'),
    Setting('dralab_download_mirror', 'url', '',
            'base URL of a files mirror laid out like the upstream URLs (host/path); empty = upstream'),
    Setting('dralab_registry_mirror', 'host_port', '',
            'host:port of an OCI registry mirroring registry.k8s.io, docker.io, ghcr.io, quay.io (plain HTTP); '
            'empty = upstream'),
    Setting('dralab_feature_gates', 'list', [],
            'extra Kubernetes feature gate names to enable on every component'),
    Setting('dralab_dra_features', 'list', [],
            'DRA features to turn on, each with its gates, API versions, driver values, DeviceClasses and demo '
            '(README: DRA features)'),
    Setting('dralab_pod_subnet', 'network', '10.244.0.0/16',
            'pod network of the CNI, kubeadm podSubnet'),
    Setting('dralab_service_subnet', 'network', '10.96.0.0/12',
            'Service network, kubeadm serviceSubnet; must not overlap the pod network or a node address'),
    Setting('dralab_cgroup_v1', 'bool', False,
            'allow cgroup v1 hosts (failCgroupV1 false + SystemVerification preflight ignore)'),
    Setting('dralab_devices_per_node', 'int', 8, 'emulated GPUs per node', bounds=(1, 128)),
    Setting('dralab_gpus_per_seat', 'int', 1,
            'GPUs a seat may hold at a time, whatever the DeviceClasses (admission policy + quota)', bounds=(0, 128)),
    # Far above any workshop; stops a typo from generating millions of accounts.
    Setting('dralab_seats', 'int', 72, 'number of workshop seats', bounds=(0, 10000)),
    Setting('dralab_seat_prefix', 'str', 'user', 'seat names are the prefix plus a number: user01..user72'),
    Setting('dralab_seat_width', 'int', 2, 'digits of the seat numbers (at least)', bounds=(1, 10)),
    Setting('dralab_seat_names', 'list', None,
            'explicit list of seat names overriding prefix/width/count',
            fallback='workshop_users_seats | dralab.workshop.seat_names(workshop_users_seat_prefix, '
                     'workshop_users_seat_width)',
            doc_default='(derived)', spec_default='the names made from the count, prefix and width', in_role=False),
    Setting('dralab_event_duration', 'duration', '8h',
            'lifetime of seat tokens from when users.yml runs, and the longest token the API server issues '
            '(at least 10m); unused with dralab_event_end'),
    Setting('dralab_event_start', 'time', '',
            'when the workshop starts, RFC 3339 with a UTC offset (quoted: "2026-10-28T09:00:00+02:00"); '
            'empty = no event window. Set with dralab_event_end'),
    Setting('dralab_event_end', 'time', '',
            'when the workshop ends (RFC 3339 with a UTC offset): seat tokens last until then + 15m whenever '
            'users.yml runs; empty = dralab_event_duration'),
    Setting('dralab_event_lead', 'duration', '2d',
            'how long before dralab_event_start users.yml may issue the seat tokens (the day-before build): the '
            'API server\'s longest token is this + the event + 15m'),
    Setting('dralab_lease_default', 'duration', '2h', 'GPU lease of `can-has-gpu reserve` without `--for`'),
    Setting('dralab_lease_max', 'duration', '8h', 'longest lease of any seat claim (dralab-lease-reaper releases it then)'),
    Setting('dralab_waitlist_turn', 'duration', '60s',
            'how long a seat given a GPU from the waitlist has to take it (at least 5s); then the turn passes to the '
            'next seat in line'),
    Setting('dralab_etcd_quota_bytes', 'int', 4294967296,
            "etcd's backend quota (--quota-backend-bytes; etcd's own default is 2 GiB): at it every write of the "
            'cluster stops; health.yml warns from 80 %', bounds=(268435456, 8589934592)),
    Setting('dralab_device_classes', 'menu', DEFAULT_DEVICE_CLASSES,
            'DeviceClass menu: name, description, CEL selectors (see role device_classes)',
            doc_default='(menu)', spec_default='two classes'),
    Setting('dralab_login_hosts', 'list', None, 'hosts where seats get Linux accounts',
            fallback="groups['login'] | default([])", doc_default="groups['login']",
            spec_default='the hosts of the inventory group C(login)'),
    Setting('dralab_seat_login_hosts', 'dict', {},
            'login host of particular seats (seat: host); the others rotate over the sorted login hosts by seat '
            'number (docs/runbook.md: Login hosts)'),
    Setting('dralab_kubeconfig', 'str', None, 'admin kubeconfig on the controller',
            fallback="lookup('env', 'HOME') ~ '/%s'" % ADMIN_KUBECONFIG, doc_default='~/' + ADMIN_KUBECONFIG,
            spec_default='C(~/%s)' % ADMIN_KUBECONFIG),
    Setting('dralab_artifacts_dir', 'str', None, 'controller folder for credentials and kubeconfigs (0600 files)',
            fallback="lookup('env', 'HOME') ~ '/%s'" % ARTIFACTS_DIR, doc_default='~/' + ARTIFACTS_DIR,
            spec_default='C(~/%s)' % ARTIFACTS_DIR),
    Setting('dralab_teardown_confirm', 'str', '',
            "playbooks/teardown.yml runs only when this is 'yes' (else it asks)", doc_default='(asked)', in_role=False),
    Setting('dralab_teardown_remove_seats', 'bool', False,
            "playbooks/teardown.yml also removes every seat account it made on the login hosts (home, group, slice "
            "limits, cron/at deny entries)", in_role=False),
)

BY_NAME = dict((setting.name, setting) for setting in SETTINGS)
NAMES = tuple(setting.name for setting in SETTINGS)

# Defaults of the settings that have a literal default (derived ones are None).
DEFAULTS = dict((setting.name, setting.default) for setting in SETTINGS)


def admin_kubeconfig():
    """The default dralab_kubeconfig of this user (the path the roles' defaults give)."""
    return os.path.join(os.path.expanduser('~'), ADMIN_KUBECONFIG)


def markdown_table():
    """The settings table of README.md and docs/conventions.md (between the dralab-settings markers)."""
    lines = ['| variable | default | meaning |', '|---|---|---|']
    for setting in SETTINGS:
        bounds = ' (%d..%d)' % setting.bounds if setting.bounds else ''
        lines.append('| `%s` | `%s` | %s%s |' % (setting.name, setting.doc_default, setting.description, bounds))
    return '\n'.join(lines) + '\n'


ROLE_DEFAULTS_PATH = 'roles/dralab/defaults/main.yml'


def role_defaults_yaml():
    """The text of roles/dralab/defaults/main.yml: the default of every setting the roles read."""
    lines = ['---',
             '# Generated from plugins/module_utils/lab_settings.py by make settings-docs: edit a default there.',
             '# Every role that reads a dralab_* setting depends on this role (meta/main.yml), so a role used',
             '# alone gets these defaults; the inventory overrides them.']
    for setting in SETTINGS:
        if not setting.in_role:
            continue
        lines.append('')
        lines.append('# %s%s' % (setting.description[0].upper(), setting.description[1:]))
        if setting.default is None:
            lines.append('%s: "{{ %s }}"' % (setting.name, setting.fallback))
        elif setting.kind == 'menu':
            lines.append('%s:' % setting.name)
            lines.extend(yaml_block(setting.default, '  '))
        else:
            lines.append('%s: %s' % (setting.name, yaml_scalar(setting.default)))
    return '\n'.join(lines) + '\n'


def yaml_scalar(value):
    """value as YAML: strings double-quoted (a JSON string is a YAML one), [] for an empty list."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (str, int)):
        return json.dumps(value)
    if value == []:
        return '[]'
    if value == {}:
        return '{}'
    raise ValueError('no YAML form for %r' % (value,))


def yaml_block(items, indent):
    """A list of mappings of scalars and lists of scalars, in YAML block style."""
    lines = []
    for item in items:
        prefix = indent + '- '
        for key, value in item.items():
            if isinstance(value, list):
                lines.append('%s%s:' % (prefix, key))
                lines.extend('%s    - %s' % (indent, yaml_scalar(element)) for element in value)
            else:
                lines.append('%s%s: %s' % (prefix, key, yaml_scalar(value)))
            prefix = indent + '  '
    return lines


def default(name):
    """The default of a setting (None when derived from the inventory)."""
    return BY_NAME[name].default


def closest_name(name):
    """The known setting closest to an unknown dralab_* name, or None."""
    # Compared without the common prefix, which would make every name look alike.
    stems = dict((known[len(PREFIX):], known) for known in NAMES)
    stem = name[len(PREFIX):] if name.startswith(PREFIX) else name
    close = difflib.get_close_matches(stem, list(stems), n=1, cutoff=0.75)
    return stems[close[0]] if close else None


def unknown_name_problem(name):
    """'dralab_seat is not a lab setting; did you mean dralab_seats?', or without a guess the list to look in."""
    guess = closest_name(name)
    if guess:
        return '%s is not a lab setting; did you mean %s?' % (name, guess)
    return '%s is not a lab setting (README.md lists them)' % name


def os_release_problem(distribution, version, major_version=None):
    """Why a node's OS release is outside OS_RELEASES, or None.

    Debian releases compare by major version (12.7 is 12), Ubuntu ones by
    version (24.04).
    """
    for known, release in OS_RELEASES:
        if distribution == known and release in (str(version), str(major_version)):
            return None
    supported = ', '.join('%s %s' % pair for pair in OS_RELEASES)
    return ('%s %s is not a supported release (supported: %s, the releases the lab is tested on)'
            % (distribution, version, supported))


# Role variables the preflight checks as well, because a bad value would
# otherwise fail only after the cluster is built: name -> (role, leading "v"
# allowed). They are read on the first control_plane host, where the role runs.
ROLE_VERSIONS = {
    'dra_driver_chart_version': ('dra_driver', False),
    'dra_driver_helm_version': ('dra_driver', False),
    'dra_driver_image_tag': ('dra_driver', True),
}

# Role variables that bound what one seat may hold (seat/bounds.py), checked by the preflight too, so that a bound
# too small for the lab's own objects and demos stops the run before any change: name -> role. They are read on the
# controller (localhost), where those roles talk to the API server; a variable the inventory leaves unset keeps its
# role's default.
ROLE_BOUNDS = {
    'workshop_users_quota_objects': 'workshop_users',
    'workshop_users_quota_objects_by_kind': 'workshop_users',
    'workshop_users_quota_pods': 'workshop_users',
    'workshop_users_pod_grace_max': 'workshop_users',
    'workshop_users_api_concurrency_shares': 'workshop_users',
    'workshop_users_api_queue_length': 'workshop_users',
    'workshop_users_quota_ephemeral_storage': 'workshop_users',
    'workshop_users_container_default_limits': 'workshop_users',
    'workshop_users_container_default_requests': 'workshop_users',
    'workshop_users_pod_tolerations': 'workshop_users',
    'workshop_users_device_tolerations': 'workshop_users',
    'lab_reset_grace_period_seconds': 'lab_reset',
    'lab_reset_wait_timeout': 'lab_reset',
    # What one seat or one source may take from a host (preflight/seat_bounds.py check_host_bounds).
    'control_plane_kubelet_pod_pids_limit': 'control_plane',
    'workshop_users_sshd_max_startups': 'workshop_users',
    'workshop_users_sshd_per_source_max_startups': 'workshop_users',
    'lab_board_streams_per_client': 'lab_board',
    'lab_board_streams_max': 'lab_board',
    'lab_board_streams_max_instructor': 'lab_board',
    'lab_board_limit_nofile': 'lab_board',
}
