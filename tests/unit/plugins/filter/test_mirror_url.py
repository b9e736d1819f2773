# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.mirror_url import FilterModule, mirror_url

UPSTREAM = 'https://dl.k8s.io/release'


@pytest.mark.parametrize('mirror', ['', None, '   '])
def test_no_mirror_returns_upstream(mirror):
    assert mirror_url(UPSTREAM, mirror) == UPSTREAM


@pytest.mark.parametrize('mirror, expected', [
    ('http://10.88.0.1:8080', 'http://10.88.0.1:8080/dl.k8s.io/release'),
    ('http://10.88.0.1:8080/', 'http://10.88.0.1:8080/dl.k8s.io/release'),
    ('https://files.lab/mirror//', 'https://files.lab/mirror/dl.k8s.io/release'),
    (' http://10.88.0.1:8080 ', 'http://10.88.0.1:8080/dl.k8s.io/release'),
])
def test_mirror_replaces_the_scheme(mirror, expected):
    assert mirror_url(UPSTREAM, mirror) == expected


def test_other_schemes_and_paths():
    mirror = 'http://m:8080'
    assert mirror_url('http://get.helm.sh/helm-v3.tar.gz', mirror) == 'http://m:8080/get.helm.sh/helm-v3.tar.gz'
    assert (mirror_url('https://github.com/containerd/containerd/releases/download/v2.1.4/x.tar.gz', mirror)
            == 'http://m:8080/github.com/containerd/containerd/releases/download/v2.1.4/x.tar.gz')
    assert mirror_url('dl.k8s.io/release', mirror) == 'http://m:8080/dl.k8s.io/release'


@pytest.mark.parametrize('mirror', ['10.88.0.1:8080', 'ftp://m', 'http://', 'file:///srv/mirror', 8080,
                                    'http://bad host'])
def test_bad_mirror_is_rejected(mirror):
    with pytest.raises(AnsibleFilterError, match=r'dralab\.workshop\.mirror_url: mirror .*'):
        mirror_url(UPSTREAM, mirror)


def test_bad_mirror_message_explains():
    with pytest.raises(AnsibleFilterError) as info:
        mirror_url(UPSTREAM, '10.88.0.1:8080')
    assert "'10.88.0.1:8080'" in str(info.value)
    assert 'not an http:// or https:// URL' in str(info.value)


@pytest.mark.parametrize('upstream', ['', None, 7])
def test_bad_upstream_is_rejected(upstream):
    with pytest.raises(AnsibleFilterError, match='upstream URL'):
        mirror_url(upstream, 'http://m')


def test_registered():
    assert FilterModule().filters() == {'mirror_url': mirror_url}
