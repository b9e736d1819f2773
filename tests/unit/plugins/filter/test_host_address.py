# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters host_address and nodes_api_server: the one place each address of a host is chosen."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.host_address import host_address
from ansible_collections.dralab.workshop.plugins.filter.nodes_api_server import FilterModule
from ansible_collections.dralab.workshop.plugins.module_utils.values import address_problem

FACTS = {'ansible_facts': {'default_ipv4': {'address': '10.9.9.9'}}}


@pytest.mark.parametrize('variables, internal, access', [
    ({'ansible_host': '192.0.2.10', **FACTS}, '192.0.2.10', '192.0.2.10'),
    ({'ansible_host': 'cp1.example.org', **FACTS}, '10.9.9.9', 'cp1.example.org'),
    ({'ansible_host': '203.0.113.10', 'internal_address': '10.0.0.10'}, '10.0.0.10', '203.0.113.10'),
    ({'ansible_host': '10.0.0.10', 'access_address': 'cp1.example.org'}, '10.0.0.10', 'cp1.example.org'),
    (FACTS, '10.9.9.9', '10.9.9.9'),
    ({}, '', ''),
])
def test_each_address_and_its_fallbacks(variables, internal, access):
    assert host_address(variables, 'internal') == internal
    assert host_address(variables, 'access') == access


def test_url_form_and_wrong_choice():
    assert host_address({'ansible_host': 'fd00::1'}, 'access', True) == '[fd00::1]'
    assert host_address({'ansible_host': '192.0.2.1'}, 'access', True) == '192.0.2.1'
    with pytest.raises(AnsibleFilterError):
        host_address({}, 'public')


def test_nodes_api_server():
    nodes_api_server = FilterModule().filters()['nodes_api_server']
    groups = {'control_plane': ['cp1']}
    assert nodes_api_server(groups, {'cp1': {'ansible_host': '192.0.2.10'}}) == ''
    nat = {'cp1': {'ansible_host': '203.0.113.10', 'internal_address': '10.0.0.10'}}
    assert nodes_api_server(groups, nat) == 'https://10.0.0.10:6443'
    assert nodes_api_server(groups, {'cp1': dict(nat['cp1'], control_plane_bind_port=7443)}) == 'https://10.0.0.10:7443'
    assert nodes_api_server(groups, {'cp1': dict(nat['cp1'], control_plane_endpoint='api.lab:6443')}) == ''
    assert nodes_api_server({}, nat) == ''


@pytest.mark.parametrize('value, ok', [('203.0.113.1', True), ('fd00::1', True), ('cp1.example.org', True),
                                       ('cp1', True), ('0.0.0.0', False), ('1.2.3', False), ('a b', False),
                                       ('', False), ('http://x', False)])
def test_address_problem(value, ok):
    assert (address_problem(value) is None) == ok
