# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The linear_fast strategy: which plays go through Mitogen, and that Mitogen places no process on a CPU."""

from __future__ import annotations

import os
import subprocess
import sys

import ansible_mitogen.affinity
import ansible_mitogen.strategy
from ansible.plugins.strategy.linear import StrategyModule as Linear

from ansible_collections.dralab.workshop.plugins.strategy import linear_fast

from module_runner import REPO


class Host:
    def __init__(self, name, connection=None):
        self.name = name
        self.vars = {'ansible_connection': connection} if connection else {}


class Play:
    def __init__(self, connection=None):
        self.connection = connection


class Variables:
    """The variable manager: ansible_connection from group vars (None when set nowhere)."""

    def __init__(self, group_connection=None):
        self.group_connection = group_connection

    def get_vars(self, play=None, host=None):
        return {'ansible_connection': self.group_connection} if self.group_connection else {}


def test_the_controllers_plays_run_as_plain_linear():
    assert not linear_fast.reaches_remote_hosts(Play('local'), [Host('cp1', 'ssh')], Variables())
    assert not linear_fast.reaches_remote_hosts(Play(), [Host('localhost', 'local')], Variables())
    assert not linear_fast.reaches_remote_hosts(Play(), [Host('localhost')], Variables('ansible.builtin.local'))
    assert not linear_fast.reaches_remote_hosts(Play(), [], Variables())


def test_a_play_with_a_node_goes_through_mitogen():
    assert linear_fast.reaches_remote_hosts(Play(), [Host('localhost', 'local'), Host('cp1', 'ssh')], Variables())
    # No connection set anywhere: Ansible's default, ssh.
    assert linear_fast.reaches_remote_hosts(Play(), [Host('cp1')], Variables())
    assert linear_fast.reaches_remote_hosts(Play(), [Host('cp1')], Variables('ssh'))


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
