# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a login host's seat work reads before it changes anything, in one module run (module seat_host_facts):
its accounts and the seat group's members in ansible.builtin.getent's fact format, and which programs it lacks."""

from __future__ import annotations

import grp
import pwd


def passwd_facts(entries=None):
    """name -> [password, uid, gid, comment, home, shell], as getent database=passwd sets getent_passwd (the first
    entry of a name wins, as getent passwd NAME answers)."""
    facts = {}
    for entry in pwd.getpwall() if entries is None else entries:
        facts.setdefault(entry.pw_name, [entry.pw_passwd, str(entry.pw_uid), str(entry.pw_gid), entry.pw_gecos,
                                         entry.pw_dir, entry.pw_shell])
    return facts


def group_facts(name, lookup=grp.getgrnam):
    """{name: [password, gid, members joined by ',']} as getent database=group key=NAME sets getent_group; {} when
    the group does not exist (fail_key: false)."""
    try:
        entry = lookup(name)
    except KeyError:
        return {}
    return {name: [entry.gr_passwd, str(entry.gr_gid), ','.join(entry.gr_mem)]}


def read(group, programs, find):
    """The facts and the programs of the list that find (a program -> its path, or None: the module's
    get_bin_path) does not find."""
    return {'ansible_facts': {'getent_passwd': passwd_facts(), 'getent_group': group_facts(group)},
            'programs_missing': [program for program in programs if not find(program)]}
