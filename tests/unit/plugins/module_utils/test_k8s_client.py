# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubeconfig resolution, the one place the collection and its node programs find and read kubeconfigs."""

from __future__ import annotations

import gc
import os

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import (
    K8sError,
    kubeconfig_namespace,
    kubeconfig_path,
    run_with_client,
)


def write_kubeconfig(path, namespace=None, current='seat'):
    context = {'cluster': 'lab', 'user': 'seat'}
    if namespace is not None:
        context['namespace'] = namespace
    path.write_text(yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': current,
        'clusters': [{'name': 'lab', 'cluster': {'server': 'https://127.0.0.1:6443'}}],
        'users': [{'name': 'seat', 'user': {'token': 't'}}],
        'contexts': [{'name': 'seat', 'context': context},
                     {'name': 'other', 'context': dict(context, namespace='user99')}]}))
    return path


def test_kubeconfig_path_prefers_the_option_then_the_first_kubeconfig_entry_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('KUBECONFIG', os.pathsep.join(['/first/config', '/second/config']))
    assert kubeconfig_path({'kubeconfig': '/given/config'}) == '/given/config'
    assert kubeconfig_path({'kubeconfig': '~/seat.conf'}) == str(tmp_path / 'seat.conf')
    assert kubeconfig_path({}) == '/first/config'
    monkeypatch.setenv('KUBECONFIG', '')
    assert kubeconfig_path({'kubeconfig': None}) == str(tmp_path / '.kube' / 'config')
    monkeypatch.delenv('KUBECONFIG')
    assert kubeconfig_path({}) == str(tmp_path / '.kube' / 'config')


def test_kubeconfig_namespace_of_the_current_or_a_named_context(tmp_path):
    path = write_kubeconfig(tmp_path / 'seat.conf', namespace='user07')
    assert kubeconfig_namespace(str(path)) == 'user07'
    assert kubeconfig_namespace(str(path), 'other') == 'user99'
    assert kubeconfig_namespace(str(path), 'missing') is None
    assert kubeconfig_namespace(str(write_kubeconfig(tmp_path / 'admin.conf'))) is None
    (tmp_path / 'broken.conf').write_text('{not yaml: [')
    assert kubeconfig_namespace(str(tmp_path / 'broken.conf')) is None
    with pytest.raises(K8sError, match='Cannot read the kubeconfig'):
        kubeconfig_namespace(str(tmp_path / 'absent.conf'))


class ExitingModule:
    """AnsibleModule's exits: exit_json and fail_json end the module with SystemExit."""

    def __init__(self, argument_spec, supports_check_mode):
        self.params = {'kubeconfig': self.kubeconfig}

    def exit_json(self, **result):
        raise SystemExit(0)

    def fail_json(self, msg, **result):
        raise SystemExit(msg)


@pytest.mark.parametrize('reachable', [True, False], ids=['module exits', 'kubeconfig missing'])
def test_run_with_client_gives_a_lasting_interpreter_its_collector_back(monkeypatch, tmp_path, reachable):
    """Mitogen runs modules in an interpreter that lives on: the collector a module turned off comes back."""
    import ansible.module_utils.basic  # pylint: disable=import-outside-toplevel

    ExitingModule.kubeconfig = str(write_kubeconfig(tmp_path / 'admin.conf') if reachable else tmp_path / 'absent')
    monkeypatch.setattr(ansible.module_utils.basic, 'AnsibleModule', ExitingModule)
    seen = []

    def run(module, client):
        seen.append(gc.isenabled())
        module.exit_json(changed=False)

    assert gc.isenabled()
    with pytest.raises(SystemExit):
        run_with_client({}, run)
    assert seen == ([False] if reachable else [])
    assert gc.isenabled()
