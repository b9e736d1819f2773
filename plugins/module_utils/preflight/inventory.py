# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's checks of the inventory: which host plays which part, and the nodes' addresses.

The playbooks reach hosts through four groups only (LAB_GROUPS): control_plane
(kubeadm init on the first host, no HA), workers (kubeadm join), login (seat
accounts, each seat on one of them: seat/login_hosts.py) and mirror (playbooks/mirror.yml). A host's internal
address (its internal_address, else its ansible_host when that is an IP address) becomes kube-apiserver's advertise
address or kubelet's node IP and its line in every node's /etc/hosts; its access_address (else ansible_host) is where
the controller and people reach it (README.md, Addresses). config['node_addresses'] holds the ansible_host,
config['internal_addresses'] and config['access_addresses'] the two variables where the inventory sets them, for the
hosts of control_plane, workers and login.
"""

from __future__ import annotations

import difflib

from ansible_collections.dralab.workshop.plugins.module_utils.preflight.report import given
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.settings import NODE_POD_PREFIX
from ansible_collections.dralab.workshop.plugins.module_utils.seat.login_hosts import override_problems
from ansible_collections.dralab.workshop.plugins.module_utils.values import address_problem, ip_address, show

LAB_GROUPS = ('control_plane', 'workers', 'login', 'mirror')
# Group names other installers use for the same parts (kubespray, older kubeadm guides).
GROUP_SYNONYMS = {'master': 'control_plane', 'masters': 'control_plane', 'kube_control_plane': 'control_plane',
                  'node': 'workers', 'nodes': 'workers', 'kube_node': 'workers'}
# The controller's own name: playbooks address it by name; it needs no group.
CONTROLLER_NAMES = ('localhost',)


def _group(config, name):
    return list((config.get('groups') or {}).get(name) or [])


def inventory_hosts(config):
    """Every inventory host name (config['hosts'], else the union of the groups)."""
    hosts = config.get('hosts')
    if hosts is None:
        hosts = set()
        for members in (config.get('groups') or {}).values():
            hosts.update(members or [])
    return set(hosts)


def nodes(config):
    """The Kubernetes nodes, in order: control_plane then workers, each once."""
    found = []
    for host in _group(config, 'control_plane') + _group(config, 'workers'):
        if host not in found:
            found.append(host)
    return found


def check_control_plane(config, report):
    control_plane = _group(config, 'control_plane')
    workers = _group(config, 'workers')
    if not control_plane and workers:
        report.error("groups['control_plane']",
                     'the inventory has no control_plane host, so workers %s have no cluster to join (cluster.yml '
                     'would prepare them and stop); put the host to initialise with kubeadm in the control_plane '
                     'group' % ', '.join(workers))
    elif not control_plane and config.get('dralab_kubeconfig') is not None:
        report.warn("groups['control_plane']",
                    'the inventory has no control_plane host: only the plays that use the API through '
                    'dralab_kubeconfig (DeviceClasses, seats, reset, health) act')
    elif not control_plane:
        report.error("groups['control_plane']",
                     'the inventory has no control_plane host; put the host to initialise with kubeadm '
                     'in the control_plane group (or set dralab_kubeconfig to use an existing cluster)')
    elif len(control_plane) > 1:
        report.error("groups['control_plane']",
                     '%d hosts (%s); the lab builds one control plane node (no HA): keep one host in '
                     'control_plane and put the others in workers' % (len(control_plane), ', '.join(control_plane)))
    for host in control_plane:
        if host in workers:
            report.warn("groups['workers']",
                        '%s is also the control plane host, which is already a node that runs GPU pods '
                        '(control_plane_schedulable); the worker role skips it: list it in control_plane only' % host)


def _lab_group_hint(name):
    """The lab group a group name probably meant (' (did you mean workers?)'), or ''."""
    normalised = name.lower().replace('-', '_')
    meant = GROUP_SYNONYMS.get(normalised) or next(iter(difflib.get_close_matches(normalised, LAB_GROUPS, 1, 0.7)),
                                                   None)
    return ' (did you mean %s?)' % meant if meant else ''


def check_groups(config, report):
    """Every host is in a group the playbooks use; a host that is not would be left out of the lab."""
    groups = config.get('groups') or {}
    in_lab = set()
    for name in LAB_GROUPS:
        in_lab.update(_group(config, name))
    stray = sorted(host for host in inventory_hosts(config) if host not in in_lab and host not in CONTROLLER_NAMES)
    by_group = {}
    for host in stray:
        own = sorted(name for name, members in groups.items() if name not in ('all', 'ungrouped') and host in
                     (members or []))
        for name in own or ['ungrouped']:
            by_group.setdefault(name, []).append(host)
    for name in sorted(by_group):
        hint = _lab_group_hint(name) if name != 'ungrouped' else ''
        sentence = ('%s %s in none of the groups the playbooks use (%s), so no play reaches %s'
                    % (', '.join(by_group[name]), 'is' if len(by_group[name]) == 1 else 'are', ', '.join(LAB_GROUPS),
                       'it' if len(by_group[name]) == 1 else 'them'))
        if name == 'ungrouped' or hint:
            report.error("groups['%s']" % name, '%s%s; put each in workers (a GPU node), login or mirror, or remove '
                                                'it from the inventory' % (sentence, hint))
        else:
            report.warn("groups['%s']" % name, '%s; each still gets a line in the nodes\' /etc/hosts' % sentence)


def login_hosts(config):
    """dralab_login_hosts as given, else the login group."""
    hosts = config.get('dralab_login_hosts')
    return _group(config, 'login') if hosts is None else hosts


def check_login_hosts(config, report):
    key = 'dralab_login_hosts'
    hosts = login_hosts(config)
    inventory = inventory_hosts(config)
    login_group = _group(config, 'login')
    if not isinstance(hosts, (list, tuple)):
        report.error(key, '%s is not a list of inventory host names' % show(hosts))
        return
    for host in hosts:
        if not isinstance(host, str) or host not in inventory:
            report.error(key, '%s is not a host in the inventory' % show(host))
        elif host not in login_group:
            report.error(key, '%s is not in the login group, and users.yml and reset.yml run on that group only, so '
                              'it would get no seat accounts; add %s to the login group' % (host, host))
    if not hosts:
        report.warn(key, 'no login hosts; seats get a kubeconfig but no Linux account')


def check_seat_login_hosts(config, seats, report):
    """dralab_seat_login_hosts: each override names a seat of the lab and one of its login hosts."""
    key = 'dralab_seat_login_hosts'
    hosts = login_hosts(config)
    if seats is None or not isinstance(hosts, (list, tuple)):
        return
    for problem in override_problems(seats, list(hosts), given(config, key)):
        report.error(key, problem)


def _node_ip_problem(text, address):
    """Why an address cannot be a node's IP in Kubernetes, or None."""
    if address.version != 4:
        return ('%s is an IPv6 address; the lab is IPv4 only (kubeadm and flannel get IPv4 pod and Service networks), '
                'and this address becomes the node\'s IP in Kubernetes: give the node\'s IPv4 address' % text)
    if address.is_loopback or address.is_unspecified or address.is_link_local or address.is_multicast:
        return ('%s is a loopback, unspecified, link-local or multicast address, which kubelet refuses as node IP and '
                'the other nodes cannot reach: give the node\'s address on the lab network' % text)
    return None


def _internal_addresses(config, report):
    """host -> (its internal address as given or taken from ansible_host, the field it comes from), for the hosts
    whose internal address the inventory says (README.md, Addresses); a given one that is no IP address is
    refused."""
    reached = config.get('node_addresses') or {}
    given_internal = config.get('internal_addresses') or {}
    result = {}
    for host in sorted(set(reached) | set(given_internal)):
        if host in given_internal:
            text, field = str(given_internal[host]).strip(), 'internal_address of %s' % host
            if ip_address(text) is None:
                report.error(field, '%s is not an IP address: the internal address is the one the host has on the '
                                    'cluster\'s network (kubelet\'s node IP, the API server\'s advertise address), '
                                    'an IPv4 address' % show(text))
                continue
        else:
            text, field = str(reached[host]).strip(), 'ansible_host of %s' % host
        result[host] = (text, field)
    return result


def check_access_addresses(config, report):
    """access_address of the lab's hosts: an IP address or a DNS name, and only beside an internal address Ansible
    does not have to guess."""
    reached = config.get('node_addresses') or {}
    given_internal = config.get('internal_addresses') or {}
    for host, value in sorted((config.get('access_addresses') or {}).items()):
        problem = address_problem(value)
        if problem:
            report.error('access_address of %s' % host, problem)
        if host not in given_internal and ip_address(str(reached.get(host, ''))) is None:
            report.error('internal_address of %s' % host,
                         'not set, and %s has an access_address while its ansible_host %s is no IP address: the '
                         'internal address would be guessed from its default route; set internal_address to the '
                         'address the host has on the cluster\'s network' % (host, show(reached.get(host, ''))))


def check_node_addresses(config, subnets, report):
    """Internal addresses of the lab's hosts (internal_address, else ansible_host): one machine per name, outside the
    pod and Service networks, and for a node an IPv4 address it can use as its own."""
    reached = config.get('node_addresses') or {}
    internal = _internal_addresses(config, report)
    node_names = nodes(config)
    by_reached = {}
    for host in sorted(reached):
        by_reached.setdefault(str(reached[host]).strip().lower(), []).append(host)
    by_internal = {}
    inside = dict((key, []) for key in subnets)
    for host, (text, field) in sorted(internal.items()):
        address = ip_address(text)
        if address is None:
            continue
        by_internal.setdefault(str(address), []).append(host)
        for key, subnet in subnets.items():
            if address.version == subnet.version and address in subnet:
                inside[key].append('%s (%s)' % (host, text))
        if host in node_names:
            problem = _node_ip_problem(text, address)
            if problem:
                report.error(field, problem)
    for key, hosts in sorted(inside.items()):
        if hosts:
            report.error(key, '%s contains node address%s %s; pick a network the nodes are not on'
                         % (subnets[key], 'es' if len(hosts) > 1 else '', ', '.join(hosts)))
    for text, hosts in sorted(by_reached.items()):
        if len(hosts) > 1:
            report.error('ansible_host', '%s and %s have the same address %s: one machine under two names (two '
                                         'plays would change it at once); keep one name and list it in each group '
                                         'it belongs to' % (', '.join(hosts[:-1]), hosts[-1], text))
    given_internal = config.get('internal_addresses') or {}
    for address, hosts in sorted(by_internal.items()):
        if len(hosts) > 1 and any(host in given_internal for host in hosts):
            report.error('internal_address', '%s and %s have the same internal address %s: each host needs its own '
                                             'address on the cluster\'s network'
                         % (', '.join(hosts[:-1]), hosts[-1], address))


def check_pod_network_size(config, subnets, report):
    """Each node gets a /24 of the pod network: it must hold one per node."""
    pod = subnets.get('dralab_pod_subnet')
    node_names = nodes(config)
    if pod is None or pod.prefixlen > NODE_POD_PREFIX:
        return
    room = 2 ** (NODE_POD_PREFIX - pod.prefixlen)
    if len(node_names) > room:
        report.error('dralab_pod_subnet', '%s holds %d node pod network%s (a /%d each) and the lab has %d nodes (%s): '
                                          'the others would get none; use a /%d or larger'
                     % (pod, room, '' if room == 1 else 's', NODE_POD_PREFIX, len(node_names), ', '.join(node_names),
                        NODE_POD_PREFIX - (len(node_names) - 1).bit_length()))


def check_mirror_addresses(config, subnets, report):
    """The mirrors the nodes download from must not sit in the pod or Service network (routed into the cluster)."""
    for key in ('dralab_registry_mirror', 'dralab_download_mirror'):
        value = given(config, key)
        if not isinstance(value, str) or not value.strip():
            continue
        host = value.strip().split('://', 1)[-1].split('/', 1)[0]
        host = host[1:host.index(']')] if host.startswith('[') and ']' in host else host.rsplit(':', 1)[0]
        address = ip_address(host)
        for subnet_key, subnet in sorted(subnets.items()):
            if address is not None and address.version == subnet.version and address in subnet:
                report.error(key, '%s is inside %s %s, which the nodes route into the cluster once it runs, so '
                                  'they could not reach the mirror; move the mirror or pick another %s'
                             % (host, subnet_key, subnet, subnet_key))
