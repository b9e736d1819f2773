#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_identity
short_description: Make the Kubernetes identity of a node program and write its kubeconfig, in one run
version_added: 0.1.0
description:
  - For a program that runs on a lab node with its own credentials (the lease reaper, the board), applies the
    Namespace O(namespace) (pod security C(restricted)), the ServiceAccount O(name) with a long-lived token Secret
    C(NAME-token), a ClusterRole and ClusterRoleBinding C(NAME-read) with O(read_rules); with O(seat_rules), a
    ClusterRole C(NAME-seat) bound by a RoleBinding C(NAME) in every seat namespace (labelled
    C(app.kubernetes.io/managed-by=dralab.workshop) and C(dralab.workshop/seat); a seat cannot change them).
  - Each kind is read once by label and only the objects that are missing or differ are written (server-side
    apply, as M(dralab.workshop.k8s_objects) does). The token that kube-controller-manager writes into the Secret
    is awaited up to O(token_timeout) seconds.
  - The kubeconfig of the ServiceAccount is written to O(kubeconfig_dest) (mode C(0600), atomically, only when its
    content changes; the folder is created C(0700)). Its API server is the admin kubeconfig's, or O(api_server).
author: dralab.workshop maintainers (@dralab)
options:
  name:
    description:
      - Name of the ServiceAccount, of its token Secret C(NAME-token), of the ClusterRoles C(NAME-read) and
        C(NAME-seat) and of the bindings.
    type: str
    required: true
  namespace:
    description:
      - Namespace of the ServiceAccount and its token (created when missing; never a seat namespace).
    type: str
    required: true
  read_rules:
    description:
      - RBAC rules of C(NAME-read), bound cluster-wide (by convention only get, list and watch).
    type: list
    elements: dict
    required: true
  seat_rules:
    description:
      - RBAC rules of C(NAME-seat), bound in every seat namespace; empty binds nothing there.
    type: list
    elements: dict
    default: []
  kubeconfig_dest:
    description:
      - Where the kubeconfig of the ServiceAccount is written, on the host running the module.
    type: path
    required: true
  api_server:
    description:
      - API server URL written into that kubeconfig, when the node program reaches the API server at another
        address than the admin kubeconfig uses. Empty to use the admin one.
    type: str
    default: ""
  token_timeout:
    description:
      - Seconds to wait for kube-controller-manager to fill the token Secret.
    type: int
    default: 30
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
  - dralab.workshop.attributes.apply_module
notes:
  - The user needs C(list) and C(patch) on Namespaces, ServiceAccounts, Secrets, ClusterRoles, ClusterRoleBindings
    and RoleBindings, and C(get) on Secrets.
  - In check mode nothing is written; a token not issued yet counts as a kubeconfig to write.
seealso:
  - module: dralab.workshop.k8s_objects
  - module: dralab.workshop.seat_tokens
"""

EXAMPLES = r"""
- name: Make the lease reaper's identity
  dralab.workshop.node_identity:
    kubeconfig: ~/.dralab/admin.conf
    name: dralab-lease-reaper
    namespace: dralab-system
    read_rules:
      - {apiGroups: [resource.k8s.io], resources: [resourceclaims], verbs: [get, list, watch]}
    seat_rules:
      - {apiGroups: [resource.k8s.io], resources: [resourceclaims], verbs: [delete]}
    kubeconfig_dest: ~/.dralab/dralab-lease-reaper.kubeconfig
"""

RETURN = r"""
created:
  description: The objects created; in check mode, those that would be.
  returned: success
  type: list
  elements: str
  sample: [ServiceAccount dralab-system/dralab-lease-reaper]
updated:
  description: The objects changed; in check mode, those that would be.
  returned: success
  type: list
  elements: str
unchanged:
  description: How many objects were already as wanted.
  returned: success
  type: int
requests:
  description: Requests sent to the API server.
  returned: success
  type: int
seat_namespaces:
  description: The seat namespaces given a RoleBinding (empty without O(seat_rules)).
  returned: success
  type: list
  elements: str
kubeconfig:
  description: Path of the kubeconfig.
  returned: success
  type: str
kubeconfig_written:
  description: Whether the kubeconfig was (in check mode, would be) written.
  returned: success
  type: bool
"""

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.dralab.workshop.plugins.module_utils.seat import identity as node_identity
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, auth_argspec, run_with_client


def argspec():
    spec = auth_argspec()
    spec.update(
        name=dict(type='str', required=True),
        namespace=dict(type='str', required=True),
        read_rules=dict(type='list', elements='dict', required=True),
        seat_rules=dict(type='list', elements='dict', default=[]),
        kubeconfig_dest=dict(type='path', required=True),
        api_server=dict(type='str', default=''),
        token_timeout=dict(type='int', default=node_identity.TOKEN_TIMEOUT_SECONDS),
    )
    return spec


def run(module, client):
    params = module.params
    try:
        result = node_identity.ensure_identity(
            client, params['name'], params['namespace'], params['read_rules'], params['seat_rules'],
            params['kubeconfig_dest'], k8s_client.cluster_endpoint(params), check_mode=module.check_mode,
            token_timeout=params['token_timeout'])
    except (K8sError, ValueError) as exc:
        module.fail_json(msg='Cannot make the identity %s: %s' % (params['name'], exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot write the kubeconfig %s: %s' % (params['kubeconfig_dest'], exc))
    module.exit_json(**result)


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
