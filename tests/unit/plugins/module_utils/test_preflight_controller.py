# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller versions the preflight accepts."""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.preflight.controller import controller_problem


@pytest.mark.parametrize('core, python', [('2.21.0', (3, 12, 0)), ('2.21.5', (3, 13, 0, 'final', 0)),
                                          ('2.22.0.dev0', (3, 14, 1)), ('2.21.0rc1', (3, 12, 1))])
def test_supported_controllers_pass(core, python):
    assert controller_problem(core, python) == ''


@pytest.mark.parametrize('core, python, shown', [
    ('2.19.14', (3, 11, 7), 'ansible-core 2.19.14 on Python 3.11.7'),
    ('2.20.10', (3, 12, 1), 'ansible-core 2.20.10 on Python 3.12.1'),
    ('2.21.5', (3, 11, 7), 'ansible-core 2.21.5 on Python 3.11.7'),
    ('devel', (3, 13, 0), 'ansible-core devel on Python 3.13.0'),
])
def test_older_controllers_get_one_sentence_naming_both_versions(core, python, shown):
    problem = controller_problem(core, python)
    assert problem.startswith('This controller runs %s;' % shown), problem
    assert 'ansible-core 2.21 or newer on Python 3.12 or newer' in problem and problem.count('. ') == 0
