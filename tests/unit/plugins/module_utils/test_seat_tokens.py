# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seat tokens: JWT payload decoding, the reuse decision, kubeconfig files, and issuing against a fake API."""

from __future__ import annotations

import base64
import json
import os
import stat

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils.seat import tokens as st
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, kubeconfig_cluster

from seat_fakes import HOUR, NOW, FakeTokenApi as FakeApi, b64url, make_token


def decide(token, now=NOW, sa_uid='sa-uid-1', secret_uid='secret-uid-1', renew_before=HOUR):
    return st.token_decision(token, now, 'user01', 'user01', sa_uid, 'dralab-seat-token', secret_uid, renew_before)


def test_decode_payload_without_padding():
    token = make_token()
    claims = st.decode_jwt_payload(token)
    assert claims['kubernetes.io']['secret'] == {'name': 'dralab-seat-token', 'uid': 'secret-uid-1'}
    assert claims['exp'] == NOW + 8 * HOUR


@pytest.mark.parametrize('token, message', [
    ('not-a-jwt', 'not a JWT'),
    ('a..c', 'not a JWT'),
    ('a.%%%.c', 'not base64url-encoded JSON'),
    ('a.%s.c' % b64url(b'[1, 2]'), 'not a JSON object'),
    (None, 'not a string'),
])
def test_decode_rejects_garbage(token, message):
    with pytest.raises(ValueError, match=message):
        st.decode_jwt_payload(token)


def test_fresh_token_is_reused():
    reuse, reason, expires = decide(make_token())
    assert reuse is True
    assert reason == 'the stored token is valid until 2027-01-15T16:00:00Z'
    assert expires == NOW + 8 * HOUR


@pytest.mark.parametrize('token_kwargs, decide_kwargs, reason', [
    ({}, {'now': NOW + 8 * HOUR + 1}, 'the stored token expired at'),
    ({}, {'now': NOW + 7 * HOUR + 1}, 'within the renewal margin'),
    ({}, {'secret_uid': 'secret-uid-2'}, 'Secret dralab-seat-token was recreated'),
    ({}, {'sa_uid': 'sa-uid-2'}, 'the ServiceAccount was recreated'),
    ({'secret': None}, {}, 'not bound to a Secret'),
    ({'secret': 'other'}, {}, 'bound to Secret other'),
    ({'namespace': 'user02'}, {}, 'for namespace user02'),
    ({'sa': 'default'}, {}, 'for ServiceAccount default'),
    ({'extra': {'exp': None}}, {}, 'has no expiry'),
])
def test_token_is_replaced_when(token_kwargs, decide_kwargs, reason):
    reuse, text = decide(make_token(**token_kwargs), **decide_kwargs)[:2]
    assert reuse is False
    assert reason in text


def test_missing_or_unreadable_token_is_replaced():
    assert decide(None)[:2] == (False, 'no stored token')
    assert decide('garbage')[1].startswith('the stored token is unreadable')


def test_margin_is_capped_at_half_the_lifetime():
    # A 20 minute token (the API server may shorten lifetimes) is not renewed at once with a 1h margin...
    short = make_token(lifetime=20 * 60)
    assert decide(short, now=NOW + 60)[0] is True
    # ...but after half its life.
    assert decide(short, now=NOW + 11 * 60)[0] is False
    assert decide(make_token(), renew_before=0, now=NOW + 8 * HOUR - 1)[0] is True


def test_kubeconfig_roundtrip_is_valid_yaml():
    text = st.render_kubeconfig('user01', 'user01', 'https://10.0.0.10:6443', 'tok.en.x', ca_data='Q0E=')
    config = yaml.safe_load(text)
    assert config['current-context'] == 'user01@dralab'
    assert config['contexts'][0]['context'] == {'cluster': 'dralab', 'namespace': 'user01', 'user': 'user01'}
    assert config['clusters'][0]['cluster'] == {'server': 'https://10.0.0.10:6443', 'certificate-authority-data': 'Q0E='}
    assert st.kubeconfig_token(text) == 'tok.en.x'
    insecure = yaml.safe_load(st.render_kubeconfig('u', 'u', 'https://x', 't', insecure=True))
    assert insecure['clusters'][0]['cluster']['insecure-skip-tls-verify'] is True


def test_kubeconfig_token_of_other_files():
    assert st.kubeconfig_token(None) is None
    assert st.kubeconfig_token('::: not yaml') is None
    single = {'users': [{'name': 'x', 'user': {'token': 'abc'}}]}
    assert st.kubeconfig_token(json.dumps(single)) == 'abc'
    assert st.kubeconfig_token(json.dumps({'users': [{'name': 'x', 'user': {'client-certificate-data': 'c'}}]})) is None


def write_admin_kubeconfig(tmp_path, cluster=None):
    cluster = cluster or {'server': 'https://127.0.0.1:6443', 'certificate-authority-data': 'QURNSU4='}
    config = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'admin@lab',
              'contexts': [{'name': 'admin@lab', 'context': {'cluster': 'lab', 'user': 'admin'}}],
              'clusters': [{'name': 'lab', 'cluster': cluster}],
              'users': [{'name': 'admin', 'user': {'token': 'admin'}}]}
    path = tmp_path / 'admin.conf'
    path.write_text(yaml.safe_dump(config))
    return path


def test_admin_kubeconfig_gives_server_and_ca(tmp_path):
    path = write_admin_kubeconfig(tmp_path)
    assert kubeconfig_cluster(str(path)) == ('https://127.0.0.1:6443', 'QURNSU4=', False)
    (tmp_path / 'ca.crt').write_bytes(b'PEM')
    path = write_admin_kubeconfig(tmp_path, {'server': 'https://x:6443', 'certificate-authority': 'ca.crt'})
    assert kubeconfig_cluster(str(path)) == ('https://x:6443', base64.b64encode(b'PEM').decode(), False)
    with pytest.raises(K8sError, match='has no context nope'):
        kubeconfig_cluster(str(path), 'nope')
    with pytest.raises(K8sError, match='Cannot read the admin kubeconfig'):
        kubeconfig_cluster(str(tmp_path / 'missing.conf'))


def manage(api, tmp_path, seats, now=NOW, check_mode=False, **kwargs):
    return st.manage_tokens(api, seats, str(tmp_path / 'seats'), 'https://10.0.0.10:6443', ca_data='Q0E=',
                            check_mode=check_mode, now=now, **kwargs)


def test_first_run_issues_second_run_reuses(tmp_path):
    seats = ['user01', 'user02', 'user03']
    api = FakeApi(seats)
    first = manage(api, tmp_path, seats)
    assert first['changed'] is True
    assert first['issued'] == seats and first['written'] == seats
    assert len(api.requests) == 3
    # The seats' tokens are requested in parallel: in any order.
    body = next(request[2] for request in api.requests if '/namespaces/user01/' in request[1])
    assert body['spec']['expirationSeconds'] == 28800
    assert body['spec']['boundObjectRef'] == {'apiVersion': 'v1', 'kind': 'Secret', 'name': 'dralab-seat-token',
                                              'uid': 'secret-user01-1'}
    folder = tmp_path / 'seats'
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    config = yaml.safe_load((folder / 'user02.kubeconfig').read_text())
    assert config['users'][0]['user']['token'] == first['tokens']['user02']
    assert stat.S_IMODE(os.stat(folder / 'user02.kubeconfig').st_mode) == 0o600
    assert first['seats'][0]['expires'] == '2027-01-15T16:00:00Z'

    second = manage(api, tmp_path, seats, now=NOW + 60)
    assert second['changed'] is False
    assert second['issued'] == [] and second['written'] == []
    assert second['tokens'] == first['tokens']
    assert len(api.requests) == 3
    assert second['seats'][1]['reason'].startswith('the stored token is valid until')


def test_rotated_secret_gets_a_new_token_and_file(tmp_path):
    seats = ['user01', 'user02']
    api = FakeApi(seats)
    first = manage(api, tmp_path, seats)
    api.objects['/api/v1/namespaces/user02/secrets/dralab-seat-token']['metadata']['uid'] = 'secret-user02-2'
    again = manage(api, tmp_path, seats, now=NOW + 60)
    assert again['issued'] == ['user02'] and again['written'] == ['user02']
    assert again['tokens']['user01'] == first['tokens']['user01']
    assert again['tokens']['user02'] != first['tokens']['user02']
    assert 'recreated' in again['seats'][1]['reason']


def test_a_rotated_generation_gets_a_token_of_its_own_account(tmp_path):
    """After a rotation the namespace names generation 2: the token is for ServiceAccount user02-g2, not user02."""
    seats = ['user01', 'user02']
    api = FakeApi(seats)
    first = manage(api, tmp_path, seats)
    api.objects['/api/v1/namespaces/user02'] = {
        'metadata': {'name': 'user02', 'annotations': {'dralab.workshop/credential-generation': '2'}}}
    api.objects['/api/v1/namespaces/user02/serviceaccounts/user02-g2'] = {
        'metadata': {'name': 'user02-g2', 'uid': 'sa-user02-g2'}}
    again = manage(api, tmp_path, seats, now=NOW + 60)
    assert again['issued'] == ['user02'] and again['tokens']['user01'] == first['tokens']['user01']
    assert api.requests[-1][1] == '/api/v1/namespaces/user02/serviceaccounts/user02-g2/token'
    claims = st.decode_jwt_payload(again['tokens']['user02'])
    assert claims['kubernetes.io']['serviceaccount'] == {'name': 'user02-g2', 'uid': 'sa-user02-g2'}
    assert again['seats'][1]['reason'] == 'the stored token is for ServiceAccount user02'
    assert manage(api, tmp_path, seats, now=NOW + 120)['changed'] is False


def test_changed_server_rewrites_files_without_new_tokens(tmp_path):
    api = FakeApi(['user01'])
    manage(api, tmp_path, ['user01'])
    result = st.manage_tokens(api, ['user01'], str(tmp_path / 'seats'), 'https://lab.example.com:6443', now=NOW + 60)
    assert result['issued'] == [] and result['written'] == ['user01'] and result['changed'] is True
    assert 'lab.example.com' in (tmp_path / 'seats' / 'user01.kubeconfig').read_text()


def test_check_mode_reports_without_requesting_or_writing(tmp_path):
    seats = ['user01', 'user02']
    api = FakeApi(seats)
    result = manage(api, tmp_path, seats, check_mode=True)
    assert result['changed'] is True and result['issued'] == seats
    assert api.requests == [] and not (tmp_path / 'seats').exists()
    assert result['tokens'] == {}
    manage(api, tmp_path, seats)
    converged = manage(api, tmp_path, seats, now=NOW + 60, check_mode=True)
    assert converged['changed'] is False and len(converged['tokens']) == 2


def test_missing_secret_fails_outside_check_mode(tmp_path):
    api = FakeApi(['user01'])
    del api.objects['/api/v1/namespaces/user01/secrets/dralab-seat-token']
    with pytest.raises(K8sError, match='Secret user01/dralab-seat-token does not exist'):
        manage(api, tmp_path, ['user01'])
    planned = manage(api, tmp_path, ['user01'], check_mode=True)
    assert planned['issued'] == ['user01'] and 'does not exist yet' in planned['seats'][0]['reason']


@pytest.mark.parametrize('kwargs, message', [
    ({'expiration_seconds': 599}, 'at least 600'),
    ({'renew_before': -1}, 'renew_before must be 0 or more'),
])
def test_bad_durations_are_refused(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        manage(FakeApi(['user01']), tmp_path, ['user01'], **kwargs)


def test_bad_seat_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match='not a DNS-1123 label'):
        manage(FakeApi([]), tmp_path, ['../etc/passwd'])


def test_token_request_body():
    assert st.token_request_body(600, 's', 'u') == {
        'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenRequest',
        'spec': {'expirationSeconds': 600, 'boundObjectRef': {'apiVersion': 'v1', 'kind': 'Secret', 'name': 's', 'uid': 'u'}}}


def test_the_kubeconfig_folder_and_the_artifacts_folder_are_made_or_set_private(tmp_path):
    artifacts, seats = tmp_path / 'lab', tmp_path / 'lab' / 'seats'
    assert st.private_folders(str(seats), check_mode=True) == [str(artifacts), str(seats)]
    assert not artifacts.exists()
    assert st.private_folders(str(seats)) == [str(artifacts), str(seats)]
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in (artifacts, seats)] == [0o700, 0o700]
    assert st.private_folders(str(seats)) == []
    artifacts.chmod(0o755)
    assert st.private_folders(str(seats), check_mode=True) == [str(artifacts)]
    assert stat.S_IMODE(os.stat(artifacts).st_mode) == 0o755
    api = FakeApi(['user01'])
    result = st.manage_tokens(api, ['user01'], str(seats), 'https://10.0.0.10:6443', ca_data='Q0E=', now=NOW)
    assert result['folders'] == [str(artifacts)] and stat.S_IMODE(os.stat(artifacts).st_mode) == 0o700
    again = st.manage_tokens(api, ['user01'], str(seats), 'https://10.0.0.10:6443', ca_data='Q0E=', now=NOW + 60)
    assert again['folders'] == [] and again['changed'] is False
