# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab_preflight module around preflight/validate.py validate()."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.modules import lab_preflight

from module_runner import run_module

GROUPS = {'all': ['cp1', 'node1'], 'control_plane': ['cp1'], 'workers': ['node1'], 'login': ['cp1']}


def run(**args):
    """Run the module as Ansible runs it (its main() in a process of its own); return (exit code, result)."""
    return run_module('lab_preflight', args)


def test_every_lab_option_maps_to_a_dralab_variable():
    params = dict((name, name) for name in lab_preflight.LAB_OPTIONS)
    params.update(groups=GROUPS, hosts=['cp1'])
    config = lab_preflight.lab_config(params)
    assert config['dralab_seats'] == 'seats'
    assert config['dralab_allow_unsupported_kubernetes_version'] == 'allow_unsupported_kubernetes_version'
    assert config['groups'] == GROUPS and config['hosts'] == ['cp1']
    assert set(lab_preflight.argspec()) == set(lab_preflight.LAB_OPTIONS) | {
        'groups', 'hosts', 'host_settings', 'node_addresses', 'internal_addresses', 'access_addresses', 'role_versions',
        'role_bounds', 'check_api', 'controller_ansible_version'}


def closed_port_kubeconfig(tmp_path):
    """An admin kubeconfig whose API server is a loopback port nothing listens on."""
    import socket
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    path = tmp_path / 'admin.conf'
    path.write_text('apiVersion: v1\nkind: Config\ncurrent-context: lab\n'
                    'clusters: [{name: lab, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]\n'
                    'users: [{name: admin, user: {token: not-used}}]\n'
                    'contexts: [{name: lab, context: {cluster: lab, user: admin}}]\n' % port)
    return path, port


def test_check_api_fails_with_the_api_sentence_when_the_api_does_not_answer(tmp_path):
    kubeconfig, port = closed_port_kubeconfig(tmp_path)
    code, result = run(groups=GROUPS, hosts=GROUPS['all'], check_api=True,
                       host_settings={'localhost': {'dralab_kubeconfig': str(kubeconfig)}})
    assert code == 1
    assert result['msg'].startswith('Cannot reach the Kubernetes API at https://127.0.0.1:%d' % port), result['msg']
    assert result['errors'] == []


def test_check_api_comes_after_the_settings(tmp_path):
    """A bad setting is reported as such; the API is not asked (its kubeconfig would not even load)."""
    code, result = run(groups=GROUPS, hosts=GROUPS['all'], check_api=True, seats=-1,
                       host_settings={'localhost': {'dralab_kubeconfig': str(tmp_path / 'missing.conf')}})
    assert code == 1
    assert result['errors'] and result['errors'][0].startswith('dralab_seats'), result['errors']
    assert 'kubeconfig' not in result['msg']


def test_without_check_api_the_api_is_not_asked(tmp_path):
    code, result = run(groups=GROUPS, hosts=GROUPS['all'],
                       host_settings={'localhost': {'dralab_kubeconfig': str(tmp_path / 'missing.conf')}})
    assert code == 0 and 'api' not in result


def test_host_settings_are_resolved_and_returned():
    code, result = run(groups=GROUPS, hosts=GROUPS['all'],
                       host_settings={'localhost': {'dralab_seats': 2}, 'cp1': {'dralab_seats': 2}})
    assert code == 0
    assert result['settings'] == {'dralab_seats': 2}
    assert result['seat_names'] == ['user01', 'user02']


def test_host_settings_that_differ_fail():
    code, result = run(groups=GROUPS, hosts=GROUPS['all'],
                       host_settings={'localhost': {}, 'cp1': {'dralab_seats': 2}})
    assert code == 1
    assert result['errors'] == ['dralab_seats: differs between the hosts of the lab: 2 on cp1; 72 on localhost; '
                                'set it once for the whole lab (group_vars/all.yml, or -e)']


def test_good_config_succeeds_unchanged():
    code, result = run(groups=GROUPS, hosts=GROUPS['all'], seats=3, feature_gates=['DRADeviceTaints'])
    assert code == 0
    assert result['changed'] is False
    assert result['errors'] == []
    assert result['seat_names'] == ['user01', 'user02', 'user03']
    assert result['feature_gates'] == {'DRADeviceTaints': True}


def test_check_mode_behaves_the_same():
    code, result = run(groups=GROUPS, _ansible_check_mode=True, seats=2)
    assert code == 0 and result['changed'] is False and result['seat_names'] == ['user01', 'user02']


def test_all_errors_are_listed():
    code, result = run(groups={'all': ['node1']}, hosts=['node1'], seats=-1, devices_per_node=200,
                       feature_gates=['FooBar'], login_hosts=['login9'])
    assert code == 1
    assert result['failed'] is True
    fields = [error.split(':', 1)[0] for error in result['errors']]
    assert fields == ["groups['control_plane']", "groups['ungrouped']", 'dralab_feature_gates',
                      'dralab_devices_per_node', 'dralab_seats', 'dralab_login_hosts']
    assert result['msg'].startswith('Preflight found 6 problem(s): ')
    for error in result['errors']:
        assert error in result['msg']


def test_warnings_are_emitted():
    code, result = run(groups=GROUPS, login_hosts=[])
    assert code == 0
    assert len(result['lab_warnings']) == 1
    assert result['lab_warnings'][0].startswith('dralab_login_hosts: no login hosts')
    assert result['warnings'] == result['lab_warnings']  # each one also warned, as Ansible shows it


def test_an_old_controller_gets_one_sentence_before_any_other_check():
    code, result = run(groups=GROUPS, hosts=GROUPS['all'], seats=-1, controller_ansible_version='2.19.14')
    assert code == 1
    assert result['errors'] == [result['msg']]
    assert result['msg'].startswith('This controller runs ansible-core 2.19.14 on Python '), result['msg']
    assert 'needs ansible-core 2.21 or newer on Python 3.12 or newer' in result['msg']


def test_the_current_controller_passes_the_check():
    import ansible.release

    code, result = run(groups=GROUPS, hosts=GROUPS['all'], controller_ansible_version=ansible.release.__version__)
    assert code == 0, result
