# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the DRA reports word things: counts with their noun, lists of names, a device and where it is."""

from __future__ import annotations

import functools
import re


def plural(count, word, plural_form=None):
    """'1 GPU', '3 GPUs': a count with its noun."""
    return '%d %s' % (count, word if count == 1 else (plural_form or word + 's'))


def join_names(names):
    """'a', 'a and b', 'a, b and c'."""
    names = list(names)
    if len(names) <= 1:
        return ''.join(names)
    return ', '.join(names[:-1]) + ' and ' + names[-1]


def device_label(driver, pool, device, pool_node):
    if pool_node:
        return 'device %s on node %s (driver %s)' % (device, pool_node, driver)
    return 'device %s in pool %s (driver %s)' % (device, pool, driver)


_NATURAL = re.compile(r'(\d+)')


# Cached: the explainer sorts the same node and device names for every pending claim.
@functools.lru_cache(maxsize=65536)
def natural_key(text):
    return tuple(int(part) if part.isdigit() else part for part in _NATURAL.split(text or ''))
