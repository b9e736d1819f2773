"""The health benchmark's baseline: list the kinds dra_health reads, as raw JSON, page by page (500 a page).

Run as a child process by benchmarks/bench.py, which takes its time and peak RSS. It uses the kubernetes
client's ApiClient directly (not this collection's code), decodes every page and keeps every item.

Usage: python benchmarks/list_raw.py KUBECONFIG
"""

from __future__ import annotations

import json
import sys
import urllib.parse

from kubernetes import config

PATHS = (
    '/apis/resource.k8s.io/v1/deviceclasses', '/apis/resource.k8s.io/v1/resourceslices',
    '/apis/resource.k8s.io/v1/resourceclaims', '/api/v1/pods', '/api/v1/nodes', '/api/v1/namespaces',
    '/api/v1/events?fieldSelector=reason%3DFailedScheduling',
)


def main(kubeconfig: str) -> int:
    api = config.new_client_from_config(config_file=kubeconfig)
    pool = api.rest_client.pool_manager
    host = api.configuration.host
    headers = {'Accept': 'application/json'}
    token_auth = (api.configuration.api_key or {}).get('authorization')
    if token_auth:
        headers['Authorization'] = token_auth
    items = {}
    for path in PATHS:
        kept, token = [], None
        while True:
            sep = '&' if '?' in path else '?'
            url = '%s%s%slimit=500%s' % (host, path, sep, '&continue=' + urllib.parse.quote(token) if token else '')
            page = json.loads(pool.request('GET', url, headers=headers).data)
            kept.extend(page.get('items') or [])
            token = (page.get('metadata') or {}).get('continue')
            if not token:
                break
        items[path] = kept
    print(json.dumps({path: len(kept) for path, kept in items.items()}))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
