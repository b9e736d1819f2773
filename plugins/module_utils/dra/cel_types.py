# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CEL values of the Kubernetes DRA environment and the CEL library itself: cel-python (import name
``celpy``) when installed (HAS_CEL, CEL_IMPORT_ERROR for the modules' missing_required_lib), the error a selector
raises (CelError), and the Quantity and Semver types that capacity and version attributes are."""

from __future__ import annotations

import re
import traceback

from ansible_collections.dralab.workshop.plugins.module_utils.values import format_quantity, parse_quantity

# The home of celpy, celtypes and CELEvalError for cel.py and cel_functions.py (None without cel-python).
try:
    import celpy  # pylint: disable=unused-import
    from celpy import celtypes  # pylint: disable=unused-import
    from celpy.evaluation import CELEvalError  # pylint: disable=unused-import
    HAS_CEL = True
    CEL_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - exercised by modules through missing_required_lib
    HAS_CEL = False
    CEL_IMPORT_ERROR = traceback.format_exc()
    celpy = None
    celtypes = None
    CELEvalError = Exception

CEL_LIBRARY = 'cel-python'


class CelError(ValueError):
    """A selector that cannot be compiled or raised an error while being evaluated for a device."""


# ---------------------------------------------------------------------------
# Quantity (k8s.io/apimachinery resource.Quantity, exact arithmetic; parsed
# and formatted by values.py, the collection's one quantity rule)
# ---------------------------------------------------------------------------


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
