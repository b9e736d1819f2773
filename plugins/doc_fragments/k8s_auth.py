# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - Falls back to the E(K8S_AUTH_KUBECONFIG) environment variable, then to
        the client's default (E(KUBECONFIG) or C(~/.kube/config)).
    type: path
  context:
    description:
      - The kubeconfig context to use.
      - Falls back to the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example C(https://10.0.0.10:6443).
      - When set together with O(api_key), no kubeconfig is read.
      - Falls back to the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token used to authenticate with the API server.
      - Falls back to the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Falls back to the E(K8S_AUTH_VERIFY_SSL) environment variable.
    type: bool
    default: true
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate used to verify the API server, when O(host) is given.
      - Falls back to the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
requirements:
  - kubernetes >= 34.1.0 (Python client)
notes:
  - Authentication options follow the kubernetes.core modules, so the same
    E(K8S_AUTH_*) environment variables work for both.
"""
