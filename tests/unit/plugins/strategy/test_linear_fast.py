# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The linear_fast strategy: linear through Mitogen, which places no process on a CPU; plain linear without it."""

from __future__ import annotations

import os
import subprocess
import sys

import ansible_mitogen.affinity
import ansible_mitogen.strategy
from ansible.plugins.strategy.linear import StrategyModule as Linear

from ansible_collections.dralab.workshop.plugins.strategy import linear_fast

from module_runner import REPO


def test_mitogen_is_mixed_into_linear():
    assert linear_fast.HAS_MITOGEN
    mro = linear_fast.StrategyModule.__mro__
    assert mro.index(ansible_mitogen.strategy.StrategyMixin) < mro.index(Linear)


def test_mitogen_places_no_process_on_a_cpu():
    """Mitogen's own policy pins the workers of a 2-CPU controller to one CPU and keeps the commands they start
    off the other (a podman node started by a task saw 1 CPU, and kubeadm refused it)."""
    policy = ansible_mitogen.affinity.policy
    # Exactly the base class, whose methods place nothing (the Linux policy derives from it).
    assert policy.__class__ is ansible_mitogen.affinity.Policy
    before = os.sched_getaffinity(0)
    policy.assign_controller()
    policy.assign_worker()
    policy.assign_subprocess()
    assert os.sched_getaffinity(0) == before


def test_without_mitogen_it_is_linear(tmp_path):
    """On a controller without the mitogen package the strategy still loads and is plain linear."""
    blocker = tmp_path / 'ansible_mitogen'
    blocker.mkdir()
    (blocker / '__init__.py').write_text('raise ImportError("no mitogen here")\n')
    code = ('from ansible_collections.dralab.workshop.plugins.strategy import linear_fast as s\n'
            'from ansible.plugins.strategy.linear import StrategyModule as L\n'
            'assert not s.HAS_MITOGEN and s.StrategyModule.__mro__[1] is L, s.StrategyModule.__mro__\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO / 'collections')]))
    proc = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
