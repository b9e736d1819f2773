"""Templates and derived settings of the containerd role, rendered as Ansible would."""

from __future__ import annotations

import subprocess
import tomllib

import pytest
import yaml
from render import evaluate as evaluate_in_role
from render import parse_unit, render_role_template, role_vars
from render import unit_values as values

ROLE = 'containerd'
FACTS = {'ansible_facts': {'architecture': 'x86_64', 'os_family': 'Debian'}}
MIRROR = '10.88.0.1:5000'
CRI_IMAGES = 'io.containerd.cri.v1.images'
CRI_RUNTIME = 'io.containerd.cri.v1.runtime'


def render(template: str, **overrides) -> str:
    return render_role_template(ROLE, template, role_vars(ROLE, ('main.yml',), FACTS, **overrides))


def evaluate(expression: str, **overrides):
    return evaluate_in_role(ROLE, expression, role_vars(ROLE, ('main.yml',), FACTS, **overrides))


# config.toml


def test_config_defaults_parse_as_toml_v3_for_kubernetes_and_dra():
    config = tomllib.loads(render('config.toml.j2'))
    assert config['version'] == 3
    assert config['grpc']['address'] == '/run/containerd/containerd.sock'
    images = config['plugins'][CRI_IMAGES]
    assert images['snapshotter'] == 'overlayfs'
    assert 'use_local_image_pull' not in images
    assert images['pinned_images']['sandbox'] == 'registry.k8s.io/pause:3.10.1'
    assert images['registry']['config_path'] == '/etc/containerd/certs.d'
    runtime = config['plugins'][CRI_RUNTIME]
    assert runtime['enable_cdi'] is True
    assert runtime['cdi_spec_dirs'] == ['/etc/cdi', '/var/run/cdi']
    assert runtime['containerd']['default_runtime_name'] == 'runc'
    runc = runtime['containerd']['runtimes']['runc']
    assert runc['runtime_type'] == 'io.containerd.runc.v2'
    assert runc['options']['SystemdCgroup'] is True
    assert runc['options']['BinaryName'] == '/usr/local/sbin/runc'
    assert runtime['cni']['conf_dir'] == '/etc/cni/net.d'


def test_config_follows_the_switches():
    config = tomllib.loads(render(
        'config.toml.j2',
        containerd_systemd_cgroup=False,
        containerd_enable_cdi=False,
        containerd_cdi_spec_dirs=['/etc/cdi'],
        containerd_snapshotter='native',
        containerd_sandbox_image='10.88.0.1:5000/pause:3.10.1',
    ))
    images = config['plugins'][CRI_IMAGES]
    runtime = config['plugins'][CRI_RUNTIME]
    assert images['snapshotter'] == 'native'
    # containerd 2.1's transfer service would not unpack into native.
    assert images['use_local_image_pull'] is True
    assert images['pinned_images']['sandbox'] == '10.88.0.1:5000/pause:3.10.1'
    assert runtime['enable_cdi'] is False
    assert runtime['cdi_spec_dirs'] == ['/etc/cdi']
    assert runtime['containerd']['runtimes']['runc']['options']['SystemdCgroup'] is False


def test_config_does_not_depend_on_the_registry_mirror():
    # Mirrors live in certs.d/<registry>/hosts.toml; config.toml only points there.
    assert render('config.toml.j2') == render('config.toml.j2', containerd_registry_mirror=MIRROR)


# certs.d/<registry>/hosts.toml


@pytest.mark.parametrize('registry, server', [
    ('registry.k8s.io', 'https://registry.k8s.io'),
    ('docker.io', 'https://registry-1.docker.io'),
    ('ghcr.io', 'https://ghcr.io'),
    ('quay.io', 'https://quay.io'),
])
def test_hosts_toml_flat_points_every_registry_at_the_plain_http_mirror(registry, server):
    text = render('hosts.toml.j2', containerd_registry_mirror=MIRROR, __containerd_registry=registry)
    assert text.startswith('# Managed by dralab.workshop.containerd')
    hosts = tomllib.loads(text)
    assert hosts['server'] == server
    assert list(hosts['host']) == ['http://10.88.0.1:5000']
    mirror = hosts['host']['http://10.88.0.1:5000']
    assert mirror['capabilities'] == ['pull', 'resolve']
    assert mirror['skip_verify'] is True
    assert 'override_path' not in mirror


def test_hosts_toml_namespaced_puts_the_registry_in_the_path():
    hosts = tomllib.loads(render(
        'hosts.toml.j2',
        containerd_registry_mirror=MIRROR,
        containerd_registry_mirror_layout='namespaced',
        __containerd_registry='registry.k8s.io',
    ))
    assert hosts['server'] == 'https://registry.k8s.io'
    mirror = hosts['host']['http://10.88.0.1:5000/v2/registry.k8s.io']
    assert mirror['override_path'] is True
    assert mirror['capabilities'] == ['pull', 'resolve']


@pytest.mark.parametrize('given, url', [
    ('http://10.88.0.1:5000/', 'http://10.88.0.1:5000'),
    ('https://mirror.example.test', 'https://mirror.example.test'),
    ('[fd00::1]:5000', 'http://[fd00::1]:5000'),
])
def test_hosts_toml_takes_a_url_as_given(given, url):
    hosts = tomllib.loads(render('hosts.toml.j2', containerd_registry_mirror=given, __containerd_registry='quay.io'))
    assert list(hosts['host']) == [url]


def test_registries_get_hosts_toml_only_with_a_mirror():
    assert evaluate('__containerd_wanted_registries') == []
    assert evaluate('__containerd_wanted_registries', containerd_registry_mirror=MIRROR) == [
        'registry.k8s.io', 'docker.io', 'ghcr.io', 'quay.io']
    assert evaluate('__containerd_wanted_registries', dralab_registry_mirror=MIRROR) == [
        'registry.k8s.io', 'docker.io', 'ghcr.io', 'quay.io']
    assert evaluate('__containerd_wanted_hosts_files') == []
    assert evaluate('__containerd_wanted_hosts_files', containerd_registry_mirror=MIRROR,
                    containerd_mirrored_registries=['registry.k8s.io', 'docker.io']) == [
        '/etc/containerd/certs.d/registry.k8s.io/hosts.toml', '/etc/containerd/certs.d/docker.io/hosts.toml']


# containerd.service and crictl.yaml


def test_unit_runs_containerd_from_usr_local():
    unit = parse_unit(render('containerd.service.j2'))
    service = unit['Service']
    assert values(service, 'ExecStart') == ['/usr/local/bin/containerd']
    assert values(service, 'Type') == ['notify']
    assert values(service, 'Delegate') == ['yes']
    assert values(service, 'KillMode') == ['process']
    assert values(service, 'ExecStartPre') == ['-/sbin/modprobe overlay']
    assert values(unit['Install'], 'WantedBy') == ['multi-user.target']


def test_unit_skips_modprobe_overlay_with_the_native_snapshotter():
    unit = parse_unit(render('containerd.service.j2', containerd_snapshotter='native'))
    assert values(unit['Service'], 'ExecStartPre') == []
    assert values(unit['Service'], 'ExecStart') == ['/usr/local/bin/containerd']


def test_crictl_talks_to_the_containerd_socket():
    config = yaml.safe_load(render('crictl.yaml.j2'))
    assert config['runtime-endpoint'] == 'unix:///run/containerd/containerd.sock'
    assert config['image-endpoint'] == 'unix:///run/containerd/containerd.sock'


# Download URLs and checksums


def artifacts(**overrides) -> dict:
    return {item['name']: item for item in evaluate('__containerd_artifacts', **overrides)}


def test_downloads_come_from_the_upstream_release_pages():
    found = artifacts()
    assert found['containerd']['url'] == (
        'https://github.com/containerd/containerd/releases/download/v2.1.5/containerd-2.1.5-linux-amd64.tar.gz')
    assert found['containerd']['checksum'] == 'sha256:' + found['containerd']['url'] + '.sha256sum'
    assert found['runc']['url'] == 'https://github.com/opencontainers/runc/releases/download/v1.3.3/runc.amd64'
    assert found['runc']['checksum'] == (
        'sha256:https://github.com/opencontainers/runc/releases/download/v1.3.3/runc.sha256sum')
    assert found['cni-plugins']['url'] == (
        'https://github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz')
    assert found['cni-plugins']['checksum'] == 'sha256:' + found['cni-plugins']['url'] + '.sha256'
    assert found['crictl']['url'] == (
        'https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.35.0/crictl-v1.35.0-linux-amd64.tar.gz')
    assert found['crictl']['checksum'] == 'sha256:' + found['crictl']['url'] + '.sha256'
    assert found['containerd']['unpack_to'] == '/usr/local'
    assert found['runc']['unpack_to'] == '' and found['runc']['proof'] == '/usr/local/sbin/runc'
    assert found['cni-plugins']['unpack_to'] == '/opt/cni/bin'
    assert found['crictl']['unpack_to'] == '/usr/local/bin'


def test_downloads_and_checksums_come_from_the_files_mirror():
    found = artifacts(dralab_download_mirror='http://10.88.0.1:8080')
    for item in found.values():
        assert item['url'].startswith('http://10.88.0.1:8080/github.com/'), item['url']
        assert item['checksum'].startswith('sha256:http://10.88.0.1:8080/github.com/'), item['checksum']
    assert found['runc']['url'] == (
        'http://10.88.0.1:8080/github.com/opencontainers/runc/releases/download/v1.3.3/runc.amd64')


def test_pinned_checksums_replace_the_checksum_files():
    pinned = 'sha256:' + 'a' * 64
    found = artifacts(containerd_checksum=pinned, containerd_runc_checksum=pinned,
                      containerd_cni_plugins_checksum=pinned, containerd_crictl_checksum=pinned)
    assert {item['checksum'] for item in found.values()} == {pinned}


def test_arm64_and_the_static_build():
    found = artifacts(ansible_facts={'architecture': 'aarch64', 'os_family': 'RedHat'})
    assert found['containerd']['url'].endswith('/v2.1.5/containerd-static-2.1.5-linux-arm64.tar.gz')
    assert found['containerd']['release'] == 'containerd-static-2.1.5-linux-arm64.tar.gz'
    assert found['runc']['url'].endswith('/runc.arm64')
    assert found['cni-plugins']['url'].endswith('/cni-plugins-linux-arm64-v1.8.0.tgz')
    assert found['crictl']['url'].endswith('/crictl-v1.35.0-linux-arm64.tar.gz')


def test_release_records_change_with_the_versions():
    before = {name: item['release'] for name, item in artifacts().items()}
    after = {name: item['release'] for name, item in artifacts(
        containerd_version='2.2.1', containerd_runc_version='1.4.0',
        containerd_cni_plugins_version='1.9.0', containerd_crictl_version='1.36.0').items()}
    assert all(before[name] != after[name] for name in before)


@pytest.mark.needs_tools
@pytest.mark.parametrize('snapshotter', ['overlayfs', 'native'])
def test_unit_passes_systemd_analyze_verify(tmp_path, snapshotter):
    binary = tmp_path / 'bin' / 'containerd'
    binary.parent.mkdir()
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    unit = tmp_path / 'containerd.service'
    unit.write_text(render('containerd.service.j2', __containerd_bin_dir=str(binary.parent),
                           containerd_snapshotter=snapshotter))
    result = subprocess.run(['systemd-analyze', 'verify', '--man=no', str(unit)],
                            capture_output=True, text=True, check=False)
    assert str(tmp_path) not in result.stdout + result.stderr, result.stderr
