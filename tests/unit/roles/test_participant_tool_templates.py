# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/participant_tool: the reaper's unit and the defaults that read the lab-wide settings (its identity:
tests/unit/plugins/module_utils/test_node_identity.py)."""

from __future__ import annotations

from render import evaluate, parse_unit, render_role_template


def test_reaper_unit():
    unit = parse_unit(render_role_template("participant_tool", "dralab-lease-reaper.service.j2"))
    service = dict(unit["Service"])
    assert service["User"] == "dralab-reaper"
    assert service["ExecStart"] == ("/opt/dralab/can-has-gpu/bin/dralab-lease-reaper --kubeconfig "
                                    "/etc/dralab/lease-reaper.kubeconfig --interval 5s --turn 60s")
    assert service["Restart"] == "always"
    assert dict(unit["Install"])["WantedBy"] == "multi-user.target"
    idle = dict(parse_unit(render_role_template("participant_tool", "dralab-lease-reaper.service.j2",
                                                {"participant_tool_idle_release_after": "30m"}))["Service"])
    assert idle["ExecStart"].endswith("--interval 5s --turn 60s --idle-after 30m")


def test_defaults_read_the_lab_wide_settings():
    assert evaluate("participant_tool", "participant_tool_lease_default", {}) == "2h"
    assert evaluate("participant_tool", "participant_tool_lease_max", {"dralab_lease_max": "4h"}) == "4h"
    assert evaluate("participant_tool", "participant_tool_wheels_url | trim", {}) == ""
    assert evaluate("participant_tool", "participant_tool_wheels_url | trim",
                    {"dralab_download_mirror": "http://10.89.42.2:8080/"}) == "http://10.89.42.2:8080/wheels/"
    assert evaluate("participant_tool", "participant_tool_pip_wheel_url | trim",
                    {"dralab_download_mirror": "http://10.89.42.2:8080"}) == \
        "http://10.89.42.2:8080/wheels/pip-26.3-py3-none-any.whl"
    assert evaluate("participant_tool", "participant_tool_pip_wheel_url | trim", {}).startswith(
        "https://files.pythonhosted.org/packages/py3/p/pip/pip-26.3-")
    assert evaluate("participant_tool", "participant_tool_default_class | trim",
                    {"dralab_device_classes": [{"name": "gpu-40gi.example.com"}]}) == "gpu-40gi.example.com"
    assert evaluate("participant_tool", "participant_tool_reaper_hosts",
                    {"groups": {"control_plane": ["cp1", "cp2"]}}) == ["cp1"]
