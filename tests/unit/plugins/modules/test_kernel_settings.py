# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_settings runs as Ansible runs it (module_runner.py): its input problems, and check mode on this machine's
kernel, which it only reads. What it writes: test_files_sysctl.py."""

from __future__ import annotations

import os

import pytest

from module_runner import run_module


@pytest.mark.parametrize("args, named", [
    ({"settings": {"kernel/../../x": 1}}, "settings: 'kernel/../../x' is not a kernel setting name"),
    ({"settings": {"net.ipv4.ip_forward": ""}}, "settings: net.ipv4.ip_forward has no value"),
    ({"settings": {"net.ipv4.ip_forward": 1}, "file": "90-dralab.conf"}, "file: '90-dralab.conf' is not an absolute"),
    ({"settings": {"net.ipv4.ip_forward": 1}, "file": "/"}, "file: / is a folder"),
])
def test_bad_input_fails_before_any_change_naming_the_option(tmp_path, args, named):
    code, result = run_module("kernel_settings", dict({"file": str(tmp_path / "90-dralab.conf")}, **args))
    assert code == 1 and named in result["msg"] and result["msg"].endswith("Nothing was changed.")
    assert result["changes"] == [] and list(tmp_path.iterdir()) == []


def test_both_options_are_required():
    code, result = run_module("kernel_settings", {"settings": {"net.ipv4.ip_forward": 1}})
    assert code == 1 and "missing required arguments: file" in result["msg"]


def test_check_mode_reads_the_kernel_and_writes_nothing(tmp_path):
    drop_in = tmp_path / "90-dralab.conf"
    code, result = run_module("kernel_settings", {"settings": {"dralab.no_such_setting": 1}, "file": str(drop_in)},
                              check_mode=True)
    assert code == 0 and result["changed"] is False
    assert result["changes"] == [] and result["missing"] == ["dralab.no_such_setting"] and not result["reloaded"]
    # Every Linux kernel with networking has it (the lab's nodes and Kubernetes need it).
    assert os.path.exists("/proc/sys/net/ipv4/ip_forward")
    with open("/proc/sys/net/ipv4/ip_forward", encoding="utf-8") as handle:
        value = handle.read().strip()
    code, result = run_module("kernel_settings", {"settings": {"net.ipv4.ip_forward": value}, "file": str(drop_in)},
                              check_mode=True)
    # The running value is right; the drop-in that would hold it is not there yet.
    assert code == 0 and result["changed"] is True and result["changes"] == ["net.ipv4.ip_forward=%s" % value]
    assert result["missing"] == [] and not result["reloaded"] and not drop_in.exists()
