"""Templates and derived settings of the kubernetes role, rendered as Ansible would."""

from __future__ import annotations

import subprocess
import pytest
from render import evaluate as evaluate_in_role
from render import parse_unit, render_role_template, role_vars
from render import unit_values as values

ROLE = 'kubernetes'
FACTS = {'ansible_facts': {'architecture': 'x86_64', 'os_family': 'Debian'}}


def render(template: str, os_family: str = 'Debian', **overrides) -> str:
    return render_role_template(ROLE, template, role_vars(ROLE, ('main.yml', os_family + '.yml'), FACTS, **overrides))


def evaluate(expression: str, os_family: str = 'Debian', **overrides):
    return evaluate_in_role(ROLE, expression, role_vars(ROLE, ('main.yml', os_family + '.yml'), FACTS, **overrides))


# kubelet.service and the kubeadm drop-in


def test_kubelet_unit_runs_the_installed_kubelet():
    unit = parse_unit(render('kubelet.service.j2'))
    assert values(unit['Service'], 'ExecStart') == ['/usr/local/bin/kubelet']
    assert values(unit['Service'], 'Restart') == ['always']
    assert values(unit['Unit'], 'Wants') == ['network-online.target']
    assert values(unit['Install'], 'WantedBy') == ['multi-user.target']


def test_kubeadm_dropin_has_the_kubeadm_arguments():
    service = parse_unit(render('10-kubeadm.conf.j2'))['Service']
    environment = dict(value.strip('"').split('=', 1) for value in values(service, 'Environment'))
    assert environment['KUBELET_KUBECONFIG_ARGS'] == (
        '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf')
    assert environment['KUBELET_CONFIG_ARGS'] == '--config=/var/lib/kubelet/config.yaml'
    assert values(service, 'EnvironmentFile') == ['-/var/lib/kubelet/kubeadm-flags.env', '-/etc/default/kubelet']
    # The first, empty ExecStart resets the one of kubelet.service.
    assert values(service, 'ExecStart') == [
        '',
        '/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS'
        ' $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS',
    ]


def test_kubeadm_dropin_reads_sysconfig_on_the_redhat_family():
    service = parse_unit(render('10-kubeadm.conf.j2', os_family='RedHat'))['Service']
    assert values(service, 'EnvironmentFile')[-1] == '-/etc/sysconfig/kubelet'


def test_units_follow_the_binary_folder():
    assert values(parse_unit(render('kubelet.service.j2', kubernetes_bin_dir='/opt/k8s/bin'))['Service'],
                  'ExecStart') == ['/opt/k8s/bin/kubelet']
    assert values(parse_unit(render('10-kubeadm.conf.j2', kubernetes_bin_dir='/opt/k8s/bin'))['Service'],
                  'ExecStart')[1].startswith('/opt/k8s/bin/kubelet ')


@pytest.mark.parametrize('extra', ['', '--node-ip=192.0.2.11', '--node-ip=192.0.2.11 --v=2'])
def test_kubelet_environment_file_carries_the_extra_arguments(extra):
    lines = [line for line in render('kubelet.env.j2', kubernetes_kubelet_extra_args=extra).splitlines()
             if line and not line.startswith('#')]
    assert lines == ['KUBELET_EXTRA_ARGS=' + extra]


# Download URLs and checksums


def test_binaries_come_from_dl_k8s_io_with_their_sha256_files():
    assert evaluate('kubernetes_version') == '1.35.4'
    base = evaluate('__kubernetes_binary_base')
    assert base == 'https://dl.k8s.io/release/v1.35.4/bin/linux/amd64'
    assert evaluate('__kubernetes_release') == 'v1.35.4 linux/amd64'


def test_lab_wide_version_and_files_mirror():
    base = evaluate('__kubernetes_binary_base', dralab_kubernetes_version='1.35.2',
                    dralab_download_mirror='http://10.88.0.1:8080/')
    assert base == 'http://10.88.0.1:8080/dl.k8s.io/release/v1.35.2/bin/linux/amd64'


def test_arm64():
    assert evaluate('__kubernetes_binary_base', ansible_facts={'architecture': 'aarch64', 'os_family': 'Debian'}) \
        .endswith('/bin/linux/arm64')
    assert evaluate('__kubernetes_binary_base', kubernetes_arch='arm64').endswith('/bin/linux/arm64')


def test_checksum_is_the_sha256_file_unless_pinned():
    pinned = 'sha256:' + 'b' * 64
    downloads = evaluate('__kubernetes_downloads', kubernetes_checksums={'kubelet': pinned})
    base = 'https://dl.k8s.io/release/v1.35.4/bin/linux/amd64/'
    assert downloads == [
        {'name': 'kubeadm', 'url': base + 'kubeadm', 'checksum': 'sha256:' + base + 'kubeadm.sha256',
         'release': 'v1.35.4 linux/amd64'},
        {'name': 'kubelet', 'url': base + 'kubelet', 'checksum': pinned, 'release': 'v1.35.4 linux/amd64'},
        {'name': 'kubectl', 'url': base + 'kubectl', 'checksum': 'sha256:' + base + 'kubectl.sha256',
         'release': 'v1.35.4 linux/amd64'},
    ]
    assert [d['name'] for d in evaluate('__kubernetes_downloads', kubernetes_binaries=['kubectl'])] == ['kubectl']


@pytest.mark.needs_tools
def test_units_pass_systemd_analyze_verify(tmp_path):
    binary = tmp_path / 'bin' / 'kubelet'
    binary.parent.mkdir()
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    (tmp_path / 'kubelet.service').write_text(render('kubelet.service.j2', kubernetes_bin_dir=str(binary.parent)))
    (tmp_path / 'kubelet.service.d').mkdir()
    (tmp_path / 'kubelet.service.d' / '10-kubeadm.conf').write_text(
        render('10-kubeadm.conf.j2', kubernetes_bin_dir=str(binary.parent)))
    result = subprocess.run(['systemd-analyze', 'verify', '--man=no', str(tmp_path / 'kubelet.service')],
                            capture_output=True, text=True, check=False,
                            env={'SYSTEMD_UNIT_PATH': '%s:' % tmp_path, 'PATH': '/usr/bin:/bin'})
    assert str(tmp_path) not in result.stdout + result.stderr, result.stderr
