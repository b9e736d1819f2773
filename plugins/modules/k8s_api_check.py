#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_api_check
short_description: Check that the Kubernetes API answers and accepts the credentials, before anything changes
version_added: 0.1.0
description:
  - Asks the API server for its version and for a C(SelfSubjectReview) (who the credentials are), and fails with
    one sentence naming the API server and what to do when it cannot be reached, does not answer within seconds,
    or refuses the credentials.
  - The playbooks that work on a running cluster (C(users.yml), C(reset.yml), C(board.yml), C(health.yml)) run it
    in their preflight, so that a stopped API server stops them before any host is changed.
author: dralab.workshop maintainers (@dralab)
options: {}
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
  - dralab.workshop.attributes.INFO_MODULE
notes:
  - The C(SelfSubjectReview) API (authentication.k8s.io/v1) is served by Kubernetes 1.28 and later; every
    authenticated user may create one, and nothing is stored.
seealso:
  - module: dralab.workshop.dra_health
"""

EXAMPLES = r"""
- name: Check that the Kubernetes API answers
  dralab.workshop.k8s_api_check:
    kubeconfig: ~/.dralab/admin.conf
  register: api

- name: Show who the playbook is to the API server
  ansible.builtin.debug:
    msg: "{{ api.user }} on {{ api.host }} ({{ api.version }})"
"""

RETURN = r"""
host:
  description: URL of the API server that answered.
  returned: success
  type: str
  sample: https://10.89.42.11:6443
version:
  description: The API server's version (C(gitVersion)).
  returned: success
  type: str
  sample: v1.35.4
user:
  description: The user name the API server sees for the credentials.
  returned: success
  type: str
  sample: kubernetes-admin
groups:
  description: The groups the API server sees for the credentials.
  returned: success
  type: list
  elements: str
  sample: [kubeadm:cluster-admins, system:authenticated]
"""

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import (
    K8sError,
    api_identity,
    auth_argspec,
    run_with_client,
)


def argspec():
    return auth_argspec()


def run(module, client):
    try:
        identity = api_identity(client)
    except K8sError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **identity)


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
