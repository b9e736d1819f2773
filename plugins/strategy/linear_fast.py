# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The linear strategy, through Mitogen's connection multiplexer."""

from __future__ import annotations

DOCUMENTATION = r"""
name: linear_fast
short_description: The linear strategy, through Mitogen's connection multiplexer
description:
  - Runs a play exactly as the C(ansible.builtin.linear) strategy does (task by task, every host in step). When the
    PyPI package C(mitogen) is installed on the controller, connections and module runs go through Mitogen's
    connection multiplexer instead, with one persistent Python interpreter per host and become user, the
    controller's own (C(localhost)) included.
  - On the nodes that halves the time of a converged C(site.yml) run. On the controller, where the collection's
    Kubernetes API modules run, a module no longer pays a new interpreter and the import of the Kubernetes client
    (0.4 to 0.5 s each), so a playbook of many module runs such as C(reset.yml) gets faster, while a playbook of
    two module runs such as C(health.yml) pays about 0.3 s more to start the multiplexer.
  - The controller's plays share one interpreter only when C(localhost) has one Python path in every play. Leave
    C(localhost) implicit (it runs the Python of C(ansible-playbook)) or set its C(ansible_python_interpreter) to
    C(ansible_playbook_python), the preflight plays' own. Another path, even to the same Python, starts a second
    interpreter, which pays the start and the imports again (about 0.6 s per run).
  - Mitogen pins Ansible's processes to single CPUs and every command they start inherits the pin (a node that a
    task starts, a podman container say, would see one CPU); this strategy leaves CPU placement to the kernel.
  - Without C(mitogen) every play runs as plain C(ansible.builtin.linear). The collection's C(ansible.cfg) selects
    this strategy; C(ANSIBLE_STRATEGY=ansible.builtin.linear) goes back to plain Ansible. ansible-core 2.19
    deprecates strategy plugins from outside C(ansible.builtin), without a version that removes them, and says so
    once per run.
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

if HAS_MITOGEN:
    # The base Policy places nothing (see the description).
    ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

    class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Linear):
        """ansible.builtin.linear through Mitogen."""
else:
    class StrategyModule(Linear):  # type: ignore[no-redef]
        """ansible.builtin.linear (no mitogen on this controller)."""
