# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The linear strategy, through Mitogen's connection multiplexer for plays that reach remote hosts."""

from __future__ import annotations

DOCUMENTATION = r"""
name: linear_fast
short_description: The linear strategy, through Mitogen for plays that reach remote hosts
description:
  - Runs a play exactly as the C(ansible.builtin.linear) strategy does (task by task, every host in step). When the
    play reaches a host that is not local and the PyPI package C(mitogen) is installed on the controller, its
    connections and module runs go through Mitogen's connection multiplexer instead, with one persistent Python
    interpreter per host and become user, which halves the time of a converged C(site.yml) run.
  - A play of local hosts only (the collection's Kubernetes API work on the controller) runs as plain
    C(ansible.builtin.linear), which starts faster there; so does every play when C(mitogen) is not installed.
  - Mitogen pins Ansible's processes to single CPUs and every command they start inherits the pin (a node that a
    task starts, a podman container say, would see one CPU); this strategy leaves CPU placement to the kernel.
  - The collection's C(ansible.cfg) selects it; C(ANSIBLE_STRATEGY=ansible.builtin.linear) goes back to plain
    Ansible. ansible-core 2.19 deprecates strategy plugins from outside C(ansible.builtin), without a version that
    removes them, and says so once per run.
author: dralab.workshop maintainers (@dralab)
version_added: 0.2.0
"""

from ansible.plugins.strategy.linear import StrategyModule as Linear

try:
    import ansible_mitogen.affinity
    import ansible_mitogen.strategy
    HAS_MITOGEN = True
except ImportError:
    HAS_MITOGEN = False

LOCAL_CONNECTIONS = frozenset(['local', 'ansible.builtin.local'])

if HAS_MITOGEN:
    # The base Policy places nothing (see the description).
    ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

    class Base(ansible_mitogen.strategy.StrategyMixin, Linear):
        """Mitogen's linear strategy."""
else:
    Base = Linear


def reaches_remote_hosts(play, hosts, variable_manager):
    """Whether a host of the play is reached by another connection than local."""
    if play.connection in LOCAL_CONNECTIONS:
        return False
    for host in hosts:
        connection = host.vars.get('ansible_connection')
        if connection is None:
            connection = variable_manager.get_vars(play=play, host=host).get('ansible_connection')
        if connection not in LOCAL_CONNECTIONS:
            return True
    return False


class StrategyModule(Base):
    """ansible.builtin.linear, through Mitogen for plays that reach remote hosts (when it is installed)."""

    def run(self, iterator, play_context):
        play = iterator._play
        if HAS_MITOGEN and reaches_remote_hosts(play, self._inventory.get_hosts(play.hosts), self._variable_manager):
            return super().run(iterator, play_context)
        return Linear.run(self, iterator, play_context)
