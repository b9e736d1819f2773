"""The collection as an instructor installs it: the built artifact, installed with its dependencies into an empty
collections path, runs its playbooks by name against the integration cluster.

The artifact is built here from the checkout (`make dist` does the same), installed with `ansible-galaxy
collection install --offline` (the dependency collections come from the `ansible` package already on this
controller), and run from the lab's folder with an empty ansible.cfg: no checkout, no collections/ link, stock
Ansible settings (ansible.builtin.linear, no Mitogen).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from playbook import REPO

GALAXY = Path(sys.executable).with_name("ansible-galaxy")


@pytest.fixture(scope="module")
def installed(workshop, tmp_path_factory) -> Path:
    """A collections path holding only dralab.workshop, installed from the artifact built from this checkout."""
    scratch = tmp_path_factory.mktemp("installed")
    subprocess.run([str(GALAXY), "collection", "build", "--force", "--output-path", str(scratch / "dist"), str(REPO)],
                   check=True, capture_output=True, text=True)
    [tarball] = (scratch / "dist").glob("dralab-workshop-*.tar.gz")
    path = scratch / "collections"
    env = workshop.installed_env(path)
    result = subprocess.run([str(GALAXY), "collection", "install", "--offline", "-p", str(path), str(tarball)],
                            env=env, cwd=workshop.dir, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"[installed] {tarball.name} ({tarball.stat().st_size // 1024} KiB) -> {path}", file=sys.stderr)
    return path


def test_the_installed_copy_is_the_only_dralab_workshop(workshop, installed):
    listing = subprocess.run([str(GALAXY), "collection", "list", "--format", "json", "dralab.workshop"],
                             env=workshop.installed_env(installed), cwd=workshop.dir, capture_output=True,
                             text=True, check=True).stdout
    found = {folder: list(collections) for folder, collections in json.loads(listing).items() if collections}
    assert found == {str(installed / "ansible_collections"): ["dralab.workshop"]}, found
    # Its dependencies resolved from this controller's collections, as requirements.yml names them (the listing
    # exits 0 for a collection it does not find: what it lists is read).
    for name in ("kubernetes.core", "community.general", "ansible.posix"):
        listing = subprocess.run([str(GALAXY), "collection", "list", "--format", "json", name],
                                 env=workshop.installed_env(installed), cwd=workshop.dir, capture_output=True,
                                 text=True, check=True).stdout
        assert any(name in collections for collections in json.loads(listing).values()), (name, listing)


def test_users_playbook_by_name_finds_the_converged_lab(workshop, installed):
    run = workshop.converge("dralab.workshop.users", installed=installed)
    assert run.changed == 0, f"changed tasks: {run.changed_tasks()}\n{run.describe()}"


def test_an_instructors_playbook_imports_the_collections(workshop, installed):
    own = workshop.dir / "my-health.yml"
    own.write_text("---\n- name: The lab's health, from the installed collection\n"
                   "  ansible.builtin.import_playbook: dralab.workshop.health\n")
    run = workshop.converge(own, installed=installed)
    assert "Check DRA devices and claims with dra_health" in run.stdout, run.describe()
