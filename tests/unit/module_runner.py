# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run one of the collection's modules as Ansible runs it: in a Python process of its own, its arguments in a JSON
file ({"ANSIBLE_MODULE_ARGS": ...}, read by AnsibleModule from the file named on the command line), its result as
JSON on stdout and its exit code.

Nothing of the controller is loaded in that process, so warnings land in the result as they do under Ansible.
A module without API access runs its own main(). A module that talks to the Kubernetes API has no server in the
unit tier: its run(module, *extra) is called with the test's fake client and other arguments, passed by pickle;
what the fakes recorded comes back and is copied into the test's objects, so a test can inspect them and reuse
them for the next run.

    code, result = run_module('seat_objects', {'seats': ['user01']})
    code, result = run_module('dra_health', {}, FakeClient('healthy'), now=NOW)
"""

from __future__ import annotations

import importlib
import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile

UNIT = pathlib.Path(__file__).resolve().parent
REPO = UNIT.parents[1]
MODULES = 'ansible_collections.dralab.workshop.plugins.modules.'


def run_module(name, args, *extra, check_mode=False, diff=False, **kwargs):
    """Run module `name` with `args`; return (exit code, result). extra/kwargs go to its run() after the module."""
    args = dict(args)
    if check_mode:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    with tempfile.TemporaryDirectory(prefix='dralab-module-') as tmp:
        args_file = pathlib.Path(tmp) / 'args.json'
        args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
        state_file = pathlib.Path(tmp) / 'state.pickle'
        state = (extra, kwargs) if extra or kwargs else None  # None: the module's own main()
        state_file.write_bytes(pickle.dumps(state))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / 'collections'), str(UNIT)]))
        proc = subprocess.run([sys.executable, __file__, name, str(args_file), str(state_file)], env=env,
                              capture_output=True, text=True, check=False, timeout=120)
        if state is not None:
            after, _kwargs = pickle.loads(state_file.read_bytes())
            for mine, theirs in zip(extra, after):
                if hasattr(mine, '__dict__'):
                    mine.__dict__.update(theirs.__dict__)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError('module %s printed no JSON result (exit %d):\nstdout: %s\nstderr: %s'
                             % (name, proc.returncode, proc.stdout, proc.stderr)) from None
    # ansible-core 2.19 reports warnings as structured summaries; keep their text.
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    return proc.returncode, result


def _child(name, args_file, state_file):
    """The module's process: AnsibleModule reads args_file (sys.argv[1]) as under Ansible's debug entry point."""
    sys.argv[1:] = [args_file]
    module_code = importlib.import_module(MODULES + name)
    with open(state_file, 'rb') as handle:
        state = pickle.load(handle)
    if state is None:
        module_code.main()
        return
    from ansible.module_utils.basic import AnsibleModule  # pylint: disable=import-outside-toplevel

    extra, kwargs = state
    try:
        module = AnsibleModule(argument_spec=module_code.argspec(), supports_check_mode=True)
        module_code.run(module, *extra, **kwargs)
    finally:
        with open(state_file, 'wb') as handle:
            pickle.dump((extra, kwargs), handle)


if __name__ == '__main__':
    _child(*sys.argv[1:4])
