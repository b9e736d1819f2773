"""Make the collection importable as ansible_collections.dralab.workshop from this checkout; register the markers.

collections/ holds a link to the repository. Ansible's plugin loader, given it as its first collections path
(render.use_this_checkout), resolves both Python imports of ansible_collections.dralab.workshop and template
lookups of dralab.workshop.* filters to this checkout.
"""

from __future__ import annotations

from render import use_this_checkout

use_this_checkout()


def pytest_configure(config):
    # `make test-unit` deselects these; `make test-unit-tools` provides the tools (make test-tools) and runs them.
    config.addinivalue_line(
        'markers', 'needs_tools: runs a non-Python tool that `make test-tools` provides (systemd-analyze, docker-registry, '
        'chromium)')
