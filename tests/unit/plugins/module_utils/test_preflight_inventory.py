# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventories as a first-time instructor writes them: the topology and address mistakes that would reach hosts
are refused by validate(), naming the host and the field; the layouts the lab supports pass."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import validate

# Three nodes, cp1 also the login host (a layout the podman lab keeps: inventories/local).
GOOD = {
    'groups': {'all': ['cp1', 'worker1', 'worker2'], 'ungrouped': [], 'control_plane': ['cp1'],
               'workers': ['worker1', 'worker2'], 'login': ['cp1']},
    'hosts': ['cp1', 'worker1', 'worker2'],
    'node_addresses': {'cp1': '192.0.2.10', 'worker1': '192.0.2.11', 'worker2': '192.0.2.12'},
}


def lab(groups=None, addresses=None, **settings):
    """GOOD with groups (name -> hosts; 'all' follows) and node addresses changed, and dralab_<name> settings."""
    config = copy.deepcopy(GOOD)
    if groups is not None:
        config['groups'] = dict({'ungrouped': []}, **groups)
        config['groups']['all'] = sorted(set(host for members in groups.values() for host in members))
        config['hosts'] = config['groups']['all']
    if addresses is not None:
        config['node_addresses'] = addresses
    for name, value in settings.items():
        config['dralab_' + name] = value
    return config


def only_error(config, field):
    errors, dummy = validate(config)
    assert len(errors) == 1, errors
    assert errors[0].startswith(field + ': '), errors
    return errors[0]


def test_the_sample_layout_passes():
    assert validate(lab()) == ([], [])


def test_the_workshop_samples_login_hosts_pass():
    # inventories/workshop/hosts.yml: two login hosts of their own, none on the control plane node; a seat moved.
    config = lab(groups={'control_plane': ['cp1'], 'workers': ['worker1', 'worker2'], 'login': ['login1', 'login2']},
                 addresses={'cp1': '192.0.2.10', 'worker1': '192.0.2.11', 'worker2': '192.0.2.12',
                            'login1': '192.0.2.21', 'login2': '192.0.2.22'},
                 seat_login_hosts={'user05': 'login1'})
    assert validate(config) == ([], [])
    error = only_error(dict(config, dralab_seat_login_hosts={'user05': 'cp1'}), 'dralab_seat_login_hosts')
    assert error == "dralab_seat_login_hosts: 'cp1' of seat user05 is not a login host (login hosts: login1, login2)"


# ---------------------------------------------------------------- groups

def test_workers_without_a_control_plane_are_refused_even_with_an_existing_cluster():
    # The sample group_vars set dralab_kubeconfig: without this check it was a warning, and cluster.yml prepared the
    # workers (packages, containerd, kubelet) before the worker role found no control plane to join.
    config = lab(groups={'workers': ['worker1', 'worker2'], 'login': ['worker1']}, kubeconfig='/tmp/admin.conf')
    error = only_error(config, "groups['control_plane']")
    assert 'no control_plane host, so workers worker1, worker2 have no cluster to join' in error


def test_a_host_in_no_group_is_refused():
    # Written under all.hosts instead of workers: the lab would be built without it, with 8 GPUs fewer.
    config = lab(groups={'control_plane': ['cp1'], 'workers': ['worker1'], 'login': ['cp1'], 'ungrouped': ['worker2']})
    error = only_error(config, "groups['ungrouped']")
    assert 'worker2 is in none of the groups the playbooks use (control_plane, workers, login, mirror)' in error
    assert 'put each in workers (a GPU node), login or mirror, or remove it from the inventory' in error


@pytest.mark.parametrize('group, meant', [('worker', 'workers'), ('control-plane', 'control_plane'),
                                          ('controlplane', 'control_plane'), ('masters', 'control_plane'),
                                          ('kube_node', 'workers'), ('nodes', 'workers'), ('logins', 'login')])
def test_a_misspelt_group_is_refused_with_the_group_it_meant(group, meant):
    config = lab(groups={'control_plane': ['cp1'], 'login': ['cp1'], group: ['worker1', 'worker2']})
    error = only_error(config, "groups['%s']" % group)
    assert 'worker1, worker2 are in none of the groups' in error
    assert '(did you mean %s?)' % meant in error


def test_a_host_in_a_group_of_its_own_is_a_warning():
    # A group the lab does not use on purpose (a monitoring host, say): allowed, named.
    config = lab(groups=dict(GOOD['groups'], monitoring=['grafana1']))
    errors, warnings = validate(config)
    assert errors == []
    assert warnings == ["groups['monitoring']: grafana1 is in none of the groups the playbooks use (control_plane, "
                        "workers, login, mirror), so no play reaches it; each still gets a line in the nodes' "
                        "/etc/hosts"]


def test_the_controller_needs_no_group():
    config = lab(groups=dict(GOOD['groups'], ungrouped=['localhost']))
    assert validate(config) == ([], [])


def test_a_login_host_outside_the_login_group_is_refused():
    # users.yml and reset.yml run on hosts: login; dralab_login_hosts only narrows that group.
    error = only_error(lab(login_hosts=['worker1']), 'dralab_login_hosts')
    assert 'worker1 is not in the login group' in error and 'add worker1 to the login group' in error


def test_control_plane_also_in_workers_is_a_warning():
    config = lab(groups=dict(GOOD['groups'], workers=['cp1', 'worker1', 'worker2']))
    errors, warnings = validate(config)
    assert errors == []
    assert warnings == ["groups['workers']: cp1 is also the control plane host, which is already a node that runs "
                        "GPU pods (control_plane_schedulable); the worker role skips it: list it in control_plane only"]


@pytest.mark.parametrize('groups', [
    # A worker that is also a login host; a login host of its own; a mirror that is also a node.
    dict(GOOD['groups'], login=['worker1']),
    dict(GOOD['groups'], login=['cp1', 'login1']),
    dict(GOOD['groups'], mirror=['worker2']),
])
def test_supported_layouts_pass(groups):
    config = lab(groups=groups, addresses=dict(GOOD['node_addresses'], login1='192.0.2.20'))
    assert validate(config) == ([], [])


# ---------------------------------------------------------------- addresses

def test_a_dns_name_as_ansible_host_passes():
    # The roles fall back to the node's default IPv4 address (facts) for a name.
    config = lab(addresses={'cp1': 'cp1.lab.example', 'worker1': 'worker1.lab.example', 'worker2': '192.0.2.12'})
    assert validate(config) == ([], [])


@pytest.mark.parametrize('host', ['cp1', 'worker2'])
def test_an_ipv6_node_address_is_refused(host):
    config = lab(addresses=dict(GOOD['node_addresses'], **{host: '2001:db8::12'}))
    error = only_error(config, 'ansible_host of %s' % host)
    assert "2001:db8::12 is an IPv6 address; the lab is IPv4 only" in error


def test_an_ipv6_login_host_passes():
    # A login host that is no node is only reached over SSH and named on the credential sheet.
    config = lab(groups=dict(GOOD['groups'], login=['login1']),
                 addresses=dict(GOOD['node_addresses'], login1='2001:db8::20'))
    assert validate(config) == ([], [])


@pytest.mark.parametrize('address', ['127.0.0.1', '0.0.0.0', '169.254.3.4', '224.0.0.9'])
def test_a_node_address_kubelet_refuses_is_refused(address):
    # A port-forwarded VM (127.0.0.1 with ansible_port) would give kubelet a loopback node IP.
    config = lab(addresses=dict(GOOD['node_addresses'], worker1=address))
    error = only_error(config, 'ansible_host of worker1')
    assert '%s is a loopback, unspecified, link-local or multicast address' % address in error


def test_two_hosts_with_one_address_are_refused():
    config = lab(addresses=dict(GOOD['node_addresses'], worker2='192.0.2.11'))
    error = only_error(config, 'ansible_host')
    assert 'worker1 and worker2 have the same address 192.0.2.11: one machine under two names' in error


def test_a_login_host_with_a_nodes_address_is_refused():
    # login1 is cp1 under another name: users.yml would create the same accounts twice at once.
    config = lab(groups=dict(GOOD['groups'], login=['login1']),
                 addresses=dict(GOOD['node_addresses'], login1='192.0.2.10'))
    assert 'cp1 and login1 have the same address 192.0.2.10' in only_error(config, 'ansible_host')


# ---------------------------------------------------------------- networks

@pytest.mark.parametrize('name, value', [('pod_subnet', 'fd00:10:244::/56'), ('service_subnet', 'fd00:10:96::/108')])
def test_an_ipv6_network_is_refused(name, value):
    error = only_error(lab(**{name: value}), 'dralab_' + name)
    assert 'is an IPv6 network; the lab is IPv4 only' in error


@pytest.mark.parametrize('value, shown', [
    ('10.244.0.0/25', "10.244.0.0/25: every node gets a /24 of the pod network and kubeadm init refuses a pod "
                      "network outside /8../24"),
    ('10.0.0.0/7', 'refuses a pod network outside /8../24'),
])
def test_a_pod_network_kubeadm_refuses_is_refused(value, shown):
    # /7: the pod network must also fit the allocator's 2^16 node networks.
    assert shown in only_error(lab(pod_subnet=value, service_subnet='172.30.0.0/16'), 'dralab_pod_subnet')


def test_a_pod_network_without_room_for_every_node_is_refused():
    error = only_error(lab(pod_subnet='10.244.0.0/23'), 'dralab_pod_subnet')
    assert error == ('dralab_pod_subnet: 10.244.0.0/23 holds 2 node pod networks (a /24 each) and the lab has 3 '
                     'nodes (cp1, worker1, worker2): the others would get none; use a /22 or larger')


def test_a_pod_network_with_room_for_every_node_passes():
    assert validate(lab(pod_subnet='10.244.0.0/22')) == ([], [])


def test_a_service_network_without_the_dns_address_is_refused():
    error = only_error(lab(service_subnet='10.96.0.0/29'), 'dralab_service_subnet')
    assert '10.96.0.0/29 has 8 addresses and kubeadm init gives the cluster DNS the 10th' in error
    assert validate(lab(service_subnet='10.96.0.0/28')) == ([], [])


@pytest.mark.parametrize('name, value, network', [
    ('registry_mirror', '10.244.7.1:5000', 'dralab_pod_subnet 10.244.0.0/16'),
    ('download_mirror', 'http://10.96.0.50:8080', 'dralab_service_subnet 10.96.0.0/12'),
])
def test_a_mirror_inside_the_clusters_networks_is_refused(name, value, network):
    error = only_error(lab(**{name: value}), 'dralab_' + name)
    assert 'is inside %s, which the nodes route into the cluster' % network in error


# ---------------------------------------------------------------- two addresses per host (README.md, Addresses)

NAT = {'cp1': '10.0.0.10', 'worker1': '10.0.0.11', 'worker2': '10.0.0.12'}
PUBLIC = {'cp1': '203.0.113.10', 'worker1': '203.0.113.11', 'worker2': '203.0.113.12'}


def two_addresses(internal=None, access=None, reached=None):
    config = lab(addresses=dict(reached or PUBLIC))
    config['internal_addresses'] = dict(NAT if internal is None else internal)
    config['access_addresses'] = dict({} if access is None else access)
    return config


def test_a_nat_cloud_passes():
    # Ansible reaches the public addresses; the cluster uses the private ones; people the public ones.
    assert validate(two_addresses()) == ([], [])
    assert validate(two_addresses(access=PUBLIC)) == ([], [])
    # Ansible inside the private network, people outside: ansible_host is the internal address.
    config = two_addresses(internal={}, access=PUBLIC, reached=NAT)
    assert validate(config) == ([], [])
    # DNS names for people and for Ansible, the internal addresses given.
    names = dict((host, host + '.lab.example.org') for host in NAT)
    assert validate(two_addresses(access=names, reached=names)) == ([], [])


@pytest.mark.parametrize('value', ['cp1.internal', '10.0.0', ''])
def test_an_internal_address_that_is_no_ip_address_is_refused(value):
    error = only_error(two_addresses(internal=dict(NAT, worker1=value)), 'internal_address of worker1')
    assert 'is not an IP address' in error


@pytest.mark.parametrize('value', ['127.0.0.1', '169.254.0.7', 'fd00::11'])
def test_an_internal_address_kubelet_refuses_is_refused(value):
    error = only_error(two_addresses(internal=dict(NAT, worker1=value)), 'internal_address of worker1')
    assert value in error and ('loopback' in error or 'IPv6' in error)


def test_an_internal_address_inside_the_pod_network_is_refused():
    error = only_error(two_addresses(internal=dict(NAT, worker2='10.244.3.4')), 'dralab_pod_subnet')
    assert 'worker2 (10.244.3.4)' in error


def test_two_hosts_sharing_an_internal_address_are_refused():
    error = only_error(two_addresses(internal=dict(NAT, worker2='10.0.0.11')), 'internal_address')
    assert 'worker1 and worker2 have the same internal address 10.0.0.11' in error
    # The same, one of them taken from ansible_host.
    config = two_addresses(internal={'cp1': '10.0.0.10', 'worker1': '10.0.0.11'},
                           reached=dict(PUBLIC, worker2='10.0.0.11'))
    assert 'worker1 and worker2 have the same internal address 10.0.0.11' in only_error(config, 'internal_address')


@pytest.mark.parametrize('value', ['203.0.113', 'cp 1', 'https://203.0.113.10', '0.0.0.0', 'bad_name.example'])
def test_an_access_address_that_is_neither_ip_nor_dns_name_is_refused(value):
    error = only_error(two_addresses(access={'cp1': value}), 'access_address of cp1')
    assert repr(value) in error


def test_an_access_address_beside_a_guessed_internal_one_is_refused():
    # ansible_host is a name, no internal_address: the internal address would be the facts' default IPv4.
    names = dict((host, host + '.lab.example.org') for host in NAT)
    config = two_addresses(internal={'cp1': '10.0.0.10', 'worker1': '10.0.0.11'}, access={'worker2': '203.0.113.12'},
                           reached=names)
    error = only_error(config, 'internal_address of worker2')
    assert "has an access_address while its ansible_host 'worker2.lab.example.org' is no IP address" in error
    # Without access_address the guess is today's rule, and passes.
    del config['access_addresses']['worker2']
    assert validate(config) == ([], [])
