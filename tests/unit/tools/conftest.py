"""The node programs (tools/can_has_gpu) import as can_has_gpu, next to the collection's module_utils."""

from __future__ import annotations

import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[3] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
