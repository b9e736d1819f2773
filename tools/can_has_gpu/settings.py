"""Names, labels and the settings file shared by can-has-gpu and dralab-lease-reaper.

The participant_tool role writes the settings file (JSON) on every node it
installs the tool on, every field from the lab's settings; a missing file or
field is an error that names it (the defaults live in lab_settings.py and the
roles, not here).
"""

from __future__ import annotations

import json
import os
from dataclasses import MISSING, dataclass, fields

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import OCCUPANCY_CONFIGMAP_NAME

SETTINGS_ENV = "CAN_HAS_GPU_SETTINGS"
SETTINGS_PATH = "/etc/dralab/can-has-gpu.json"

# What can-has-gpu puts on its objects. Labels select, annotations carry the lease.
TOOL_LABEL = "dralab.workshop/tool"
TOOL = "can-has-gpu"
ROLE_LABEL = "dralab.workshop/role"  # holder | workload
CLAIM_LABEL = "dralab.workshop/claim"


@dataclass
class Settings:
    lease_default: str
    lease_max: str
    default_class: str
    driver: str
    holder_image: str
    wait: str
    occupancy: str = OCCUPANCY_CONFIGMAP_NAME

    @property
    def lease_default_seconds(self) -> int:
        return parse_duration(self.lease_default)

    @property
    def lease_max_seconds(self) -> int:
        return parse_duration(self.lease_max)

    @property
    def wait_seconds(self) -> int:
        return parse_duration(self.wait)


class SettingsError(ValueError):
    """The settings file cannot be used (message names the file and the field)."""


def load_settings(path: str | None = None) -> Settings:
    path = path or os.environ.get(SETTINGS_ENV) or SETTINGS_PATH
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise SettingsError(f"no settings file {path} (the participant_tool role writes it)") from None
    except (OSError, ValueError) as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"the settings file {path} must hold a JSON object")
    unknown = sorted(set(data) - {f.name for f in fields(Settings)})
    if unknown:
        raise SettingsError(f"the settings file {path} has unknown field(s) {', '.join(unknown)}")
    missing = [f.name for f in fields(Settings) if f.default is MISSING and f.name not in data]
    if missing:
        raise SettingsError(f"the settings file {path} has no {', '.join(missing)}")
    settings = Settings(**{k: str(v) for k, v in data.items()})
    for name in ("lease_default", "lease_max", "wait"):
        try:
            parse_duration(getattr(settings, name))
        except ValueError as exc:
            raise SettingsError(f"{path}: {name}: {exc}") from None
    if settings.lease_default_seconds > settings.lease_max_seconds:
        raise SettingsError(f"{path}: lease_default {settings.lease_default} is longer than lease_max "
                            f"{settings.lease_max}")
    return settings
