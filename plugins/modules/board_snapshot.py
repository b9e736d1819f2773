#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: board_snapshot
short_description: Write the lab's GPU board as a static HTML page (an after-action record)
version_added: 0.1.0
description:
  - Reads the objects C(dralab.workshop.dra_health) reads (DeviceClasses, ResourceSlices, ResourceClaims, Pods,
    Nodes, Namespaces and C(FailedScheduling) Events) and writes the page of the instructor's live board
    (C(dralab-board), role C(dralab.workshop.lab_board)) as one self-contained HTML file, the board embedded and
    no connection to anything; ages and leases are shown as of the snapshot's time.
  - Per node, one tile per device (free, allocated, in use by a running pod, tainted) with its seat, claim, age
    and lease left, and capacity used and free for shared devices; the waiting claims with the explainer's
    sentence; the problems of C(dralab.workshop.dra_health); a seats table (holds, pending, last activity). The
    seat of a namespace is read from the Namespace's labels.
  - Beside the page, the board's state is kept as JSON (the same name ending in C(.json), for example
    C(board-snapshot.json)), that is the lab's devices, claims, problems and seats with absolute times, from which
    the page writes its ages.
  - Both files are written with mode C(0600). They are only rewritten when the lab's state differs from the one the
    state file holds, apart from its time, so a second run on an unchanged lab reports no change (ages that moved
    on are no change).
  - No names of people are written (the board's seat -> person mapping stays with the live board).
author: dralab.workshop maintainers (@dralab)
requirements:
  - cel-python >= 0.5.0, < 0.6 (evaluates the CEL selectors of DeviceClasses and claims)
options:
  dest:
    description:
      - Path of the HTML file to write; a missing folder is made (0700).
      - The board's state is written beside it, its name ending in C(.json) instead of C(.html).
    type: path
    required: true
  driver:
    description:
      - DRA driver whose devices are the tiles.
    type: str
    default: gpu.example.com
  expected_devices_per_node:
    description:
      - Devices each node should publish (fewer is a problem, as in C(dralab.workshop.dra_health)).
    type: int
    default: 8
  lease_max:
    description:
      - The lab's longest lease (C(8h), C(90m) or seconds); a lease ends at the claim's
        C(dralab.workshop/lease-expires), at the latest this long after the claim's creation.
    type: raw
    default: 8h
  stale_claim_age:
    description:
      - An allocated claim that no pod uses is a problem once it is older than this.
    type: raw
    default: 1h
  title:
    description:
      - Title of the page.
    type: str
    default: DRA lab
extends_documentation_fragment:
  - dralab.workshop.k8s_auth
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details: Reports whether the files would change and writes nothing.
  diff_mode:
    support: none
notes:
  - The user needs C(list) permission on deviceclasses, resourceslices and resourceclaims (C(resource.k8s.io)),
    pods, nodes, namespaces and events.
seealso:
  - module: dralab.workshop.dra_health
"""

EXAMPLES = r"""
- name: Keep the board of the lab as it is now
  dralab.workshop.board_snapshot:
    kubeconfig: ~/.dralab/admin.conf
    dest: ~/.dralab/board-snapshot.html
"""

RETURN = r"""
dest:
  description: The page written (its state is beside it, ending in C(.json)).
  returned: always
  type: str
  sample: /home/instructor/.dralab/board-snapshot.html
summary:
  description: Counts of the board (devices per state, pending claims, problems, seats).
  returned: always
  type: dict
  sample: {devices: 24, devices_free: 21, devices_in_use: 2, devices_allocated: 1, devices_tainted: 0, pending: 0,
           errors: 0, warnings: 0, seats: 72, seats_holding: 3}
generated:
  description: Time of the board in the files (RFC 3339); an unchanged lab keeps the earlier time.
  returned: always
  type: str
  sample: "2026-12-01T10:00:00Z"
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import snapshot as board_file
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_types
from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.client import K8sError, auth_argspec, run_with_client


def argspec():
    spec = auth_argspec()
    spec.update(
        dest=dict(type='path', required=True),
        driver=dict(type='str', default=DEFAULT_DRIVER),
        expected_devices_per_node=dict(type='int', default=lab_settings.default('dralab_devices_per_node')),
        lease_max=dict(type='raw', default=lab_settings.default('dralab_lease_max')),
        stale_claim_age=dict(type='raw', default='1h'),
        title=dict(type='str', default='DRA lab'),
    )
    return spec


def run(module, client, now=None):
    params = module.params
    if not cel_types.HAS_CEL:
        module.fail_json(msg=missing_required_lib(cel_types.CEL_LIBRARY), exception=cel_types.CEL_IMPORT_ERROR)
    for option in ('lease_max', 'stale_claim_age'):
        try:
            parse_duration(params[option])
        except ValueError as exc:
            module.fail_json(msg='Invalid %s: %s.' % (option, exc))
    try:
        data = dra_collect.collect(client)
    except K8sError as exc:
        module.fail_json(msg=str(exc))
    for warning in data.pop('warnings'):
        module.warn(warning)
    board = board_build.build(data, now=now, board=dict(lease_max=params['lease_max'], title=params['title']),
                              driver=params['driver'], expected_devices_per_node=params['expected_devices_per_node'],
                              stale_claim_age=params['stale_claim_age'])['board']
    try:
        module.exit_json(**board_file.keep(board, params['dest'], check_mode=module.check_mode))
    except (IOError, OSError) as exc:
        module.fail_json(msg=board_file.cannot_write(params['dest'], exc, 'dest'))


def main():
    run_with_client(argspec(), run)


if __name__ == '__main__':
    main()
