# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the API server serves: every resource of the core group and of each group's preferred version.

One discovery read (GET /api/v1, GET /apis, then each preferred group version), shared by the reset (which
kinds to clear, seat/cleanup.py) and the seats' quota (which kinds a seat may create, seat_objects).
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import parallel_map


class Resource:
    """A resource the API serves: its group, list path prefix, plural name, kind, scope and verbs."""

    def __init__(self, group, prefix, name, kind=None, namespaced=False, verbs=()):
        self.group, self.prefix, self.name, self.kind = group, prefix, name, kind
        self.namespaced, self.verbs = namespaced, frozenset(verbs)

    def __repr__(self):
        return 'Resource(%s %s)' % (self.prefix, self.name)


def served_resources(client):
    """Every Resource the API server serves (subresources included, named like pods/exec), core group first."""
    sources = [('', '/api/v1')]
    for group in (client.request('GET', '/apis') or {}).get('groups') or []:
        preferred = (group.get('preferredVersion') or {}).get('groupVersion')
        if preferred:
            sources.append((group.get('name') or '', '/apis/' + preferred))
    listings = parallel_map(lambda source: client.request('GET', source[1]) or {}, sources)
    found = []
    for (group, prefix), listing in zip(sources, listings):
        for resource in listing.get('resources') or []:
            found.append(Resource(group, prefix, resource.get('name') or '', resource.get('kind'),
                                  bool(resource.get('namespaced')), resource.get('verbs') or ()))
    return found
