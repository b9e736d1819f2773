# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metadata that must agree: Ansible, the Kubernetes client, the OS platforms of the roles, the node programs' wheel."""

from __future__ import annotations

import pathlib
import re
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import OS_RELEASES, os_release_problem
from ansible_collections.dralab.workshop.plugins.module_utils.preflight import controller

REPO = pathlib.Path(__file__).resolve().parents[2]
ROLE_METAS = sorted(REPO.glob('roles/*/meta/main.yml'))
# meta/main.yml names releases by codename.
CODENAMES = {'bookworm': ('Debian', '12'), 'trixie': ('Debian', '13'), 'jammy': ('Ubuntu', '22.04'),
             'noble': ('Ubuntu', '24.04')}


def requires_ansible():
    text = yaml.safe_load((REPO / 'meta' / 'runtime.yml').read_text())['requires_ansible']
    match = re.match(r'^>=\s*(\d+)\.(\d+)(?:\.\d+)?$', text)
    assert match, 'meta/runtime.yml requires_ansible %r is not ">=X.Y.Z"' % text
    return '%s.%s' % match.groups()


def requirement(path, name):
    """The one requirement of a requirements file for a distribution name."""
    found = [Requirement(line.split('#')[0].strip()) for line in (REPO / path).read_text().splitlines()
             if line.split('#')[0].strip()]
    found = [req for req in found if req.name == name]
    assert len(found) == 1, '%s names %s %d times' % (path, name, len(found))
    return found[0]


def lower_bound(req):
    """The X.Y of a requirement's single >= bound."""
    bounds = [spec.version for spec in req.specifier if spec.operator == '>=']
    assert len(bounds) == 1, '%s has no single >= bound' % req
    release = Version(bounds[0]).release
    return '%d.%d' % (release[0], release[1] if len(release) > 1 else 0)


def test_requirements_install_the_ansible_core_the_collection_requires():
    req = requirement('requirements.txt', 'ansible-core')
    assert lower_bound(req) == requires_ansible(), (
        'requirements.txt allows %s but meta/runtime.yml requires_ansible is >=%s' % (req, requires_ansible()))
    # The version the tests run is one requirements.txt allows.
    [pin] = requirement('requirements-dev.txt', 'ansible-core').specifier
    assert pin.operator == '==' and req.specifier.contains(pin.version), (
        'requirements-dev.txt runs ansible-core %s, outside %s of requirements.txt' % (pin.version, req))


def test_the_preflight_accepts_the_core_the_collection_requires():
    assert '%d.%d' % controller.MIN_ANSIBLE_CORE == requires_ansible()


def test_the_venv_python_is_one_the_preflight_accepts():
    text = (REPO / 'dralab_build' / 'find_python.sh').read_text()
    assert 'sys.version_info < (%d, %d)' % controller.MIN_PYTHON in text


@pytest.mark.parametrize('meta', ROLE_METAS, ids=[path.parts[-3] for path in ROLE_METAS])
def test_role_minimum_ansible_is_the_collections(meta):
    info = yaml.safe_load(meta.read_text())['galaxy_info']
    assert str(info['min_ansible_version']) == requires_ansible(), meta


@pytest.mark.parametrize('meta', ROLE_METAS, ids=[path.parts[-3] for path in ROLE_METAS])
def test_role_platforms_are_what_a_test_runs(meta):
    info = yaml.safe_load(meta.read_text())['galaxy_info']
    releases = [CODENAMES.get(str(version), (platform['name'], str(version)))
                for platform in info['platforms'] for version in platform['versions']]
    assert releases, meta
    for release in releases:
        assert release in OS_RELEASES, '%s lists %s %s, which no test runs' % (meta, release[0], release[1])


def test_every_role_lists_every_release():
    # OS_RELEASES is what the preflight accepts: every role must run there (and a test boots it).
    for meta in ROLE_METAS:
        info = yaml.safe_load(meta.read_text())['galaxy_info']
        releases = set(CODENAMES.get(str(version), (platform['name'], str(version)))
                       for platform in info['platforms'] for version in platform['versions'])
        assert releases == set(OS_RELEASES), meta


def test_the_preflight_accepts_exactly_the_tested_releases():
    for distribution, version in OS_RELEASES:
        assert os_release_problem(distribution, version + '.1', version) is None
    for distribution, version, major in (('Debian', '14.1', '14'), ('Ubuntu', '24.04', '24'), ('Debian', '11.9', '11')):
        refused = '%s %s is not a supported release' % (distribution, version)
        assert os_release_problem(distribution, version, major).startswith(refused)


def test_kubernetes_client_version_agrees():
    requirement = k8s_client.KUBERNETES_REQUIREMENT
    lines = [line.split('#')[0].strip() for line in (REPO / 'requirements.txt').read_text().splitlines()]
    assert requirement in lines, 'requirements.txt does not pin %s' % requirement
    minimum = requirement.split('>=')[1]
    fragment = (REPO / 'plugins' / 'doc_fragments' / 'k8s_auth.py').read_text()
    assert 'kubernetes >= %s (Python client)' % minimum in fragment
    dev = [line for line in (REPO / 'requirements-dev.txt').read_text().splitlines() if line.startswith('kubernetes==')]
    assert len(dev) == 1
    pinned = tuple(int(part) for part in dev[0].split('==')[1].split('.'))
    assert pinned >= tuple(int(part) for part in minimum.split('.')), 'requirements-dev.txt pins an older client'


def test_requirements_yml_names_the_collections_galaxy_yml_depends_on():
    galaxy = yaml.safe_load((REPO / 'galaxy.yml').read_text())['dependencies']
    listed = {item['name']: item['version'] for item in yaml.safe_load((REPO / 'requirements.yml').read_text())['collections']}
    assert listed == galaxy


def test_the_node_programs_wheel_carries_every_module_utils_package():
    """can-has-gpu, the lease reaper and the board import module_utils from their wheel (pyproject.toml): a package
    left out of it installs, then fails on the nodes with ModuleNotFoundError."""
    setuptools = tomllib.loads((REPO / 'pyproject.toml').read_text())['tool']['setuptools']
    prefix = 'ansible_collections.dralab.workshop.plugins.module_utils'
    folders = {prefix: 'plugins/module_utils'}
    folders.update({'%s.%s' % (prefix, path.parent.name): 'plugins/module_utils/%s' % path.parent.name
                    for path in (REPO / 'plugins' / 'module_utils').glob('*/__init__.py')})
    assert {name: setuptools['package-dir'].get(name) for name in setuptools['packages'] if name.startswith(prefix)} \
        == folders
