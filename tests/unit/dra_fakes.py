# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake API client for dra_health: recorded DRA lists (tests/unit/fixtures/dra), paged like the API server."""

from __future__ import annotations

import json
import pathlib

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, list_pages
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.etcd import IDENTITY_LEASES as LEASES_PATH

FIXTURES = pathlib.Path(__file__).resolve().parent / 'fixtures' / 'dra'


class FakeClient:
    """Serves recorded list objects by API path, the way KubeClient does (list_items and paged request)."""

    def __init__(self, scenario, page_size=None, fail=None, metrics=None, leases=None):
        self.lists = json.loads((FIXTURES / ('%s.json' % scenario)).read_text())
        self.page_size = page_size
        self.fail = fail or {}
        self.calls = []
        # The API server's /metrics (recorded from kube-apiserver 1.35.4: etcd at 18 MB) and its identity Leases.
        self.metrics = (FIXTURES / 'apiserver-1.35.4-metrics.txt').read_text() if metrics is None else metrics
        self.lists.setdefault(LEASES_PATH, {'items': leases or []})

    def text(self, path):
        self.calls.append(('text', path, None))
        if path in self.fail:
            raise self.fail[path]
        assert path == '/metrics'
        return self.metrics

    def list_items(self, path, query=None, transform=None):
        if query:
            # A query is answered page by page through request(), by the collection's one paging loop.
            return list_pages(self, path, query, transform)
        self.calls.append(('list_items', path, None))
        if path in self.fail:
            raise self.fail[path]
        if path not in self.lists:  # as the API server answers for an API it does not serve
            raise K8sError('the server could not find the requested resource (GET %s)' % path, status=404)
        items = self.lists[path]['items']
        return list(items if transform is None else map(transform, items))

    def request(self, method, path, body=None, query=None):
        self.calls.append((method, path, dict(query or {})))
        if path in self.fail:
            raise self.fail[path]
        assert method == 'GET' and body is None
        items = self.lists[path]['items']
        selector = (query or {}).get('fieldSelector')
        if selector:
            field, value = selector.split('=', 1)
            assert field == 'reason'
            items = [i for i in items if i.get(field) == value]
        start = int((query or {}).get('continue') or 0)
        size = self.page_size or int((query or {}).get('limit') or len(items) or 1)
        page = items[start:start + size]
        meta = {'resourceVersion': '1'}
        if start + size < len(items):
            meta['continue'] = str(start + size)
        return {'apiVersion': 'v1', 'kind': 'EventList', 'metadata': meta, 'items': page}
