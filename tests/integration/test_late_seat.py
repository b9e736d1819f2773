"""A late participant: playbooks/users.yml with one seat more (dralab_seats 73 on the lab of 72), first with --check
(it runs through, says what it would make, and makes nothing, in the cluster or in the artifacts folder), then for
real (the new seat works; the 72 others keep their tokens, kubeconfig files and rows of the credential sheet). The
module removes the late seat again."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from k8s_helpers import SEAT_LABEL, api_from_kubeconfig, delete_namespace
from playbook import SEATS, seat_names

LATE = seat_names(SEATS + 1)[-1]  # user73
LATE_VARS = {"dralab_seats": SEATS + 1}


def seat_files(lab) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((lab.artifacts / "seats").iterdir())}


def artifacts_state(lab) -> dict[str, bytes | None]:
    """Every path of the artifacts folder with its bytes (None for a folder)."""
    return {str(path.relative_to(lab.artifacts)): None if path.is_dir() else path.read_bytes()
            for path in sorted(lab.artifacts.rglob("*"))}


def sheet_rows(lab) -> list[str]:
    return (lab.artifacts / "credentials.csv").read_text().splitlines()


def namespace_exists(api, name: str) -> bool:
    try:
        client.CoreV1Api(api).read_namespace(name)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.fixture(scope="module")
def late(control_plane, workshop):
    """The lab of 72 seats as the other modules know it; afterwards the late seat is gone again (its namespace,
    its kubeconfig file) and users.yml with 72 seats puts the credential sheet and the reader's binding back."""
    before = {"files": seat_files(workshop), "sheet": sheet_rows(workshop)}
    yield workshop, before
    delete_namespace(control_plane.api_client, LATE)
    workshop.seat_kubeconfig(LATE).unlink(missing_ok=True)
    workshop.converge("playbooks/users.yml")
    assert sheet_rows(workshop) == before["sheet"]


def test_check_mode_says_what_a_late_seat_gets_and_makes_nothing(control_plane, late):
    lab, before = late
    artifacts = artifacts_state(lab)
    run = lab.run("playbooks/users.yml", extra_vars=LATE_VARS, check=True)
    # Before the fix: seat_objects' dry run into the missing namespace, 'namespaces "user73" not found'.
    assert run.rc == 0 and run.failed == 0, run.describe()
    assert "not found" not in run.output, run.describe()
    assert run.changed > 0
    changed = run.changed_tasks()
    assert any(name.endswith("Apply the seat objects") for name in changed), changed
    assert any(name.endswith("Issue or reuse the seat tokens and write the seat kubeconfigs") for name in changed), changed
    assert f"new token(s) for: {LATE};" in run.flat, run.describe()
    assert not namespace_exists(control_plane.api_client, LATE)
    assert seat_files(lab) == before["files"]
    assert sheet_rows(lab) == before["sheet"]
    # Nothing on the controller either: the artifacts folder (sheet, cards, kubeconfigs, passwords) is the same bytes.
    assert artifacts_state(lab) == artifacts


def test_a_late_seat_is_added_without_touching_the_others(control_plane, late):
    lab, before = late
    run = lab.converge("playbooks/users.yml", extra_vars=LATE_VARS)
    # Only the late seat got a token; the others' kubeconfig files are the same bytes.
    assert f"new token(s) for: {LATE};" in run.flat, run.describe()
    files = seat_files(lab)
    assert sorted(files) == sorted(list(before["files"]) + [f"{LATE}.kubeconfig"])
    assert {name: text for name, text in files.items() if name != f"{LATE}.kubeconfig"} == before["files"]
    rows = sheet_rows(lab)
    assert rows[:-1] == before["sheet"] and rows[-1].startswith(f"{LATE},")
    namespace = client.CoreV1Api(control_plane.api_client).read_namespace(LATE)
    assert namespace.metadata.labels[SEAT_LABEL] == LATE
    api = api_from_kubeconfig(lab.seat_kubeconfig(LATE))
    try:
        client.ResourceV1Api(api).list_namespaced_resource_claim(LATE)
    finally:
        api.close()
    # The playbook says where the sheet and the cards are.
    assert str(lab.artifacts / "credentials.csv") in run.flat and str(lab.artifacts / "seat-cards.html") in run.flat
    cards = (lab.artifacts / "seat-cards.html").read_text()
    assert f'data-seat="{LATE}"' in cards
    # A second run with the late seat changes nothing.
    again = lab.converge("playbooks/users.yml", extra_vars=LATE_VARS)
    assert again.changed == 0, again.changed_tasks()
