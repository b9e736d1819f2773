# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every seat gets a password of its own: the role's lookup expressions, evaluated as its tasks do; in check mode
(users.yml --check, a late seat included) they write nothing on the controller."""

from __future__ import annotations

import stat

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from passlib.hash import sha512_crypt

from render import REPO, role_defaults, trusted

TASKS = REPO / "roles" / "workshop_users" / "tasks"
SEATS = ("user01", "user02", "user03", "user04")


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


def templar(artifacts, seats=SEATS, **extra):
    variables = dict(role_defaults("workshop_users"))
    variables.update(workshop_users_seat_names=list(seats), workshop_users_artifacts_dir=str(artifacts),
                     workshop_users_login_hosts=["cp1"])
    variables.update(trusted(extra))
    return Templar(loader=DataLoader(), variables=variables)


def sheet_passwords(artifacts, seats=SEATS, **extra):
    task = find_task(task_file("credentials.yml"), "Write the credential sheet")
    return templar(artifacts, seats, **extra).template(trust_as_template(task["vars"]["workshop_users_passwords"]))


def account_hashes(artifacts, seats=SEATS, **extra):
    tasks = task_file("linux.yml")
    block = find_task(tasks, "Create the seat accounts on this login host")
    hashing = find_task(tasks, "Hash the seat passwords from the password store")
    terms = templar(artifacts, seats, **extra).template(trust_as_template(block["vars"]["workshop_users_password_terms"]))
    expression = hashing["ansible.builtin.set_fact"]["workshop_users_password_hashes"]
    return templar(artifacts, seats, workshop_users_password_terms=terms, **extra).template(trust_as_template(expression))


def folder_state(folder):
    """Every path under folder with its bytes (None for a folder), and the folder's own modification time."""
    return ({str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
             for path in sorted(folder.rglob("*"))}, folder.stat().st_mtime_ns)


def test_each_seat_has_its_own_password_file(tmp_path):
    passwords = sheet_passwords(tmp_path)
    assert sorted(passwords) == list(SEATS)
    assert len(set(passwords.values())) == len(SEATS), "two seats share a password"
    assert all(len(p) == 14 and p.isalnum() for p in passwords.values())
    store = tmp_path / "passwords"
    assert sorted(p.name for p in store.iterdir()) == list(SEATS)
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


def test_check_mode_writes_no_password_file_for_a_late_seat(tmp_path):
    """users.yml -e dralab_seats=5 --check: user05's password is not made, the others read as a real run reads them."""
    hashes, passwords = account_hashes(tmp_path), sheet_passwords(tmp_path)
    before = folder_state(tmp_path)
    late = SEATS + ("user05",)
    checked_hashes = account_hashes(tmp_path, late, ansible_check_mode=True)
    checked_passwords = sheet_passwords(tmp_path, late, ansible_check_mode=True)
    assert folder_state(tmp_path) == before, "check mode wrote on the controller"
    assert not (tmp_path / "passwords" / "user05").exists()
    # The late seat gets no password and no hash (the user task reports a change); the others are unchanged.
    assert checked_hashes == {**hashes, "user05": "!"}
    assert checked_passwords == {**passwords, "user05": "!"}
    # The real run then makes user05's password and keeps the others.
    assert account_hashes(tmp_path, late) | {"user05": "!"} == checked_hashes
    assert (tmp_path / "passwords" / "user05").exists()


def test_check_mode_on_a_fresh_controller_creates_no_folder(tmp_path):
    artifacts = tmp_path / "artifacts"
    assert account_hashes(artifacts, ansible_check_mode=True) == dict.fromkeys(SEATS, "!")
    assert sheet_passwords(artifacts, ansible_check_mode=True) == dict.fromkeys(SEATS, "!")
    assert not artifacts.exists()


def test_check_mode_reports_a_password_the_run_would_salt(tmp_path):
    """A stored password without its salt (the sheet made it before any login host): the real run adds the salt."""
    passwords = sheet_passwords(tmp_path)
    before = folder_state(tmp_path)
    assert account_hashes(tmp_path, ansible_check_mode=True) == dict.fromkeys(SEATS, "!")
    assert sheet_passwords(tmp_path, ansible_check_mode=True) == passwords
    assert folder_state(tmp_path) == before
    hashes = account_hashes(tmp_path)
    assert all(sha512_crypt.verify(passwords[seat], hashes[seat]) for seat in SEATS)
