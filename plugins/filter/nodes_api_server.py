# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nodes_api_server
short_description: The API server URL for kubeconfigs used on the lab's hosts
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - The seat kubeconfigs (installed on the login hosts), the board's and the lease reaper's kubeconfigs are used on
    the lab's hosts, inside the cluster's network.
  - Returns an empty string (the admin kubeconfig's server, so nothing changes) unless the first C(control_plane)
    host has an access address other than its internal one (filter C(host_address)) and no C(control_plane_endpoint);
    then C(https://INTERNAL:PORT), PORT being its C(control_plane_bind_port), else V(6443).
positional: hostvars
options:
  _input:
    description: The inventory's groups, usually C(groups).
    type: dict
    required: true
  hostvars:
    description: The hosts' variables, usually C(hostvars).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show the API server the login hosts' kubeconfigs name ("" = the admin kubeconfig's)
  ansible.builtin.debug:
    msg: "{{ groups | dralab.workshop.nodes_api_server(hostvars) }}"
"""

RETURN = r"""
_value:
  description: The URL, or an empty string for the admin kubeconfig's server.
  type: str
"""

from ansible_collections.dralab.workshop.plugins.module_utils.values import nodes_api_server


class FilterModule(object):
    def filters(self):
        return {'nodes_api_server': nodes_api_server}
