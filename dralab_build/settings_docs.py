"""Rewrite the settings tables of README.md and docs/conventions.md and the defaults of role dralab from
lab_settings.py, and the DRA feature table of README.md from dra/features.py.

    python -m dralab_build.settings_docs      (or: make settings-docs)

tests/unit/test_settings_registry.py and tests/unit/plugins/test_dra_features.py fail while a table differs.
"""

from __future__ import annotations

import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/conventions.md")
BEGIN = "<!-- dralab-settings: generated from plugins/module_utils/lab_settings.py"
END = "<!-- dralab-settings: end -->"
FEATURES_BEGIN = "<!-- dralab-features: generated from plugins/module_utils/dra/features.py"
FEATURES_END = "<!-- dralab-features: end -->"


def replace_between(text: str, begin: str, end: str, table: str) -> str:
    start = text.index("\n", text.index(begin)) + 1
    return text[:start] + table + text[text.index(end):]


def main() -> None:
    # collections/ links to this checkout; ansible_collections is a namespace package (beside the ansible package's).
    sys.path.insert(0, str(REPO / "collections"))
    from ansible_collections.dralab.workshop.plugins.module_utils.dra import features as dra_features
    from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import ROLE_DEFAULTS_PATH, markdown_table, role_defaults_yaml

    for name in DOCUMENTS:
        path = REPO / name
        text = path.read_text()
        new = replace_between(text, BEGIN, END, markdown_table())
        if FEATURES_BEGIN in new:
            new = replace_between(new, FEATURES_BEGIN, FEATURES_END, dra_features.markdown_table())
        if new != text:
            path.write_text(new)
            print(f"rewrote the generated tables of {name}")
    role_defaults = REPO / ROLE_DEFAULTS_PATH
    if not role_defaults.exists() or role_defaults.read_text() != role_defaults_yaml():
        role_defaults.write_text(role_defaults_yaml())
        print(f"rewrote {ROLE_DEFAULTS_PATH}")


if __name__ == "__main__":
    main()
