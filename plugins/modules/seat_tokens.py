#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_tokens
short_description: Issue time-bound tokens and kubeconfigs for workshop seats
version_added: 0.1.0
description:
  - For every seat C(NAME) in O(seats), makes sure the file C(O(kubeconfig_dir)/NAME.kubeconfig) holds a kubeconfig
    for the ServiceAccount C(NAME) in the namespace C(NAME), with a token that is still valid.
  - A token already stored in that file is reused when its payload (decoded, not verified) names the seat's
    namespace and ServiceAccount, the ServiceAccount's current uid, the Secret O(secret_name) and that Secret's
    current uid, and when it expires later than now plus O(renew_before).
  - Otherwise the module requests a new token (TokenRequest, C(POST .../serviceaccounts/NAME/token)) that lives
    O(expiration_seconds) and is bound to the Secret O(secret_name) of the seat's namespace, so deleting that Secret
    revokes it.
  - With O(event_end), a stored token is reused exactly when it lasts until O(event_end), and a new one lasts until
    O(event_end) plus 15 minutes, whenever the module runs (the day before the event included). When the API server
    issues less (its C(--service-account-max-token-expiration)), the module warns and lists the seats in RV(short).
  - A kubeconfig file is written (mode C(0600), atomically) only when its content changes; the module reports a
    change only when it issued a token, wrote a file or made or set a folder (RV(folders)).
  - The API server URL and CA in the seat kubeconfigs come from the admin kubeconfig (O(kubeconfig), O(context)),
    or from O(host) and O(ca_cert); O(api_server) overrides the URL.
  - The namespace, ServiceAccount and Secret must exist (see M(dralab.workshop.seat_objects)); in check mode a missing
    one only means that a token would be issued.
author: dralab.workshop maintainers (@dralab)
options:
  seats:
    description:
      - Names of the seats. Each is its namespace and its ServiceAccount name.
    type: list
    elements: str
    required: true
  kubeconfig_dir:
    description:
      - Folder on the host running the module where the seat kubeconfigs are kept, one C(NAME.kubeconfig) per seat.
      - It and the folder above it (the lab's artifacts) are made, or set, mode C(0700); they hold the seats'
        credentials.
    type: path
    required: true
  expiration_seconds:
    description:
      - Lifetime of a newly issued token, in seconds (at least 600). The API server may shorten it
        (C(--service-account-max-token-expiration)).
      - A changed value applies to tokens issued from then on; valid tokens are kept until they are renewed.
    type: int
    default: 28800
  renew_before:
    description:
      - A stored token that expires within this many seconds is replaced. The margin is capped at half the
        token's own lifetime, so a rerun right after issuing never renews.
    type: int
    default: 3600
  secret_name:
    description:
      - Name of the Secret, in each seat namespace, that the tokens are bound to.
    type: str
    default: dralab-seat-token
  event_end:
    description:
      - When the event ends (C(dralab_event_end)), RFC 3339 with a UTC offset, in the future; empty for none.
      - Given, it replaces O(expiration_seconds) and O(renew_before) (see the description).
    type: str
    default: ''
  api_server:
    description:
      - API server URL written into the seat kubeconfigs, when the seats reach the API server at another address
        than the admin kubeconfig uses. Empty to use the admin one.
    type: str
    default: ''
  cluster_name:
    description:
      - Name of the cluster entry in the seat kubeconfigs; contexts are named C(NAME@cluster_name).
    type: str
    default: dralab
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports which tokens would be issued and which files would be written, without requesting or writing any.
  diff_mode:
    support: full
    details:
      - The diff lists, per seat, the token expiry before and after; it never contains a token.
notes:
  - Run the task with C(no_log=true), because the result contains the tokens.
  - The user of the admin kubeconfig needs C(get) on secrets and serviceaccounts and C(create) on
    serviceaccounts/token in the seat namespaces.
  - Tokens are bearer credentials; anyone with a seat kubeconfig acts as that seat until the token expires or is
    revoked (delete the seat's Secret or ServiceAccount, as the lab_reset role does with credential rotation).
seealso:
  - module: dralab.workshop.seat_objects
  - name: TokenRequest API
    description: Kubernetes documentation of bound service account tokens.
    link: https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-request-v1/
"""

EXAMPLES = r"""
- name: Issue or reuse the seat tokens
  dralab.workshop.seat_tokens:
    kubeconfig: ~/.dralab/admin.conf
    seats: "{{ 72 | dralab.workshop.seat_names }}"
    kubeconfig_dir: ~/.dralab/seats
    expiration_seconds: "{{ '8h' | dralab.workshop.duration_seconds }}"
  no_log: true
  register: seat_tokens

- name: Show which seats got a new token
  ansible.builtin.debug:
    msg: "{{ seat_tokens.issued }}"
"""

RETURN = r"""
seats:
  description: Per seat, what was done.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Seat name.
      type: str
    namespace:
      description: Seat namespace.
      type: str
    kubeconfig:
      description: Path of the seat kubeconfig.
      type: str
    issued:
      description: Whether a new token was (or, in check mode, would be) issued.
      type: bool
    written:
      description: Whether the kubeconfig file was (or would be) written.
      type: bool
    reason:
      description: Why the stored token was reused or replaced.
      type: str
    expires:
      description: Expiry of the seat's token (UTC, ISO 8601), or null when unknown.
      type: str
  sample:
    - name: user01
      namespace: user01
      kubeconfig: /home/instructor/.dralab/seats/user01.kubeconfig
      issued: false
      written: false
      reason: the stored token is valid until 2026-10-28T18:00:00Z
      expires: '2026-10-28T18:00:00Z'
issued:
  description: Seats that got a new token.
  returned: success
  type: list
  elements: str
written:
  description: Seats whose kubeconfig file was written.
  returned: success
  type: list
  elements: str
folders:
  description: O(kubeconfig_dir) and the folder above it, where they were made or set to mode C(0700).
  returned: success
  type: list
  elements: str
short:
  description: Seats whose new token ends before O(event_end), because the API server issued less than asked.
  returned: success
  type: list
  elements: str
tokens:
  description: Seat name to token. Absent for seats whose token would be issued in check mode.
  returned: success
  type: dict
api_server:
  description: API server URL in the seat kubeconfigs.
  returned: success
  type: str
  sample: https://10.0.0.10:6443
ca_data:
  description: Base64 PEM of the CA in the seat kubeconfigs, or null.
  returned: success
  type: str
"""

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.dralab.workshop.plugins.module_utils.seat import tokens as seat_tokens
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, auth_argspec, run_with_client
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import TOKEN_SECRET_NAME
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration, parse_event_time


def argspec():
    spec = auth_argspec()
    spec.update(
        seats=dict(type='list', elements='str', required=True),
        kubeconfig_dir=dict(type='path', required=True),
        expiration_seconds=dict(type='int', default=parse_duration(lab_settings.default('dralab_event_duration'))),
        renew_before=dict(type='int', default=3600),
        secret_name=dict(type='str', default=TOKEN_SECRET_NAME),
        api_server=dict(type='str', default=''),
        cluster_name=dict(type='str', default=seat_tokens.DEFAULT_CLUSTER_NAME),
        event_end=dict(type='str', default=lab_settings.default('dralab_event_end')),
    )
    return spec


def short_tokens_warning(result, event_end):
    """What to do when the API server cut the new seat tokens short of the event's end."""
    expires = sorted(seat['expires'] for seat in result['seats'] if seat['name'] in result['short'] and seat['expires'])
    return ('The API server issued %d seat token(s) that expire at %s, before the event ends (%s): its longest token '
            '(--service-account-max-token-expiration) is shorter than the time until then. It is set from '
            'dralab_event_start, dralab_event_end and dralab_event_lead when the cluster is built: run '
            'playbooks/users.yml again within dralab_event_lead of the start, or rebuild the cluster with the event '
            'window set.' % (len(result['short']), expires[0] if expires else 'an unknown time', event_end))


def run(module, client, now=None):
    params = module.params
    try:
        server, ca_data, insecure = k8s_client.cluster_endpoint(params)
        result = seat_tokens.manage_tokens(
            client, params['seats'], params['kubeconfig_dir'], server, ca_data=ca_data, insecure=insecure,
            expiration_seconds=params['expiration_seconds'], renew_before=params['renew_before'],
            secret_name=params['secret_name'], cluster_name=params['cluster_name'],
            check_mode=module.check_mode, now=now, event_end=parse_event_time(params['event_end']))
    except (K8sError, ValueError) as exc:
        module.fail_json(msg='Cannot issue the seat tokens: %s' % exc)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot write the seat kubeconfigs in %s: %s' % (params['kubeconfig_dir'], exc))
    result['api_server'] = server
    result['ca_data'] = ca_data
    if result['short']:
        module.warn(short_tokens_warning(result, params['event_end']))
    if module._diff and result['changed']:
        before = ['%s: missing or not private' % folder for folder in result['folders']]
        after = ['%s: folder, mode 0700' % folder for folder in result['folders']]
        for seat in result['seats']:
            if seat['issued'] or seat['written']:
                before.append('%s: %s' % (seat['name'], seat['reason']))
                after.append('%s: %s' % (seat['name'], 'new token' if seat['issued'] else 'kubeconfig rewritten'))
        result['diff'] = {'before': '\n'.join(before) + '\n', 'after': '\n'.join(after) + '\n',
                          'before_header': 'seat tokens', 'after_header': 'seat tokens'}
    module.exit_json(**result)


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
