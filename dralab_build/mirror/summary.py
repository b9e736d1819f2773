"""What a built mirror holds, printed from its mirror.json (python -m dralab_build.mirror --summary)."""

from __future__ import annotations

import json
from pathlib import Path


def human(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def print_summary(root: Path) -> None:
    manifest = json.loads((root / "mirror.json").read_text())
    files = manifest["files"]
    print(f"Offline mirror at {root} ({manifest['arch']}, built {manifest['built']})")
    print("\nVersions:")
    for name, version in manifest["versions"].items():
        print(f"  {name:26} {version}")
    print(f"\nFiles tree ({root / 'files'}, mirror_files_src):")
    for rel, size in sorted(files.items()):
        if rel.startswith("files/"):
            print(f"  {human(size):>10}  {rel[len('files/'):]}")
    print(f"\nImages ({root / 'images'}, mirror_images_src; list in images/index.json):")
    for image in manifest["images"]:
        size = files.get(f"images/{image['archive']}", 0)
        print(f"  {human(size):>10}  {image['name']}:{image['tag']}  ({image['archive']})")
    for chart in manifest["charts"]:
        print(f"  {human(files.get('images/' + chart, 0)):>10}  chart {chart} (mirror_charts)")
    total = sum(size for rel, size in files.items() if not rel.startswith("images/") or rel.endswith(".tar"))
    print(f"\nTotal: {human(total)} in {len(files)} files")
    for note in manifest["notes"]:
        print(f"NOTE: {note}")
