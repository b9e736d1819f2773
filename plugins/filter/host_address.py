# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: host_address
short_description: A lab host's internal or access address
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - "V(internal) is the address the cluster uses between its hosts (kubelet's C(node-ip), the API server's advertise
    address, the nodes' C(/etc/hosts)): the host's C(internal_address), else its C(ansible_host) when that is an IP
    address, else the default IPv4 address of its facts, else an empty string."
  - "V(access) is the address people and the controller reach the host at (the admin kubeconfig's server, the seat
    cards' C(ssh) line, the board's URLs): the host's C(access_address), else its C(ansible_host), else its internal
    address."
  - With O(url), an IPv6 address comes in brackets, ready for C(http://ADDRESS:PORT/).
  - README.md, section "Addresses", explains the two variables.
positional: which, url
options:
  _input:
    description: The host's variables, usually C(hostvars[host]).
    type: dict
    required: true
  which:
    description: Which address.
    type: str
    choices: [internal, access]
    required: true
  url:
    description: Bracket an IPv6 address.
    type: bool
    default: false
"""

EXAMPLES = r"""
# {'ansible_host': '203.0.113.11', 'internal_address': '10.0.0.11'} | dralab.workshop.host_address('internal')
#   => '10.0.0.11'
# {'ansible_host': '203.0.113.11', 'internal_address': '10.0.0.11'} | dralab.workshop.host_address('access')
#   => '203.0.113.11'
- name: Show where participants reach the first login host
  ansible.builtin.debug:
    msg: "{{ hostvars[groups['login'][0]] | dralab.workshop.host_address('access') }}"
"""

RETURN = r"""
_value:
  description: The address, or an empty string when none is known.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.values import access_address, internal_address, url_host

_ADDRESSES = {'internal': internal_address, 'access': access_address}


def host_address(variables, which, url=False):
    """Return the host's internal or access address."""
    if which not in _ADDRESSES:
        raise AnsibleFilterError('dralab.workshop.host_address: which must be internal or access, not %r' % (which,))
    address = _ADDRESSES[which](variables or {})
    return url_host(address) if url and address else address


class FilterModule(object):
    def filters(self):
        return {'host_address': host_address}
