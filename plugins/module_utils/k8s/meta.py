# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading an API object as the API serves it (a plain dict): its metadata, name, namespace and conditions."""

from __future__ import annotations


def object_meta(obj):
    """The object's metadata; {} for a missing object or metadata."""
    return (obj or {}).get('metadata') or {}


def object_name(obj):
    return object_meta(obj).get('name')


def object_namespace(obj):
    return object_meta(obj).get('namespace')


def condition(obj, kind):
    """The status condition of that type, or None."""
    for cond in ((obj or {}).get('status') or {}).get('conditions') or []:
        if cond.get('type') == kind:
            return cond
    return None
