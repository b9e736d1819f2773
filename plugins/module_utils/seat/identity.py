# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The identity of a node program (the lease reaper, the board), made in one pass.

A ServiceAccount with a long-lived token Secret, a ClusterRole and ClusterRoleBinding NAME-read (cluster-wide
reads), and with seat rules a ClusterRole NAME-seat bound by a RoleBinding in every seat namespace (found by
the Namespace labels, which a seat cannot change). Its kubeconfig is written on the controller (0600).

One list per kind serves both the comparison and the seat namespaces; on a rerun the token comes from the
Secret that list returned, so a converged identity costs one read per kind and no write.
"""

from __future__ import annotations

import base64
import os
import time

from ansible_collections.dralab.workshop.plugins.module_utils.files.write import file_state, write_if_changed
from ansible_collections.dralab.workshop.plugins.module_utils.k8s import apply as k8s_apply
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import MANAGED_SELECTOR, seat_of
from ansible_collections.dralab.workshop.plugins.module_utils.seat.tokens import render_kubeconfig
from ansible_collections.dralab.workshop.plugins.module_utils.values import MANAGED_BY, MANAGED_BY_LABEL

NAME_LABEL = 'app.kubernetes.io/name'
POD_SECURITY_LABEL = 'pod-security.kubernetes.io/enforce'
TOKEN_TIMEOUT_SECONDS = 30
TOKEN_POLL_SECONDS = 0.5
NAMESPACE_KEY = ('v1', 'Namespace')


def token_secret_name(name):
    return '%s-token' % name


def identity_objects(name, namespace, read_rules, seat_rules=(), seat_namespaces=()):
    """The objects of the identity NAME in namespace, in the order they are applied."""
    labels = {MANAGED_BY_LABEL: MANAGED_BY, NAME_LABEL: name}

    def meta(object_name, object_namespace=None):
        result = {'name': object_name, 'labels': dict(labels)}
        if object_namespace:
            result['namespace'] = object_namespace
        return result
    subject = [{'kind': 'ServiceAccount', 'name': name, 'namespace': namespace}]
    rbac = 'rbac.authorization.k8s.io/v1'
    # The namespace is shared by every identity: its labels name none of them, so two never fight over it.
    objects = [
        {'apiVersion': 'v1', 'kind': 'Namespace',
         'metadata': {'name': namespace, 'labels': {MANAGED_BY_LABEL: MANAGED_BY, NAME_LABEL: namespace,
                                                    POD_SECURITY_LABEL: 'restricted'}}},
        {'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': meta(name, namespace)},
        {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/service-account-token',
         'metadata': dict(meta(token_secret_name(name), namespace),
                          annotations={'kubernetes.io/service-account.name': name})},
        {'apiVersion': rbac, 'kind': 'ClusterRole', 'metadata': meta('%s-read' % name), 'rules': list(read_rules)},
        {'apiVersion': rbac, 'kind': 'ClusterRoleBinding', 'metadata': meta('%s-read' % name),
         'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': '%s-read' % name},
         'subjects': subject},
    ]
    if seat_rules:
        objects.append({'apiVersion': rbac, 'kind': 'ClusterRole', 'metadata': meta('%s-seat' % name),
                        'rules': list(seat_rules)})
        objects += [{'apiVersion': rbac, 'kind': 'RoleBinding', 'metadata': meta(name, seat_namespace),
                     'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole',
                                 'name': '%s-seat' % name},
                     'subjects': subject} for seat_namespace in seat_namespaces]
    return objects


def live_seat_namespaces(namespace_objects):
    """Names of the seat namespaces among Namespace objects, without the terminating ones, sorted."""
    return sorted(ns['metadata']['name'] for ns in namespace_objects
                  if seat_of(ns) is not None and not ns['metadata'].get('deletionTimestamp'))


def secret_token(secret):
    """The token a service-account-token Secret holds, or '' (not issued yet)."""
    encoded = ((secret or {}).get('data') or {}).get('token') or ''
    return base64.b64decode(encoded).decode('utf-8') if encoded else ''


def wait_for_token(client, namespace, name, timeout=TOKEN_TIMEOUT_SECONDS, poll=TOKEN_POLL_SECONDS,
                   sleep=time.sleep, clock=time.monotonic):
    """(token, reads) of Secret namespace/NAME-token once kube-controller-manager filled it; K8sError after timeout s."""
    path = '/api/v1/namespaces/%s/secrets/%s' % (namespace, token_secret_name(name))
    deadline = clock() + timeout
    attempts = 0
    while True:
        attempts += 1
        token = secret_token(client.get(path, missing_ok=True))
        if token or clock() >= deadline:
            break
        sleep(poll)
    if not token:
        raise K8sError(
            'Secret %s/%s holds no token after %d attempt(s) in %d s. kube-controller-manager\'s token controller '
            'fills it: check that kube-controller-manager runs (kubectl -n kube-system get pods), then run the '
            'playbook again.' % (namespace, token_secret_name(name), attempts, timeout))
    return token, attempts


def ensure_identity(client, name, namespace, read_rules, seat_rules, kubeconfig_path, endpoint,
                    check_mode=False, token_timeout=TOKEN_TIMEOUT_SECONDS, sleep=time.sleep):
    """Apply the identity's objects and write its kubeconfig; endpoint is (server, ca_data, insecure).

    Returns the Applier's result (created, updated, unchanged, requests) with seat_namespaces, kubeconfig,
    kubeconfig_written and changed. In check mode nothing is written; a token not issued yet counts as a
    kubeconfig to write.
    """
    applier = k8s_apply.Applier(client)
    known = applier.live([NAMESPACE_KEY], MANAGED_SELECTOR)
    seat_namespaces = live_seat_namespaces(known[NAMESPACE_KEY].values()) if seat_rules else []
    objects = identity_objects(name, namespace, read_rules, seat_rules, seat_namespaces)
    result = applier.apply(objects, MANAGED_SELECTOR, check_mode=check_mode, known=known)
    secret_name = token_secret_name(name)
    listed = applier.last_live.get(('v1', 'Secret'), {}).get((namespace, secret_name))
    token = secret_token(listed)
    if not token and not check_mode:
        token, reads = wait_for_token(client, namespace, name, token_timeout, sleep=sleep)
        result['requests'] += reads
    server, ca_data, insecure = endpoint
    written = True
    if token:
        content = render_kubeconfig(name, None, server, token, ca_data, insecure,
                                    title='identity %s (ServiceAccount %s/%s)' % (name, namespace, name))
        if check_mode:
            written = not file_state(kubeconfig_path, content)
        else:
            directory = os.path.dirname(os.path.abspath(kubeconfig_path))
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o700)
            written = write_if_changed(kubeconfig_path, content)
    result.update(seat_namespaces=seat_namespaces, kubeconfig=kubeconfig_path, kubeconfig_written=written,
                  changed=bool(result['created'] or result['updated'] or written))
    return result
