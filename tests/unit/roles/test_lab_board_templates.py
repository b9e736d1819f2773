# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/lab_board: the board's unit (hardened, bound to its host's address), the seat cards, the defaults."""

from __future__ import annotations

import re

from render import evaluate, parse_unit, render_role_template, role_vars

HOSTS = {"groups": {"control_plane": ["cp1"]}, "hostvars": {"cp1": {"ansible_host": "10.89.42.11"}}}
SHEET = [
    {"seat": "user01", "login_host": "cp1", "login_address": "10.89.42.11", "password": "Pw<b>&1", "namespace": "user01"},
    {"seat": "user02", "login_host": "", "login_address": "", "password": "pw2", "namespace": "user02"},
    {"seat": "user03", "login_host": "login1", "login_address": "10.89.42.14", "password": "pw3", "namespace": "user03"},
]


def test_unit():
    unit = parse_unit(render_role_template("lab_board", "dralab-board.service.j2", dict(HOSTS)))
    service = dict(unit["Service"])
    assert service["User"] == "dralab-board" and service["EnvironmentFile"] == "/etc/dralab/dralab-board.env"
    assert service["ExecStart"] == (
        "/opt/dralab/can-has-gpu/bin/dralab-board --kubeconfig /etc/dralab/dralab-board.kubeconfig "
        "--listen 10.89.42.11:8088 --people /etc/dralab/dralab-board-people.json --driver gpu.example.com "
        "--devices-per-node 8 --lease-max 8h --stale-claim-age 1h --title \"DRA lab\" --streams-per-client 20 "
        "--streams-max 600 --streams-max-instructor 50")
    # What the board may take from its host: files above both stream caps together, memory, tasks.
    assert int(service["LimitNOFILE"]) > 600 + 50 + 100
    assert service["MemoryMax"] == "512M" and service["TasksMax"] == "64"
    assert service["Restart"] == "always" and dict(unit["Install"])["WantedBy"] == "multi-user.target"
    # Hardened as the lease reaper's unit is.
    reaper = dict(parse_unit(render_role_template("participant_tool", "dralab-lease-reaper.service.j2"))["Service"])
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
                "CapabilityBoundingSet", "RestrictAddressFamilies", "LockPersonality"):
        assert service[key] == reaper[key], key
    titled = dict(parse_unit(render_role_template("lab_board", "dralab-board.service.j2", dict(
        HOSTS, lab_board_title="100% GPUs", lab_board_port=9000)))["Service"])
    assert '--title "100%% GPUs" ' in titled["ExecStart"] and "--listen 10.89.42.11:9000 " in titled["ExecStart"]


def test_the_url_follows_the_host():
    assert evaluate("lab_board", "lab_board_url | trim", dict(HOSTS)) == "http://10.89.42.11:8088/"
    assert evaluate("lab_board", "lab_board_url | trim", {"groups": {}}) == ""
    ipv6 = {"groups": {"control_plane": ["cp1"]}, "hostvars": {"cp1": {"ansible_host": "fd00::11"}}}
    assert evaluate("lab_board", "lab_board_url | trim", ipv6) == "http://[fd00::11]:8088/"
    assert evaluate("lab_board", "lab_board_lease_max", {"dralab_lease_max": "4h"}) == "4h"


def test_seat_cards():
    text = render_role_template("lab_board", "seat-cards.html.j2", dict(
        HOSTS, lab_board_credentials={"list": SHEET}, lab_board_people={"user01": "Ada <Lovelace>"}))
    cards = re.findall(r'<div class="card" data-seat="(\w+)">', text)
    assert cards == ["user01", "user02", "user03"]
    first = text.split('data-seat="user01"')[1].split('data-seat="user02"')[0]
    assert "Pw&lt;b&gt;&amp;1" in first and "<b>" not in text, "passwords are escaped, not HTML"
    assert "ssh user01@10.89.42.11" in first and "http://10.89.42.11:8088/" in first
    assert "Ada &lt;Lovelace&gt;" in first
    second = text.split('data-seat="user02"')[1].split('data-seat="user03"')[0]
    assert "ssh " not in second.split("</div>\n</div>")[0].replace("can-has-gpu", ""), "no login host, no ssh line"
    # Each card names its own seat's login host.
    third = text.split('data-seat="user03"')[1]
    assert "ssh user03@10.89.42.14" in third and "10.89.42.11</code>" not in third.split("GPU board")[0]
    assert "@page" in text and "break-inside: avoid" in text


def test_the_board_only_reads():
    rules = role_vars("lab_board")["lab_board_read_rules"]
    assert {verb for rule in rules for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert "secrets" not in {r for rule in rules for r in rule["resources"]}
