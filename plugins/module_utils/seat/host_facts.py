# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a login host's seat work reads before it changes anything, in one module run (module seat_host_facts):
its accounts and the seat group's members in ansible.builtin.getent's fact format, which programs it lacks, and
what those accounts mean for the seats: an account named like a seat of this host that is no member of the seat
group (another's: never taken over), and the seat accounts that are to go from this host."""

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


def group_members(group_fact, group):
    """The members of group in a getent_group fact (group_facts), as /etc/group lists them (only root changes it)."""
    return [name for name in ((group_fact.get(group) or ['', '', ''])[2] or '').split(',') if name]


def seat_members(names, members, entry):
    """name -> entry(name) for the names of the list that are members of the seat group and have an account (entry
    gives None for a name without one): the seat accounts, the only ones the role hands over or removes."""
    member = set(members)
    found = {}
    for name in names:
        account = entry(name) if name in member else None
        if account is not None:
            found[name] = account
    return found


def seat_accounts(passwd, members, seats, leaving):
    """(foreign, leaving_accounts): the names of seats (this host's) whose account exists and is no member (in seat
    order), and {name: user ID} of the seat accounts (seat_members) named in leaving: the ones to remove."""
    member = set(members)
    foreign = [name for name in seats if name in passwd and name not in member]
    return foreign, dict((name, fields[1]) for name, fields in seat_members(leaving, members, passwd.get).items())


def read(group, programs, find, seats=(), leaving=()):
    """The facts, the programs of the list that find (a program -> its path, or None: the module's get_bin_path)
    does not find, and seat_accounts of seats and leaving."""
    passwd, group_fact = passwd_facts(), group_facts(group)
    foreign, leaving_accounts = seat_accounts(passwd, group_members(group_fact, group), seats, leaving)
    return {'ansible_facts': {'getent_passwd': passwd, 'getent_group': group_fact},
            'programs_missing': [program for program in programs if not find(program)],
            'foreign_accounts': foreign, 'leaving_accounts': leaving_accounts}
