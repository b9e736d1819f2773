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

from ansible_collections.dralab.workshop.plugins.module_utils.dra.cel_functions import BOOL_FUNCTIONS, FUNCTIONS, KNOWN_FUNCTIONS, NAMESPACES, RESULT_TYPES
from ansible_collections.dralab.workshop.plugins.module_utils.dra.cel_types import (
    CEL_LIBRARY,
    HAS_CEL,
    CELEvalError,
    CelError,
    Quantity,
    Semver,
    celpy,
    celtypes,
)

DEVICE_FIELDS = ('driver', 'attributes', 'capacity')
MULTI_ALLOCATION_FIELD = 'allowMultipleAllocations'

_BOOL_TYPES = ('bool', 'dyn')

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
        return 'bool' if name in BOOL_FUNCTIONS else RESULT_TYPES.get(name, 'dyn')
    if data == 'member_dot_arg':
        name = node.children[1].value
        dotted = _dotted_name(node.children[0])
        if dotted in ('strings', 'sets'):
            name = dotted + '.' + name
        return 'bool' if name in BOOL_FUNCTIONS else RESULT_TYPES.get(name, 'dyn')
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
        activation = dict(NAMESPACES)
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
