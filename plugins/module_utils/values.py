# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small value helpers: how the collection reads and names plain values.

The bottom layer of plugins/module_utils (docs/architecture.md): it imports
nothing of this collection, so every other module may import it. One rule per
value kind lives here: durations (and the token lifetime kube-apiserver takes
from one), integers and booleans as YAML gives them, Kubernetes and Linux
names, host:port and URLs (and an upstream URL on the files mirror), semantic
versions, networks, Kubernetes quantities, and the labels that mark the
collection's objects.

Helpers either return a problem (a sentence naming the bad value, or None) or
raise ValueError with such a sentence.
"""

from __future__ import annotations

import datetime

import ipaddress
import json
import re
from fractions import Fraction

# Labels and annotations on the objects this collection creates.
MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'dralab.workshop'
SEAT_LABEL = 'dralab.workshop/seat'
# The scheduling gate of a pod in the GPU waitlist (seat/waitlist.py): its claim is made when the keeper removes it.
WAITLIST_GATE = 'dralab.workshop/waitlist'

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
SEMVER = re.compile(
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


def bounded_int(field, value, minimum, too_small):
    """value as an int of at least minimum, else ValueError '<field> <value> is not an integer' / '... <too_small>'."""
    try:
        number = as_int(value)
    except ValueError:
        raise ValueError('%s %s is not an integer' % (field, show(value))) from None
    if number < minimum:
        raise ValueError('%s %s %s' % (field, show(value), too_small))
    return number


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


# kube-apiserver refuses a --service-account-max-token-expiration shorter than this.
MIN_MAX_TOKEN_EXPIRATION = 3600


def max_token_expiration(value):
    """kube-apiserver's --service-account-max-token-expiration for a duration (the event's): 'Ns', at least 1h."""
    return '%ds' % max(parse_duration(value), MIN_MAX_TOKEN_EXPIRATION)


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


def url_problem(value):
    """Why value is not an http(s):// URL with a host, or None."""
    match = _URL.match(value)
    if not match:
        return 'not an http:// or https:// URL (for example http://10.88.0.1:8080)'
    problem = host_port_problem(match.group(2))
    if problem:
        return 'bad host: %s' % problem
    return None


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


def semver_problem(value, leading_v=False):
    """Why value is not a semantic version MAJOR.MINOR.PATCH[-pre][+build], or None.

    With leading_v, a leading "v" is allowed (image tags such as v0.4.0);
    without it, one is refused (Helm chart versions, Kubernetes versions here).
    """
    if not isinstance(value, str):
        return '%s is not a version string (quote it in YAML)' % show(value)
    text = value[1:] if value.startswith('v') else value
    if not SEMVER.match(text):
        if leading_v:
            return '%s is not a semantic version like v1.2.3 (major.minor.patch)' % show(value)
        return '%s is not a semantic version like 1.2.3 (major.minor.patch, no leading "v")' % show(value)
    if value.startswith('v') and not leading_v:
        return '%s must be given without the leading "v" (%s)' % (show(value), show(text))
    return None


def network(value):
    """value as an ipaddress network (a CIDR such as 10.244.0.0/16), else raise ValueError."""
    if not isinstance(value, str) or '/' not in value:
        raise ValueError('%s is not a network in CIDR notation (for example 10.244.0.0/16)' % show(value))
    try:
        return ipaddress.ip_network(value.strip(), strict=True)
    except ValueError as exc:
        raise ValueError('%s is not a network in CIDR notation (%s)' % (show(value), exc)) from None


def ip_address(value):
    """value as an ipaddress address, or None when it is not an IP address (a host name)."""
    if not isinstance(value, str):
        return None
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


def _host_variable(variables, name):
    value = variables.get(name) if variables else None
    return '' if value is None else str(value).strip()


def internal_address(variables):
    """The address a host's cluster traffic uses (kubelet's node IP, the API server's advertise address, the nodes'
    /etc/hosts): its internal_address, else its ansible_host when that is an IP address, else the default IPv4
    address of its facts, else "".

    variables: the host's variables (hostvars[host]).
    """
    given = _host_variable(variables, 'internal_address')
    if given:
        return given
    reached = _host_variable(variables, 'ansible_host')
    if ip_address(reached) is not None:
        return reached
    facts = (variables.get('ansible_facts') if variables else None) or {}
    return str((facts.get('default_ipv4') or {}).get('address') or '')


def access_address(variables):
    """The address people and the controller reach a host at (the admin kubeconfig's server, the seat cards' ssh
    line, the board's URLs): its access_address, else its ansible_host, else its internal address."""
    return (_host_variable(variables, 'access_address') or _host_variable(variables, 'ansible_host')
            or internal_address(variables))


def url_host(address):
    """An address as the host part of a URL or host:port: an IPv6 address in brackets, anything else as it is."""
    text = str(address)
    return '[%s]' % text if ':' in text and not text.startswith('[') else text


def nodes_api_server(groups, hostvars, default_port=6443):
    """The API server URL programs on the lab's hosts use (seat kubeconfigs, the board's, the reaper's): "" (the
    admin kubeconfig's server) unless the first control-plane host is reached at an access address other than its
    internal one and sets no control_plane_endpoint; then https://INTERNAL:PORT, so they need no way out and back in
    through the address translation. PORT is the host's control_plane_bind_port, else default_port (the role's)."""
    hosts = (groups or {}).get('control_plane') or []
    if not hosts:
        return ''
    variables = hostvars[hosts[0]] if hosts[0] in hostvars else {}
    internal = internal_address(variables)
    if not internal or access_address(variables) == internal or _host_variable(variables, 'control_plane_endpoint'):
        return ''
    port = _host_variable(variables, 'control_plane_bind_port') or str(default_port)
    return 'https://%s:%s' % (url_host(internal), port)


def address_problem(value):
    """Why value is neither an IP address nor a DNS name (a host's access address), or None."""
    text = '' if value is None else str(value).strip()
    address = ip_address(text)
    if address is not None:
        if address.is_unspecified or address.is_multicast:
            return '%s is an unspecified or multicast address, which nobody can reach a host at' % show(text)
        return None
    if not _HOSTNAME.match(text) or re.match(r'^[0-9.]+$', text):
        return '%s is neither an IP address nor a DNS name' % show(text)
    return None


# Kubernetes quantities (k8s.io/apimachinery resource.Quantity), exact.
_BINARY_SUFFIXES = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60}
_DECIMAL_SUFFIXES = {'n': Fraction(1, 10 ** 9), 'u': Fraction(1, 10 ** 6), 'm': Fraction(1, 1000), '': 1,
                     'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12, 'P': 10 ** 15, 'E': 10 ** 18}
_QUANTITY_RE = re.compile(r'^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$')


def parse_quantity(text):
    """The exact value of a Kubernetes quantity string ("80Gi", "100m", "1.5e3") as a Fraction; ValueError if invalid."""
    match = _QUANTITY_RE.match(str(text).strip()) if isinstance(text, str) else None
    if not match:
        raise ValueError("'%s' is not a valid quantity (examples: 40Gi, 500m, 2, 1e3)" % (text,))
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ''
    value = Fraction(number)
    if suffix in _BINARY_SUFFIXES:
        value *= _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        value *= _DECIMAL_SUFFIXES[suffix]
    else:
        value *= Fraction(10) ** int(suffix[1:])
    return -value if sign == '-' else value


def format_quantity(value, decimal=False):
    """Short text of a quantity value: the largest exact binary unit (80Gi), or with decimal the largest exact
    decimal unit (100G), else a plain number."""
    if value.denominator == 1:
        number = int(value)
        units = (('E', 'P', 'T', 'G', 'M', 'k') if decimal else ('Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'))
        for suffix in units:
            unit = _DECIMAL_SUFFIXES[suffix] if decimal else _BINARY_SUFFIXES[suffix]
            if number and number % unit == 0:
                return '%d%s' % (number // unit, suffix)
        return str(number)
    return str(float(value))


def is_decimal_quantity(text):
    """Whether a quantity string is written with a decimal SI suffix (100G, 5k), not a binary one (80Gi)."""
    match = _QUANTITY_RE.match(str(text).strip()) if isinstance(text, str) else None
    return bool(match and match.group(3) and match.group(3) in _DECIMAL_SUFFIXES and match.group(3) != '')


_DIGEST = re.compile(r'^sha256:[0-9a-f]{64}$')


def image_digests(inspected):
    """{image reference: sha256 digest} from `crictl inspecti -o json` outputs, keyed by the reference asked for.

    inspected: (reference, JSON text) pairs. The digest is the one containerd
    recorded for the pulled name (status.repoDigests, "name@sha256:..."); a
    reference without a recorded digest raises ValueError naming it.
    """
    digests = {}
    for reference, text in inspected:
        status = (json.loads(text) or {}).get('status') or {}
        found = [d.rsplit('@', 1)[1] for d in status.get('repoDigests') or [] if '@' in d]
        found = [d for d in found if _DIGEST.match(d)]
        if not found:
            raise ValueError('%s: crictl inspecti reports no sha256 repo digest (repoDigests %s)'
                             % (reference, status.get('repoDigests')))
        digests[reference] = found[0]
    return digests


def pinned_image(reference, digests):
    """reference@digest when digests knows the reference (a reference with a digest is returned as it is)."""
    if '@' in reference or reference not in digests:
        return reference
    return '%s@%s' % (reference, digests[reference])


# Times as the API writes them, and ages as kubectl prints them.
UTC = datetime.timezone.utc


def parse_time(value):
    """An aware UTC datetime from an RFC 3339 API timestamp (None if missing or unreadable)."""
    if not value:
        return None
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).strip()
    if text.endswith('Z') or text.endswith('z'):
        text = text[:-1] + '+00:00'
    if len(text) == 25 and text[10] == 'T':
        # The API's own form (2026-10-28T09:12:00Z): fromisoformat reads it on every Python this runs on.
        try:
            return datetime.datetime.fromisoformat(text).astimezone(UTC)
        except ValueError:
            pass
    match = re.match(r'^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?([+-]\d{2}:?\d{2})?$', text)
    if not match:
        return None
    offset = match.group(3) or '+00:00'
    try:
        parsed = datetime.datetime.strptime(match.group(1) + offset.replace(':', ''), '%Y-%m-%dT%H:%M:%S%z')
    except ValueError:
        return None
    return parsed.astimezone(UTC)


_EVENT_TIME = re.compile(r'^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}(?::\d{2})?)(?:\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$')


def parse_event_time(value):
    """An aware UTC datetime from an instructor's RFC 3339 time with its UTC offset (2026-10-28T09:00:00+02:00, or
    Z); None when empty. Raises ValueError naming the value otherwise: a time without an offset would depend on the
    controller's time zone."""
    if value is None or value == '':
        return None
    if isinstance(value, datetime.datetime):
        value = value.isoformat()
    match = _EVENT_TIME.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise ValueError('%s is not an RFC 3339 time with a UTC offset, for example 2026-10-28T09:00:00+02:00'
                         % show(value))
    day, clock, offset = match.groups()
    if offset is None:
        raise ValueError('%s has no UTC offset (add it, for example %s+02:00, or Z for UTC)' % (show(value), value.strip()))
    clock = clock if clock.count(':') == 2 else clock + ':00'
    offset = '+0000' if offset in ('Z', 'z') else offset.replace(':', '')
    try:
        return datetime.datetime.strptime('%sT%s%s' % (day, clock, offset), '%Y-%m-%dT%H:%M:%S%z').astimezone(UTC)
    except ValueError:
        raise ValueError('%s is not a valid time (no such date, hour or offset)' % show(value)) from None


def format_time(moment):
    """RFC 3339 in UTC with seconds, as the API writes timestamps, of an aware datetime or of seconds since the
    epoch (a JWT's exp); None for None."""
    if moment is None:
        return None
    if isinstance(moment, (int, float)):
        moment = datetime.datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


def format_age(seconds):
    """Short human age as kubectl prints it: 45s, 12m, 3h5m, 12d."""
    if seconds is None:
        return 'unknown time'
    seconds = max(int(seconds), 0)
    if seconds < 120:
        return '%ds' % seconds
    minutes = seconds // 60
    if minutes < 60:
        return '%dm' % minutes
    hours = minutes // 60
    if hours < 48:
        return '%dh%dm' % (hours, minutes % 60) if minutes % 60 else '%dh' % hours
    days = hours // 24
    return '%dd%dh' % (days, hours % 24) if days < 7 and hours % 24 else '%dd' % days
