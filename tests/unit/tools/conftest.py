"""The node programs (tools/can_has_gpu) import as can_has_gpu, next to the collection's module_utils; they read
the settings file role participant_tool writes with its defaults (they have no defaults of their own)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from render import participant_tool_settings

TOOLS = Path(__file__).resolve().parents[3] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

SETTINGS = []


@pytest.fixture(autouse=True)
def lab_settings_file(tmp_path_factory, monkeypatch):
    """CAN_HAS_GPU_SETTINGS: the file participant_tool writes on a node, with the lab's defaults."""
    if not SETTINGS:
        path = tmp_path_factory.mktemp("settings") / "can-has-gpu.json"
        path.write_text(json.dumps(participant_tool_settings()))
        SETTINGS.append(path)
    monkeypatch.setenv("CAN_HAS_GPU_SETTINGS", str(SETTINGS[0]))
    return SETTINGS[0]
