"""Rewrite the settings tables of README.md and docs/conventions.md from lab_settings.py.

    python tests/harness/settings_docs.py      (or: make settings-docs)

tests/unit/test_settings_registry.py fails while a table differs.
"""

from __future__ import annotations

import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "docs/conventions.md")
BEGIN = "<!-- dralab-settings: generated from plugins/module_utils/lab_settings.py"
END = "<!-- dralab-settings: end -->"


def main() -> None:
    # collections/ links to this checkout; ansible_collections is a namespace package (beside the ansible package's).
    sys.path.insert(0, str(REPO / "collections"))
    from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import markdown_table

    for name in DOCUMENTS:
        path = REPO / name
        text = path.read_text()
        start = text.index("\n", text.index(BEGIN)) + 1
        end = text.index(END)
        new = text[:start] + markdown_table() + text[end:]
        if new != text:
            path.write_text(new)
            print(f"rewrote the settings table of {name}")


if __name__ == "__main__":
    main()
