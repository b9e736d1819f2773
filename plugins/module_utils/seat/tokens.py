# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time-bound tokens and kubeconfigs of workshop seats.

Each seat's token is a TokenRequest token of the seat's ServiceAccount (the one
its Namespace records: seat_model.recorded_account), bound to the
seat's Secret (deleting the Secret, or recreating the ServiceAccount, revokes
it). A token stored in the seat's kubeconfig is reused while it is
still valid: its payload (decoded, not verified) names the same namespace,
ServiceAccount (name and uid) and Secret (name and uid) as the cluster has
now, and it expires later than now plus a renewal margin, or with an event
end (seat/event.py) no earlier than that end. Otherwise a new token is
requested. Kubeconfig files are only rewritten when their content changes, so
a second run reports no change. The expiry of a stored token is read from its
kubeconfig file without calling the API (stored_expiries, for health.yml).
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import re
import time

from ansible_collections.dralab.workshop.plugins.module_utils.files import write
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import (
    K8sError,
    kubeconfig_context,
    load_kubeconfig_text,
    named_entry,
    parallel_map,
)
from ansible_collections.dralab.workshop.plugins.module_utils.seat import event as seat_event
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import TOKEN_SECRET_NAME, recorded_account
from ansible_collections.dralab.workshop.plugins.module_utils.values import UTC, format_time

# TokenRequest refuses shorter lifetimes.
MIN_EXPIRATION_SECONDS = 600
DEFAULT_CLUSTER_NAME = 'dralab'


def decode_jwt_payload(token):
    """The claims of a JWT as a dict, without verifying the signature. Raises ValueError."""
    if not isinstance(token, str):
        raise ValueError('the token is not a string')
    parts = token.strip().split('.')
    if len(parts) != 3 or not parts[1]:
        raise ValueError('the token is not a JWT (header.payload.signature)')
    payload = parts[1] + '=' * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode('ascii')).decode('utf-8'))
    except (ValueError, UnicodeError, TypeError) as exc:
        raise ValueError('the token payload is not base64url-encoded JSON (%s)' % exc) from None
    if not isinstance(claims, dict):
        raise ValueError('the token payload is not a JSON object')
    return claims


def token_decision(token, now, namespace, service_account, service_account_uid, secret_name, secret_uid,
                   renew_before, cover_until=None):
    """Whether a stored token can be reused; returns (reuse, reason, expires_epoch or None).

    With cover_until (epoch: the event's end), a token is reused exactly when it lasts until then. Without it, the
    renewal margin is renew_before, but never more than half the token's own lifetime, so short tokens are not
    renewed on every run.
    """
    if not token:
        return False, 'no stored token', None
    try:
        claims = decode_jwt_payload(token)
    except ValueError as exc:
        return False, 'the stored token is unreadable: %s' % exc, None
    k8s = claims.get('kubernetes.io') if isinstance(claims.get('kubernetes.io'), dict) else {}
    account = k8s.get('serviceaccount') if isinstance(k8s.get('serviceaccount'), dict) else {}
    secret = k8s.get('secret') if isinstance(k8s.get('secret'), dict) else {}
    exp = claims.get('exp')
    if k8s.get('namespace') != namespace:
        return False, 'the stored token is for namespace %s' % k8s.get('namespace'), None
    if account.get('name') != service_account:
        return False, 'the stored token is for ServiceAccount %s' % account.get('name'), None
    if service_account_uid and account.get('uid') != service_account_uid:
        return False, 'the ServiceAccount was recreated, which revoked the stored token', None
    if not secret:
        return False, 'the stored token is not bound to a Secret', None
    if secret.get('name') != secret_name:
        return False, 'the stored token is bound to Secret %s, not %s' % (secret.get('name'), secret_name), None
    if secret.get('uid') != secret_uid:
        return False, 'Secret %s was recreated, which revoked the stored token' % secret_name, None
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        return False, 'the stored token has no expiry', None
    if cover_until is not None:
        if exp < cover_until:
            return False, 'the stored token expires at %s, before the event ends at %s' % (
                format_time(exp), format_time(cover_until)), exp
        return True, 'the stored token is valid until %s, after the event ends' % format_time(exp), exp
    issued = claims.get('iat') if isinstance(claims.get('iat'), (int, float)) else claims.get('nbf')
    margin = renew_before
    if isinstance(issued, (int, float)) and not isinstance(issued, bool) and exp > issued:
        margin = min(renew_before, int((exp - issued) // 2))
    if exp <= now + margin:
        if exp <= now:
            return False, 'the stored token expired at %s' % format_time(exp), exp
        return False, 'the stored token expires at %s, within the renewal margin' % format_time(exp), exp
    return True, 'the stored token is valid until %s' % format_time(exp), exp


def _quote(value):
    # A JSON string is a valid YAML double-quoted scalar.
    return json.dumps(value)


def render_kubeconfig(user, namespace, server, token, ca_data=None, insecure=False, cluster_name=DEFAULT_CLUSTER_NAME,
                      title=None):
    """The kubeconfig of a seat, or of a node program's identity (title names it; no namespace), as YAML text
    (stable, so unchanged inputs give identical files)."""
    context = '%s@%s' % (user, cluster_name)
    lines = [
        '# Kubeconfig of %s, written by dralab.workshop.' % (title or 'workshop seat %s' % user),
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '  - name: %s' % _quote(cluster_name),
        '    cluster:',
        '      server: %s' % _quote(server),
    ]
    if ca_data:
        lines.append('      certificate-authority-data: %s' % _quote(ca_data))
    if insecure:
        lines.append('      insecure-skip-tls-verify: true')
    lines += [
        'contexts:',
        '  - name: %s' % _quote(context),
        '    context:',
        '      cluster: %s' % _quote(cluster_name),
    ]
    if namespace:
        lines.append('      namespace: %s' % _quote(namespace))
    lines += [
        '      user: %s' % _quote(user),
        'current-context: %s' % _quote(context),
        'users:',
        '  - name: %s' % _quote(user),
        '    user:',
        '      token: %s' % _quote(token),
        'preferences: {}',
    ]
    return '\n'.join(lines) + '\n'


def kubeconfig_token(text):
    """The bearer token of the current context's user in a kubeconfig, or None."""
    config = load_kubeconfig_text(text)
    context = kubeconfig_context(config)[1] or {}
    user = named_entry(config.get('users'), context.get('user'), 'user')
    if user is None:
        users = [u.get('user') for u in config.get('users') or [] if isinstance(u, dict) and isinstance(u.get('user'), dict)]
        user = users[0] if len(users) == 1 else {}
    token = user.get('token')
    return token if isinstance(token, str) and token else None


def token_request_body(expiration_seconds, secret_name, secret_uid):
    return {
        'apiVersion': 'authentication.k8s.io/v1',
        'kind': 'TokenRequest',
        'spec': {
            'expirationSeconds': int(expiration_seconds),
            'boundObjectRef': {'apiVersion': 'v1', 'kind': 'Secret', 'name': secret_name, 'uid': secret_uid},
        },
    }


def read_text(path):
    try:
        with open(path, 'r') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def stored_expiry(path):
    """(expiry epoch, None) of the token in the kubeconfig file at path, or (None, why not) when there is none."""
    text = read_text(path)
    if text is None:
        return None, 'no kubeconfig file %s' % path
    try:
        exp = decode_jwt_payload(kubeconfig_token(text) or '').get('exp')
    except ValueError as exc:
        return None, 'the token in %s is unreadable: %s' % (path, exc)
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        return None, 'the token in %s has no expiry' % path
    return exp, None


def stored_expiries(kubeconfig_dir, seats):
    """seat -> stored_expiry of its kubeconfig file NAME.kubeconfig in kubeconfig_dir (read, no API call)."""
    return dict((seat, stored_expiry(os.path.join(kubeconfig_dir, '%s.kubeconfig' % seat))) for seat in seats)


_SEAT_FILE = re.compile(r'^[a-z0-9-]+$')


def private_folders(kubeconfig_dir, check_mode=False):
    """kubeconfig_dir and the folder above it (the lab's artifacts: passwords, the credential sheet, the admin
    kubeconfig) made, or set, mode 0700. Returns the folders made or set (in check mode, that would be)."""
    return [path for path in (os.path.dirname(os.path.abspath(kubeconfig_dir)), kubeconfig_dir)
            if write.folder(path, 0o700, check_mode)]


def manage_tokens(client, seats, kubeconfig_dir, server, ca_data=None, insecure=False,
                  expiration_seconds=28800, renew_before=3600, secret_name=TOKEN_SECRET_NAME,
                  cluster_name=DEFAULT_CLUSTER_NAME, check_mode=False, now=None, event_end=None):
    """Reuse or issue a token per seat and keep its kubeconfig file current.

    event_end (aware datetime, in the future): a token must last until then; a new one asks for the time until
    seat_event.valid_until(event_end) instead of expiration_seconds. The API server may issue less (its longest
    token): such seats are listed in short.

    Returns a dict: seats (per seat: name, namespace, kubeconfig, issued, written, reason, expires),
    issued (seat names), written (seat names), short (seat names whose new token ends before event_end),
    tokens (seat -> token; absent for seats whose token would be issued in check mode), changed.
    """
    now = time.time() if now is None else now
    cover_until = None
    if event_end is not None:
        cover_until = event_end.timestamp()
        if cover_until <= now:
            raise ValueError('event_end %s is not in the future' % format_time(cover_until))
        expiration_seconds = max(seat_event.token_seconds(event_end, datetime.datetime.fromtimestamp(now, UTC)),
                                 MIN_EXPIRATION_SECONDS)
    if expiration_seconds < MIN_EXPIRATION_SECONDS:
        raise ValueError('expiration_seconds must be at least %d (10 minutes), got %d'
                         % (MIN_EXPIRATION_SECONDS, expiration_seconds))
    if renew_before < 0:
        raise ValueError('renew_before must be 0 or more, got %d' % renew_before)
    for seat in seats:
        if not isinstance(seat, str) or not _SEAT_FILE.match(seat):
            raise ValueError('seat name %r is not a DNS-1123 label' % (seat,))
    folders = private_folders(kubeconfig_dir, check_mode)

    def one(seat):
        """(entry, token) of one seat; token None when none is known (check mode)."""
        namespace = seat
        # The seat's account its Namespace records (seat_model.recorded_account).
        namespace_obj = client.get('/api/v1/namespaces/%s' % namespace, missing_ok=True)
        account = recorded_account(namespace_obj or {'metadata': {'name': seat}})
        path = os.path.join(kubeconfig_dir, '%s.kubeconfig' % seat)
        stored_text = read_text(path)
        stored = kubeconfig_token(stored_text)
        secret = client.get('/api/v1/namespaces/%s/secrets/%s' % (namespace, secret_name), missing_ok=True)
        sa = client.get('/api/v1/namespaces/%s/serviceaccounts/%s' % (namespace, account), missing_ok=True)
        entry = {'name': seat, 'namespace': namespace, 'kubeconfig': path, 'issued': False, 'written': False}
        if secret is None or sa is None:
            missing = 'Secret %s/%s' % (namespace, secret_name) if secret is None else 'ServiceAccount %s/%s' % (namespace, account)
            if not check_mode:
                raise K8sError('%s does not exist: apply the seat objects (workshop_users kubernetes tasks) first.' % missing)
            entry.update(issued=True, written=True, reason='%s does not exist yet' % missing, expires=None)
            return entry, None
        secret_uid = (secret.get('metadata') or {}).get('uid')
        sa_uid = (sa.get('metadata') or {}).get('uid')
        reuse, reason, expires = token_decision(stored, now, namespace, account, sa_uid, secret_name, secret_uid,
                                                renew_before, cover_until)
        token = stored if reuse else None
        if not reuse:
            entry['issued'] = True
            if not check_mode:
                response = client.request(
                    'POST', '/api/v1/namespaces/%s/serviceaccounts/%s/token' % (namespace, account),
                    body=token_request_body(expiration_seconds, secret_name, secret_uid)) or {}
                token = (response.get('status') or {}).get('token')
                if not token:
                    raise K8sError('The TokenRequest for ServiceAccount %s/%s returned no token.' % (namespace, account))
                try:
                    expires = decode_jwt_payload(token).get('exp')
                except ValueError:
                    expires = None
                entry['short'] = cover_until is not None and isinstance(expires, (int, float)) and expires < cover_until
        entry['reason'] = reason
        entry['expires'] = format_time(expires) if isinstance(expires, (int, float)) else None
        if token is not None:
            content = render_kubeconfig(seat, namespace, server, token, ca_data, insecure, cluster_name)
            if check_mode:
                entry['written'] = not write.file_state(path, content)
            else:
                entry['written'] = write.write_if_changed(path, content)
        else:
            entry['written'] = True
        return entry, token

    result = {'seats': [], 'issued': [], 'written': [], 'short': [], 'tokens': {}, 'folders': folders,
              'changed': bool(folders)}
    # The seats are independent: their reads and TokenRequests go out in parallel (results in seat order).
    for entry, token in parallel_map(one, seats):
        seat = entry['name']
        if token is not None:
            result['tokens'][seat] = token
        for key in ('issued', 'written'):
            if entry[key]:
                result[key].append(seat)
                result['changed'] = True
        if entry.pop('short', False):
            result['short'].append(seat)
        result['seats'].append(entry)
    return result
