# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The functions the Kubernetes DRA CEL environment adds to standard CEL (quantity, semver, strings, lists,
regex, sets; k8s.io/apiserver/pkg/cel/library), evaluated over cel-python's types: FUNCTIONS, the names CEL knows
(KNOWN_FUNCTIONS, KNOWN_UNMODELED) and what each returns (RESULT_TYPES, BOOL_FUNCTIONS) for the compile check."""

from __future__ import annotations

import re
from fractions import Fraction

from ansible_collections.dralab.workshop.plugins.module_utils.dra.cel_types import HAS_CEL, CelError, Quantity, Semver, celpy, celtypes
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_quantity

_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1

# Names that standard CEL (as cel-python implements it) and the Kubernetes
# libraries DRA enables provide, whether this file evaluates them or not.
_MACROS = frozenset(('has', 'all', 'exists', 'exists_one', 'map', 'filter'))
_STANDARD_FUNCTIONS = frozenset((
    'size', 'contains', 'startsWith', 'endsWith', 'matches', 'type', 'int', 'uint', 'double', 'string', 'bytes',
    'bool', 'dyn', 'duration', 'timestamp', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear',
    'getFullYear', 'getMonth', 'getHours', 'getMilliseconds', 'getMinutes', 'getSeconds',
))
KNOWN_UNMODELED = frozenset((
    'url', 'isURL', 'getScheme', 'getHost', 'getHostname', 'getPort', 'getEscapedPath', 'getQuery',
    'ip', 'isIP', 'cidr', 'isCIDR', 'family', 'isUnspecified', 'isLoopback', 'isLinkLocalMulticast',
    'isLinkLocalUnicast', 'isGlobalUnicast', 'ip.isCanonical', 'prefixLength', 'masked', 'containsIP',
    'containsCIDR', 'format', 'optional.of', 'optional.none', 'optional.ofNonZeroValue', 'hasValue', 'value',
    'orValue', 'or', 'cel.bind', 'transformList', 'transformMap', 'transformMapEntry', 'reverse', 'slice',
    'flatten', 'distinct', 'lists.range', 'sort', 'sortBy', 'first', 'last',
))


def _cmp(left, right):
    return (left > right) - (left < right)


def _need(value, kind, function):
    if not isinstance(value, kind):
        raise TypeError('no such overload: %s(%s)' % (function, type(value).__name__))
    return value


def _quantity(text):
    try:
        return Quantity.parse(_need(text, str, 'quantity'))
    except ValueError as exc:
        raise CelError(str(exc))


def _is_quantity(text):
    try:
        parse_quantity(_need(text, str, 'isQuantity'))
        return celtypes.BoolType(True)
    except ValueError:
        return celtypes.BoolType(False)


def _semver(text, normalize=False):
    try:
        return Semver.parse(_need(text, str, 'semver'), bool(normalize))
    except ValueError as exc:
        raise CelError(str(exc))


def _is_semver(text, normalize=False):
    try:
        Semver.parse(_need(text, str, 'isSemver'), bool(normalize))
        return celtypes.BoolType(True)
    except ValueError:
        return celtypes.BoolType(False)


def _compare(left, right):
    if isinstance(left, Quantity) and isinstance(right, Quantity):
        return celtypes.IntType(_cmp(left.value, right.value))
    if isinstance(left, Semver) and isinstance(right, Semver):
        return celtypes.IntType(_cmp(left.key(), right.key()))
    raise TypeError('no such overload: compareTo(%s, %s)' % (type(left).__name__, type(right).__name__))


def _greater(left, right):
    return celtypes.BoolType(int(_compare(left, right)) > 0)


def _less(left, right):
    return celtypes.BoolType(int(_compare(left, right)) < 0)


def _quantity_arith(left, right, sign):
    _need(left, Quantity, 'add' if sign > 0 else 'sub')
    if isinstance(right, Quantity):
        other = right.value
    elif isinstance(right, int) and not isinstance(right, bool):
        other = Fraction(int(right))
    else:
        raise TypeError('no such overload')
    return Quantity(left.value + sign * other)


def _as_integer(value):
    q = _need(value, Quantity, 'asInteger')
    if q.value.denominator != 1 or not _INT64_MIN <= q.value <= _INT64_MAX:
        raise CelError('cannot convert value to integer')
    return celtypes.IntType(int(q.value))


def _semver_part(name):
    def part(value):
        return celtypes.IntType(getattr(_need(value, Semver, name), name))
    return part


def _char_at(text, index):
    text = _need(text, str, 'charAt')
    if not 0 <= int(index) <= len(text):
        raise CelError('index out of range: %d' % int(index))
    return celtypes.StringType(text[int(index):int(index) + 1])


def _index_of(target, item, start=0):
    if isinstance(target, str):
        start = int(start)
        if not 0 <= start <= len(target):
            raise CelError('index out of range: %d' % start)
        return celtypes.IntType(target.find(item, start))
    if isinstance(target, list):
        for position, value in enumerate(target):
            if value == item:
                return celtypes.IntType(position)
        return celtypes.IntType(-1)
    raise TypeError('no such overload')


def _last_index_of(target, item, end=None):
    if isinstance(target, str):
        end = len(target) if end is None else int(end)
        if not 0 <= end <= len(target):
            raise CelError('index out of range: %d' % end)
        return celtypes.IntType(target.rfind(item, 0, end + len(item)))
    if isinstance(target, list):
        for position in range(len(target) - 1, -1, -1):
            if target[position] == item:
                return celtypes.IntType(position)
        return celtypes.IntType(-1)
    raise TypeError('no such overload')


def _ascii_case(upper):
    def convert(text):
        text = _need(text, str, 'upperAscii' if upper else 'lowerAscii')
        return celtypes.StringType(''.join(
            (c.upper() if upper else c.lower()) if ord(c) < 128 else c for c in text))
    return convert


def _replace(text, old, new, limit=-1):
    return celtypes.StringType(_need(text, str, 'replace').replace(old, new, int(limit)))


def _split(text, sep, limit=-1):
    text, limit = _need(text, str, 'split'), int(limit)
    if limit == 0:
        return celtypes.ListType([])
    parts = text.split(sep, limit - 1) if limit > 0 else text.split(sep)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(text, start, end=None):
    text = _need(text, str, 'substring')
    start = int(start)
    end = len(text) if end is None else int(end)
    if not 0 <= start <= end <= len(text):
        raise CelError('substring index out of range [%d:%d]' % (start, end))
    return celtypes.StringType(text[start:end])


def _trim(text):
    return celtypes.StringType(_need(text, str, 'trim').strip())


def _join(items, sep=''):
    return celtypes.StringType(str(sep).join(_need(i, str, 'join') for i in _need(items, list, 'join')))


def _quote(text):
    escaped = _need(text, str, 'strings.quote').replace('\\', '\\\\').replace('"', '\\"')
    return celtypes.StringType('"%s"' % escaped.replace('\n', '\\n').replace('\t', '\\t').replace('\r', '\\r'))


def _is_sorted(items):
    items = list(_need(items, list, 'isSorted'))
    return celtypes.BoolType(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))


def _sum(items):
    items = list(_need(items, list, 'sum'))
    if not items:
        return celtypes.IntType(0)
    total = items[0]
    for item in items[1:]:
        total = total + item
    return total


def _max(items):
    items = list(_need(items, list, 'max'))
    if not items:
        raise CelError('max of an empty list')
    return max(items)


def _find(text, pattern):
    match = re.search(pattern, _need(text, str, 'find'))
    return celtypes.StringType(match.group(0) if match else '')


def _find_all(text, pattern, limit=-1):
    found = [m.group(0) for m in re.finditer(pattern, _need(text, str, 'findAll'))]
    if int(limit) >= 0:
        found = found[:int(limit)]
    return celtypes.ListType([celtypes.StringType(f) for f in found])


def _sets_contains(items, subset):
    return celtypes.BoolType(all(item in list(items) for item in subset))


def _sets_equivalent(left, right):
    return celtypes.BoolType(_sets_contains(left, right) and _sets_contains(right, left))


def _sets_intersects(left, right):
    return celtypes.BoolType(any(item in list(left) for item in right))


def _is_integer(value):
    return celtypes.BoolType(_need(value, Quantity, 'isInteger').value.denominator == 1)


class _Namespace:
    """The receiver of namespaced functions (strings.quote, sets.contains): cel-python parses them as methods."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


NAMESPACES = dict((name, _Namespace(name)) for name in ('strings', 'sets'))


def _namespaced(name, plain=None):
    def call(target, *args):
        if isinstance(target, _Namespace):
            function = FUNCTIONS.get(target.name + '.' + name)
            if function is None:
                raise TypeError('no such overload')
            return function(*args)
        if plain is None:
            raise TypeError('no such overload')
        return plain(target, *args)
    return call


def _unmodeled(name):
    def call(*_args):
        raise CelError('function %s() is valid in Kubernetes but not evaluated by this explainer' % name)
    return call


FUNCTIONS = {
    'quantity': _quantity,
    'isQuantity': _is_quantity,
    'semver': _semver,
    'isSemver': _is_semver,
    'compareTo': _compare,
    'isGreaterThan': _greater,
    'isLessThan': _less,
    'add': lambda left, right: _quantity_arith(left, right, 1),
    'sub': lambda left, right: _quantity_arith(left, right, -1),
    'sign': lambda q: celtypes.IntType(_cmp(_need(q, Quantity, 'sign').value, 0)),
    'isInteger': _is_integer,
    'asInteger': _as_integer,
    'asApproximateFloat': lambda q: celtypes.DoubleType(float(_need(q, Quantity, 'asApproximateFloat').value)),
    'major': _semver_part('major'),
    'minor': _semver_part('minor'),
    'patch': _semver_part('patch'),
    'charAt': _char_at,
    'indexOf': _index_of,
    'lastIndexOf': _last_index_of,
    'lowerAscii': _ascii_case(False),
    'upperAscii': _ascii_case(True),
    'replace': _replace,
    'split': _split,
    'substring': _substring,
    'trim': _trim,
    'join': _join,
    'strings.quote': _quote,
    'isSorted': _is_sorted,
    'sum': _sum,
    'max': _max,
    'find': _find,
    'findAll': _find_all,
    'sets.contains': _sets_contains,
    'sets.equivalent': _sets_equivalent,
    'sets.intersects': _sets_intersects,
}
for _name in KNOWN_UNMODELED:
    FUNCTIONS.setdefault(_name, _unmodeled(_name))
FUNCTIONS['quote'] = _namespaced('quote')
FUNCTIONS['contains'] = _namespaced('contains', celpy.evaluation.function_contains if HAS_CEL else None)
FUNCTIONS['equivalent'] = _namespaced('equivalent')
FUNCTIONS['intersects'] = _namespaced('intersects')
# 'min' on a list is a macro of cel-python with the same meaning as the Kubernetes list function.
KNOWN_FUNCTIONS = frozenset(FUNCTIONS) | _STANDARD_FUNCTIONS | _MACROS | frozenset(('min',))

# Result types of functions, for the "must evaluate to bool" check.
RESULT_TYPES = {
    'quantity': 'Quantity', 'semver': 'Semver', 'compareTo': 'int', 'sign': 'int', 'asInteger': 'int',
    'asApproximateFloat': 'double', 'add': 'Quantity', 'sub': 'Quantity', 'major': 'int', 'minor': 'int',
    'patch': 'int', 'size': 'int', 'charAt': 'string', 'indexOf': 'int', 'lastIndexOf': 'int',
    'lowerAscii': 'string', 'upperAscii': 'string', 'replace': 'string', 'split': 'list', 'substring': 'string',
    'trim': 'string', 'join': 'string', 'strings.quote': 'string', 'find': 'string', 'findAll': 'list',
    'map': 'list', 'filter': 'list', 'int': 'int', 'uint': 'uint', 'double': 'double', 'string': 'string',
    'bytes': 'bytes', 'duration': 'duration', 'timestamp': 'timestamp',
}
BOOL_FUNCTIONS = frozenset((
    'isQuantity', 'isSemver', 'isGreaterThan', 'isLessThan', 'isInteger', 'contains', 'startsWith', 'endsWith',
    'matches', 'isSorted', 'has', 'all', 'exists', 'exists_one', 'sets.contains', 'sets.equivalent',
    'sets.intersects', 'bool',
))


# ---------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------
