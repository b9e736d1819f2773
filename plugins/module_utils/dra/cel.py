# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CEL for DRA device selectors, as Kubernetes 1.35 evaluates them.

The expression language comes from cel-python (import name ``celpy``, a pure
Python CEL implementation on PyPI). This file adds what the Kubernetes DRA
environment (k8s.io/dynamic-resource-allocation/cel, k8s.io/apiserver/pkg/cel)
declares on top of standard CEL:

- the variable ``device`` with ``driver``, ``attributes`` and ``capacity``
  (maps by domain; a qualified name without a domain belongs to the driver's
  domain; a domain the device does not publish reads as an empty map), and
  ``allowMultipleAllocations`` when consumable capacity is on;
- ``quantity()`` / ``isQuantity()`` and the Quantity methods (compareTo,
  isGreaterThan, isLessThan, add, sub, sign, isInteger, asInteger,
  asApproximateFloat); capacity values are Quantities;
- ``semver()`` / ``isSemver()`` and the Semver methods (compareTo,
  isGreaterThan, isLessThan, major, minor, patch); version attributes are
  Semvers;
- the string extension (charAt, indexOf, lastIndexOf, lowerAscii, upperAscii,
  replace, split, substring, trim, join, strings.quote), the Kubernetes list
  library (isSorted, sum, min, max, indexOf, lastIndexOf), regex find/findAll
  and sets.contains/equivalent/intersects.

What is not modeled (KNOWN_UNMODELED): url/ip/cidr/format functions, optional
types, two-variable comprehensions, cel.bind and the cost limit. An expression
calling them is not reported as a compile problem (Kubernetes accepts it), but
device_matches() raises CelError saying the explainer cannot evaluate it. The
optional-field syntax (``a.?b``, ``[?k]``) is beyond cel-python's parser and is
reported as a syntax error.

compile_problem() checks what Kubernetes checks at admission as far as it
matters to a participant: syntax, unknown variables, fields of ``device`` and
functions, and a result that cannot be a bool. cel-python has no type
checker, so deeper type errors (e.g. comparing a string to an int) show up as
runtime errors.
"""

from __future__ import annotations

import re
import traceback
from fractions import Fraction

from ansible_collections.dralab.workshop.plugins.module_utils.values import format_quantity, parse_quantity

try:
    import celpy
    from celpy import celtypes
    from celpy.evaluation import CELEvalError
    HAS_CEL = True
    CEL_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - exercised by modules through missing_required_lib
    HAS_CEL = False
    CEL_IMPORT_ERROR = traceback.format_exc()
    celpy = None
    celtypes = None
    CELEvalError = Exception

CEL_LIBRARY = 'cel-python'
DEVICE_FIELDS = ('driver', 'attributes', 'capacity')
MULTI_ALLOCATION_FIELD = 'allowMultipleAllocations'

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

_BOOL_TYPES = ('bool', 'dyn')


class CelError(ValueError):
    """A selector that cannot be compiled or raised an error while being evaluated for a device."""


# ---------------------------------------------------------------------------
# Quantity (k8s.io/apimachinery resource.Quantity, exact arithmetic; parsed
# and formatted by values.py, the collection's one quantity rule)
# ---------------------------------------------------------------------------

_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


class Quantity:
    """A CEL value of Kubernetes type Quantity."""

    __slots__ = ('value', 'text')

    def __init__(self, value, text=None):
        self.value = value
        self.text = text if text is not None else format_quantity(value)

    @classmethod
    def parse(cls, text):
        return cls(parse_quantity(text), str(text).strip())

    def __eq__(self, other):
        if not isinstance(other, Quantity):
            raise TypeError('no such overload: Quantity == %s' % type(other).__name__)
        return self.value == other.value

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return 'Quantity(%s)' % self.text

    __str__ = __repr__


class Semver:
    """A CEL value of Kubernetes type Semver (blang/semver semantics)."""

    __slots__ = ('major', 'minor', 'patch', 'pre', 'text')

    _RE = re.compile(r'^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)'
                     r'(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?'
                     r'(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$')

    def __init__(self, major, minor, patch, pre=(), text=None):
        self.major, self.minor, self.patch, self.pre = major, minor, patch, tuple(pre)
        self.text = text or '%d.%d.%d' % (major, minor, patch)

    @classmethod
    def parse(cls, text, normalize=False):
        raw = str(text)
        if normalize:
            raw = _normalize_semver(raw)
        match = cls._RE.match(raw)
        if not match:
            raise ValueError("'%s' is not a valid semantic version (example: 1.2.3)" % (text,))
        pre = tuple(match.group(4).split('.')) if match.group(4) else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre, raw)

    def key(self):
        def part(item):
            return (0, int(item), '') if item.isdigit() else (1, 0, item)
        # A version without pre-release ranks above one with the same numbers and a pre-release.
        return (self.major, self.minor, self.patch, (1,) if not self.pre else (0,) + tuple(part(p) for p in self.pre))

    def __eq__(self, other):
        if not isinstance(other, Semver):
            raise TypeError('no such overload: Semver == %s' % type(other).__name__)
        return self.key() == other.key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return 'Semver(%s)' % self.text

    __str__ = __repr__


def _normalize_semver(text):
    text = text[1:] if text.startswith('v') else text
    core, sep, rest = re.match(r'^([0-9.]*)([-+]?)(.*)$', text).groups()
    parts = core.split('.') if core else []
    if not 1 <= len(parts) <= 3 or any(not p.isdigit() for p in parts):
        return text
    parts = [str(int(p)) for p in parts] + ['0'] * (3 - len(parts))
    return '.'.join(parts) + sep + rest


# ---------------------------------------------------------------------------
# Functions of the Kubernetes environment
# ---------------------------------------------------------------------------

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


_NAMESPACES = dict((name, _Namespace(name)) for name in ('strings', 'sets'))


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
_RESULT_TYPES = {
    'quantity': 'Quantity', 'semver': 'Semver', 'compareTo': 'int', 'sign': 'int', 'asInteger': 'int',
    'asApproximateFloat': 'double', 'add': 'Quantity', 'sub': 'Quantity', 'major': 'int', 'minor': 'int',
    'patch': 'int', 'size': 'int', 'charAt': 'string', 'indexOf': 'int', 'lastIndexOf': 'int',
    'lowerAscii': 'string', 'upperAscii': 'string', 'replace': 'string', 'split': 'list', 'substring': 'string',
    'trim': 'string', 'join': 'string', 'strings.quote': 'string', 'find': 'string', 'findAll': 'list',
    'map': 'list', 'filter': 'list', 'int': 'int', 'uint': 'uint', 'double': 'double', 'string': 'string',
    'bytes': 'bytes', 'duration': 'duration', 'timestamp': 'timestamp',
}
_BOOL_FUNCTIONS = frozenset((
    'isQuantity', 'isSemver', 'isGreaterThan', 'isLessThan', 'isInteger', 'contains', 'startsWith', 'endsWith',
    'matches', 'isSorted', 'has', 'all', 'exists', 'exists_one', 'sets.contains', 'sets.equivalent',
    'sets.intersects', 'bool',
))


# ---------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------

_ENV = None
_PROGRAMS = {}
# The selector of most DeviceClasses (the example driver's chart among them): the device's driver compared with
# one string literal, either way round. It is answered without cel-python, whose parser alone takes 0.6 s to build
# and which evaluates it in 0.5 ms per device; the device's value is still made (a bad attribute fails as it does
# in Kubernetes).
_DRIVER_LITERAL = r"""(?:"([^"\\\n]*)"|'([^'\\\n]*)')"""
_DRIVER_EQUALS = re.compile(r'\A\s*(?:device\.driver\s*==\s*%s|%s\s*==\s*device\.driver)\s*\Z'
                            % (_DRIVER_LITERAL, _DRIVER_LITERAL))


def driver_equality(expression):
    """The driver name of a selector that is exactly `device.driver == "name"` (or reversed), else None."""
    found = _DRIVER_EQUALS.match(expression) if isinstance(expression, str) else None
    if found is None:
        return None
    return next(group for group in found.groups() if group is not None)


def _env():
    global _ENV
    if not HAS_CEL:
        raise CelError('the Python library %s is not installed (pip install %s)' % (CEL_LIBRARY, CEL_LIBRARY))
    if _ENV is None:
        _ENV = celpy.Environment()
    return _ENV


def _tree_token(tree):
    child = tree.children[0] if tree.children else None
    return getattr(child, 'value', child)


def _dotted_name(tree):
    """'strings.quote' for the member tree of `strings.quote(...)`, None if it is not a plain dotted name."""
    if tree.data == 'primary' and tree.children and getattr(tree.children[0], 'data', None) == 'ident':
        return _tree_token(tree.children[0])
    if tree.data == 'member':
        return _dotted_name(tree.children[0])
    if tree.data == 'member_dot':
        left = _dotted_name(tree.children[0])
        return left + '.' + tree.children[1].value if left else None
    return None


class _Checker:
    """Static checks over the cel-python parse tree (no type checker exists in that library)."""

    def __init__(self, consumable_capacity):
        self.fields = DEVICE_FIELDS + ((MULTI_ALLOCATION_FIELD,) if consumable_capacity else ())
        self.problems = []

    def visit(self, tree, bound):
        data = getattr(tree, 'data', None)
        if data is None:
            return
        if data == 'ident':
            name = _tree_token(tree)
            if name != 'device' and name not in bound:
                self.problems.append("undeclared reference to '%s' (the only variable is device)" % name)
            return
        if data == 'ident_arg':
            name = tree.children[0].value
            if name not in KNOWN_FUNCTIONS:
                self.problems.append("undeclared reference to function '%s'" % name)
            for child in tree.children[1:]:
                self.visit(child, bound)
            return
        if data == 'member_dot':
            target, field = tree.children[0], tree.children[1].value
            if _dotted_name(target) == 'device' and 'device' not in bound and field not in self.fields:
                self.problems.append("device has no field '%s' (it has %s)" % (field, ', '.join(self.fields)))
                return
            self.visit(target, bound)
            return
        if data == 'member_dot_arg':
            target, method = tree.children[0], tree.children[1].value
            dotted = _dotted_name(target)
            if dotted in ('strings', 'sets', 'optional', 'cel', 'lists', 'math') and dotted not in bound:
                name = dotted + '.' + method
                if name not in KNOWN_FUNCTIONS:
                    self.problems.append("undeclared reference to function '%s'" % name)
                args = tree.children[2] if len(tree.children) > 2 else None
                if name == 'cel.bind' and args is not None and args.children:
                    variable = _macro_variable(args.children[0])
                    for child in args.children[1:]:
                        self.visit(child, bound | {variable} if variable else bound)
                    return
                for child in tree.children[2:]:
                    self.visit(child, bound)
                return
            if method not in KNOWN_FUNCTIONS:
                self.problems.append("undeclared reference to function '%s'" % method)
            self.visit(target, bound)
            args = tree.children[2] if len(tree.children) > 2 else None
            if method in ('all', 'exists', 'exists_one', 'map', 'filter') and args is not None and args.children:
                # The leading plain identifiers are the macro's variables (two with the two-variable forms).
                inner = set(bound)
                for child in args.children[:-1]:
                    variable = _macro_variable(child)
                    if variable is None:
                        break
                    inner.add(variable)
                for child in args.children[len(inner - set(bound)):]:
                    self.visit(child, frozenset(inner))
                return
            if args is not None:
                self.visit(args, bound)
            return
        for child in tree.children:
            self.visit(child, bound)


def _macro_variable(expr):
    """The variable name a macro binds (`x` in `list.all(x, ...)`)."""
    node = expr
    while getattr(node, 'data', None) is not None and node.data != 'ident':
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return _tree_token(node) if getattr(node, 'data', None) == 'ident' else None


def _result_type(tree):
    """Best-effort static type of an expression tree: 'bool', 'dyn' (unknown) or another type name."""
    node = tree
    while getattr(node, 'data', None) in ('expr', 'conditionalor', 'conditionaland', 'relation', 'addition',
                                          'multiplication', 'unary', 'member', 'primary') and len(node.children) == 1:
        node = node.children[0]
    data = getattr(node, 'data', None)
    if data in ('expr',) and len(node.children) == 3 and node.children[1] is not None:
        left, right = _result_type(node.children[1]), _result_type(node.children[2])
        return left if left == right else 'dyn'
    if data in ('conditionalor', 'conditionaland', 'relation'):
        return 'bool'
    if data == 'unary' and getattr(node.children[0], 'data', None) == 'unary_not':
        return 'bool'
    if data == 'unary':
        return 'int'
    if data in ('addition', 'multiplication'):
        return 'dyn'
    if data == 'literal':
        token = node.children[0]
        kind = getattr(token, 'type', '')
        return {'INT_LIT': 'int', 'UINT_LIT': 'uint', 'FLOAT_LIT': 'double', 'STRING_LIT': 'string',
                'MLSTRING_LIT': 'string', 'BYTES_LIT': 'bytes', 'BOOL_LIT': 'bool', 'NULL_LIT': 'null'}.get(kind, 'dyn')
    if data in ('list_lit',):
        return 'list'
    if data in ('map_lit',):
        return 'map'
    if data == 'ident_arg':
        name = node.children[0].value
        return 'bool' if name in _BOOL_FUNCTIONS else _RESULT_TYPES.get(name, 'dyn')
    if data == 'member_dot_arg':
        name = node.children[1].value
        dotted = _dotted_name(node.children[0])
        if dotted in ('strings', 'sets'):
            name = dotted + '.' + name
        return 'bool' if name in _BOOL_FUNCTIONS else _RESULT_TYPES.get(name, 'dyn')
    if data == 'member_dot' and _dotted_name(node.children[0]) == 'device':
        return {'driver': 'string', 'attributes': 'map', 'capacity': 'map',
                MULTI_ALLOCATION_FIELD: 'bool'}.get(node.children[1].value, 'dyn')
    return 'dyn'


def _compile(expression, consumable_capacity=False):
    """(program, None) or (None, problem sentence); cached per expression."""
    key = (expression, bool(consumable_capacity))
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    env = _env()
    if not isinstance(expression, str) or not expression.strip():
        found = (None, 'the CEL expression is empty')
        _PROGRAMS[key] = found
        return found
    try:
        ast = env.compile(expression)
    except celpy.CELParseError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else 'syntax error'
        found = (None, 'syntax error in CEL expression %r: %s' % (expression, first))
        _PROGRAMS[key] = found
        return found
    checker = _Checker(consumable_capacity)
    checker.visit(ast, frozenset())
    if checker.problems:
        found = (None, 'CEL expression %r does not compile: %s' % (expression, checker.problems[0]))
    else:
        result = _result_type(ast)
        if result not in _BOOL_TYPES:
            found = (None, 'CEL expression %r must evaluate to bool, not %s' % (expression, result))
        else:
            found = (env.program(ast, functions=FUNCTIONS), None)
    _PROGRAMS[key] = found
    return found


def compile_problem(expression, consumable_capacity=False):
    """None when the expression compiles in the DRA CEL environment, else one sentence naming the problem."""
    if driver_equality(expression) is not None:
        return None
    return _compile(expression, consumable_capacity)[1]


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------

class _DefaultMap(celtypes.MapType if HAS_CEL else dict):
    """A map whose missing keys read as an empty map (device.attributes / device.capacity by domain)."""

    def __getitem__(self, key):
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def qualified_name(name, driver):
    """(domain, id) of an attribute or capacity name; a name without a domain belongs to the driver's domain."""
    domain, sep, ident = str(name).partition('/')
    return (domain, ident) if sep else (driver, str(name))


def _attribute_value(name, attribute):
    if not isinstance(attribute, dict):
        raise CelError('attribute %s: unsupported attribute value' % name)
    if attribute.get('int') is not None:
        return celtypes.IntType(int(attribute['int']))
    if attribute.get('bool') is not None:
        return celtypes.BoolType(bool(attribute['bool']))
    if attribute.get('string') is not None:
        return celtypes.StringType(attribute['string'])
    if attribute.get('version') is not None:
        try:
            return Semver.parse(attribute['version'])
        except ValueError as exc:
            raise CelError('attribute %s: parse semantic version: %s' % (name, exc))
    raise CelError('attribute %s: unsupported attribute value' % name)


def device_variable(device, driver):
    """The CEL value of `device` for a ResourceSlice device dict (spec.devices[] of resource.k8s.io/v1)."""
    attributes = {}
    for name, attribute in (device.get('attributes') or {}).items():
        domain, ident = qualified_name(name, driver)
        attributes.setdefault(domain, {})[celtypes.StringType(ident)] = _attribute_value(name, attribute)
    capacity = {}
    for name, entry in (device.get('capacity') or {}).items():
        domain, ident = qualified_name(name, driver)
        raw = entry.get('value') if isinstance(entry, dict) else entry
        try:
            capacity.setdefault(domain, {})[celtypes.StringType(ident)] = Quantity.parse(str(raw))
        except ValueError as exc:
            raise CelError('capacity %s: %s' % (name, exc))
    return celtypes.MapType({
        celtypes.StringType('driver'): celtypes.StringType(driver or ''),
        celtypes.StringType(MULTI_ALLOCATION_FIELD): celtypes.BoolType(bool(device.get(MULTI_ALLOCATION_FIELD))),
        celtypes.StringType('attributes'): _DefaultMap(
            dict((celtypes.StringType(k), celtypes.MapType(v)) for k, v in attributes.items())),
        celtypes.StringType('capacity'): _DefaultMap(
            dict((celtypes.StringType(k), celtypes.MapType(v)) for k, v in capacity.items())),
    })


def evaluate(expression, variable, consumable_capacity=False):
    """Evaluate a compiled selector against a prepared `device` value (see device_variable); True/False or CelError.

    A driver_equality() selector is answered from the value's driver, without cel-python."""
    literal = driver_equality(expression)
    if literal is not None:
        return str(variable[celtypes.StringType('driver')]) == literal
    program, problem = _compile(expression, consumable_capacity)
    if problem:
        raise CelError(problem)
    try:
        activation = dict(_NAMESPACES)
        activation['device'] = variable
        result = program.evaluate(activation)
    except Exception as exc:  # cel-python lets some errors of extension functions through
        if isinstance(exc, CelError):
            raise
        raise CelError('CEL runtime error: %s' % _short_error(exc))
    if isinstance(result, CELEvalError):
        raise CelError('CEL runtime error: %s' % _short_error(result))
    if isinstance(result, CelError):
        raise result
    if not isinstance(result, (bool, celtypes.BoolType)):
        raise CelError('CEL result of type %s could not be converted to bool' % type(result).__name__)
    return bool(result)


def _short_error(exc):
    args = getattr(exc, 'args', ()) or ()
    text = str(args[0]) if args else str(exc)
    cause = exc.__cause__
    if isinstance(cause, CelError):
        return str(cause)
    if isinstance(cause, KeyError) and 'no such' not in text:
        return 'no such key: %s' % (cause.args[0] if cause.args else '')
    if ' (in activation' in text:
        text = text.split(' (in activation', 1)[0]
    return text


def device_matches(expression, device, driver, consumable_capacity=False):
    """Whether a ResourceSlice device dict satisfies a CEL selector; CelError on compile or runtime errors."""
    return evaluate(expression, device_variable(device, driver), consumable_capacity)
