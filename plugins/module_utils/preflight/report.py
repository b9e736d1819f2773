# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every preflight check shares: the report it writes to and how it reads a setting.

A check reads config (the dralab_* variables under their own names, plus the
inventory's groups, hosts and node addresses) and writes each problem to a
Report as "field: sentence", the field being the variable or inventory group
the sentence is about.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import DEFAULTS


def given(config, key):
    """The configured value of key, or its default (lab_settings) when missing or None."""
    value = config.get(key)
    return DEFAULTS.get(key) if value is None else value


class Report(object):
    """Errors (the run stops) and warnings (allowed, probably unintended), each naming its field."""

    def __init__(self):
        self.errors = []
        self.warnings = []

    def error(self, field, message):
        self.errors.append('%s: %s' % (field, message))

    def warn(self, field, message):
        self.warnings.append('%s: %s' % (field, message))
