# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every seat gets a password of its own: the role's lookup expressions, evaluated as its tasks do."""

from __future__ import annotations

import stat

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from passlib.hash import sha512_crypt

from render import REPO, role_defaults, trusted

TASKS = REPO / "roles" / "workshop_users" / "tasks"
SEATS = ["user01", "user02", "user03", "user04"]


def task_file(name):
    return DataLoader().load_from_file(str(TASKS / name))


def walk(tasks):
    for task in tasks:
        yield task
        yield from walk(task.get("block", []))


def find_task(tasks, name):
    found = [task for task in walk(tasks) if task.get("name") == name]
    assert found, f"no task named {name!r}"
    return found[0]


def templar(artifacts, **extra):
    variables = dict(role_defaults("workshop_users"))
    variables.update(workshop_users_seat_names=SEATS, workshop_users_artifacts_dir=str(artifacts),
                     workshop_users_login_hosts=["cp1"])
    variables.update(trusted(extra))
    return Templar(loader=DataLoader(), variables=variables)


def sheet_passwords(artifacts):
    task = find_task(task_file("credentials.yml"), "Write the credential sheet")
    return templar(artifacts).template(trust_as_template(task["vars"]["workshop_users_passwords"]))


def account_hashes(artifacts):
    tasks = task_file("linux.yml")
    block = find_task(tasks, "Create the seat accounts on this login host")
    hashing = find_task(tasks, "Hash the seat passwords from the password store")
    terms = templar(artifacts).template(trust_as_template(block["vars"]["workshop_users_password_terms"]))
    expression = hashing["ansible.builtin.set_fact"]["workshop_users_password_hashes"]
    return templar(artifacts, workshop_users_password_terms=terms).template(trust_as_template(expression))


def test_each_seat_has_its_own_password_file(tmp_path):
    passwords = sheet_passwords(tmp_path)
    assert sorted(passwords) == SEATS
    assert len(set(passwords.values())) == len(SEATS), "two seats share a password"
    assert all(len(p) == 14 and p.isalnum() for p in passwords.values())
    store = tmp_path / "passwords"
    assert sorted(p.name for p in store.iterdir()) == SEATS
    for seat in SEATS:
        assert (store / seat).read_text().split()[0] == passwords[seat]
        assert not stat.S_IMODE((store / seat).stat().st_mode) & 0o077, "password file readable by others"


def test_account_hashes_match_the_sheet_and_stay_put(tmp_path):
    hashes = account_hashes(tmp_path)
    passwords = sheet_passwords(tmp_path)
    for seat in SEATS:
        assert hashes[seat].startswith("$6$")
        assert sha512_crypt.verify(passwords[seat], hashes[seat]), seat
        for other in SEATS:
            if other != seat:
                assert not sha512_crypt.verify(passwords[other], hashes[seat])
    # The salt is kept in the store: the same hash on the next run (no change reported).
    assert account_hashes(tmp_path) == hashes
    assert sheet_passwords(tmp_path) == passwords
