# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller the collection supports: the ansible-core and Python versions the preflight accepts."""

from __future__ import annotations

import re

# meta/runtime.yml's requires_ansible says the same (tests/unit/test_metadata.py keeps them equal).
MIN_ANSIBLE_CORE = (2, 21)
# ansible-core 2.21's own floor for the controller.
MIN_PYTHON = (3, 12)


def _version_tuple(text):
    """(major, minor) of a version such as '2.21.5' or '2.22.0.dev0'; () when it starts otherwise ('devel')."""
    match = re.match(r'(\d+)\.(\d+)', str(text))
    return (int(match.group(1)), int(match.group(2))) if match else ()


def controller_problem(ansible_core_version, python_version):
    """One sentence when this controller's ansible-core or Python is older than the collection supports, else ''.

    ansible_core_version is ansible_version.full ('2.21.5'); python_version is sys.version_info (or a tuple).
    """
    core = _version_tuple(ansible_core_version)
    python = tuple(python_version[:2])
    if core and core >= MIN_ANSIBLE_CORE and python >= MIN_PYTHON:
        return ''
    return ('This controller runs ansible-core %s on Python %s; dralab.workshop needs ansible-core %s or newer on '
            'Python %s or newer: make a venv from Python %s+ and install requirements.txt in it (`make setup` '
            'does both), then run the playbook from that venv.'
            % (ansible_core_version, '.'.join(str(n) for n in python_version[:3]),
               '.'.join(map(str, MIN_ANSIBLE_CORE)), '.'.join(map(str, MIN_PYTHON)),
               '.'.join(map(str, MIN_PYTHON))))
