# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: os_release_problem
short_description: Why a node's OS release is not one the lab supports
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns an empty string when the facts describe a supported release, else a sentence naming the release and the
    supported ones.
  - The supported releases are the ones the lab is tested on, C(OS_RELEASES) in plugins/module_utils/lab_settings.py
    (the one list); playbooks/preflight.yml uses this filter on every node before any change.
options:
  _input:
    description: The node's C(ansible_facts), with at least the C(distribution) subset.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Stop on an unsupported release
  ansible.builtin.fail:
    msg: "{{ ansible_facts | dralab.workshop.os_release_problem }}"
  when: (ansible_facts | dralab.workshop.os_release_problem) | length > 0

# {'distribution': 'Debian', 'distribution_version': '11.9', 'distribution_major_version': '11'}
#   => "Debian 11.9 is not a supported release (supported: ..., the releases the lab is tested on)"
"""

RETURN = r"""
_value:
  description: The problem, or an empty string.
  type: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import os_release_problem as _problem


def os_release_problem(facts):
    """'' for a supported release, else why not."""
    if not isinstance(facts, dict) or 'distribution' not in facts:
        raise AnsibleFilterError('dralab.workshop.os_release_problem: the input must be ansible_facts with the '
                                 'distribution facts (gather_subset distribution)')
    return _problem(facts.get('distribution'), facts.get('distribution_version'),
                    facts.get('distribution_major_version')) or ''


class FilterModule(object):
    def filters(self):
        return {'os_release_problem': os_release_problem}
