# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_host_facts reads as ansible.builtin.getent reports: the same getent_passwd and getent_group facts for this
machine's own accounts and groups, and which programs a host lacks."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess

from ansible_collections.dralab.workshop.plugins.module_utils.seat import host_facts


def getent(*argv):
    """What `getent` prints, as ansible.builtin.getent splits it: name -> the other fields."""
    out = subprocess.run(["getent", *argv], capture_output=True, text=True, check=False).stdout
    facts = {}
    for line in out.splitlines():
        fields = line.split(":")
        facts.setdefault(fields[0], fields[1:])
    return facts


def test_the_accounts_are_getent_passwd():
    assert host_facts.passwd_facts() == getent("passwd")


def test_a_group_is_getent_group_and_a_missing_one_is_nothing():
    name = grp.getgrgid(os.getgid()).gr_name
    assert host_facts.group_facts(name) == {name: getent("group", name)[name]}
    assert host_facts.group_facts("dralab-no-such-group") == {}


def test_members_are_joined_as_getent_prints_them():
    entry = grp.struct_group(("workshop", "x", 1500, ["user01", "user02"]))
    assert host_facts.group_facts("workshop", lookup=lambda name: entry) == {"workshop": ["x", "1500", "user01,user02"]}
    empty = grp.struct_group(("workshop", "x", 1500, []))
    assert host_facts.group_facts("workshop", lookup=lambda name: empty) == {"workshop": ["x", "1500", ""]}


def test_the_first_entry_of_a_name_wins():
    first = pwd.struct_passwd(("user01", "x", 1001, 1001, "seat", "/home/user01", "/bin/bash"))
    second = pwd.struct_passwd(("user01", "x", 2001, 2001, "ldap", "/srv/user01", "/bin/sh"))
    assert host_facts.passwd_facts([first, second]) == {"user01": ["x", "1001", "1001", "seat", "/home/user01",
                                                                   "/bin/bash"]}


def test_read_gives_both_facts_and_the_programs_its_finder_does_not_find():
    found = {"sh": "/bin/sh"}
    result = host_facts.read("dralab-no-such-group", ["sh", "dralab-no-such-program"], found.get)
    assert set(result["ansible_facts"]) == {"getent_passwd", "getent_group"}
    assert result["ansible_facts"]["getent_group"] == {} and "root" in result["ansible_facts"]["getent_passwd"]
    assert result["programs_missing"] == ["dralab-no-such-program"]


def test_an_account_named_like_a_seat_but_outside_the_group_is_foreign_and_members_leave_with_their_ids():
    passwd = {"user01": ["x", "1001", "1001", "", "/home/user01", "/bin/bash"],
              "user02": ["x", "1002", "1002", "", "/home/user02", "/bin/bash"],
              "user03": ["x", "1003", "1003", "someone's", "/home/user03", "/bin/bash"],
              "user04": ["x", "1004", "1004", "", "/home/user04", "/bin/bash"]}
    members = host_facts.group_members({"workshop": ["x", "990", "user01,user02,user04"]}, "workshop")
    assert members == ["user01", "user02", "user04"]
    foreign, leaving = host_facts.seat_accounts(passwd, members, ["user03", "user01", "user05"],
                                                ["user02", "user04", "user06"])
    assert foreign == ["user03"] and leaving == {"user02": "1002", "user04": "1004"}
    # An account that is no member never leaves: the role did not make it.
    assert host_facts.seat_accounts(passwd, members, [], ["user03"]) == ([], {})
    assert host_facts.group_members({}, "workshop") == []


def test_read_says_what_the_accounts_mean_for_the_seats():
    result = host_facts.read("dralab-no-such-group", [], {}.get, seats=["root"], leaving=["root"])
    assert result["foreign_accounts"] == ["root"] and result["leaving_accounts"] == {}
