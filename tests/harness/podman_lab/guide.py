"""What to tell the instructor once the lab runs: how a seat logs in, where the GPU board is, the shell exports
for using podman and ssh on the lab by hand."""

from __future__ import annotations

import csv
import json
import shlex
from pathlib import Path

from podman_lab.paths import artifacts_dir, containers_conf, known_hosts, ssh_key
from podman_lab.podman import write_containers_conf
from podman_lab.topology import LabError


def seats_help() -> None:
    """How a participant logs in: the first seat of the credential sheet, the admin kubeconfig."""
    sheet = artifacts_dir() / "credentials.csv"
    if not sheet.is_file():
        raise LabError(f"no credential sheet at {sheet}: run playbooks/site.yml on the lab first (make lab)")
    with open(sheet, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise LabError(f"{sheet} lists no seats (dralab_seats is 0?)")
    first = rows[0]
    host = first["login_address"]
    print(f"{len(rows)} seat(s); every password is on the credential sheet {sheet} (mode 0600).")
    print(f"Log in as a participant, e.g. {first['seat']} (password {first['password']}):")
    print(f"  ssh {first['seat']}@{host}")
    print("  kubectl get resourceslices")
    print(f"As the instructor: export KUBECONFIG={artifacts_dir() / 'admin.conf'}")
    board_help()


def board_help() -> None:
    """Where the GPU board answers and where its token is (board.yml's board/board.json)."""
    info_path = artifacts_dir() / "board" / "board.json"
    if not info_path.is_file():
        print("GPU board: not deployed; run it with "
              "`ansible-playbook -i inventories/local/hosts.yml playbooks/board.yml` (site.yml does not yet).")
        return
    info = json.loads(info_path.read_text())
    token_file = Path(info["token_file"])
    if not info.get("url"):
        raise LabError(f"{info_path} names no board URL (no control_plane host runs the board?)")
    token = token_file.read_text().strip() if token_file.is_file() else ""
    print(f"GPU board (projector, no names or passwords): {info['url']}")
    print(f"Instructor's board: {info['instructor_url']}?token={token or 'TOKEN'}")
    print(f"  the token is in {token_file} (mode 0600); seat cards to print: {artifacts_dir() / 'seat-cards.html'}")


def env_exports() -> None:
    write_containers_conf()
    print(f"export CONTAINERS_CONF={shlex.quote(str(containers_conf()))}")
    print(f"export DRALAB_LAB_SSH_KEY={shlex.quote(str(ssh_key()))}")
    print(f"export DRALAB_LAB_KNOWN_HOSTS={shlex.quote(str(known_hosts()))}")
