# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board's page, drawn by Debian's headless chromium from recorded objects, shows every figure whole at the
projector's width: no capacity line, holder line or sentence cut, clipped or spilling out of its tile, no page
wider than the window (tests/harness/board_browser.py, which tests/lab/test_board.py also runs on the live
board). The screenshots go to pytest's temporary folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.board import page as board_page
from ansible_collections.dralab.workshop.plugins.module_utils.board import state as board_state
from test_dra_model import NOW, broken_fixture, find, healthy_fixture  # pylint: disable=unused-import  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "harness"))
from board_browser import PROJECTOR, chromium, cut_text  # noqa: E402  (tests/harness/board_browser.py)

pytestmark = pytest.mark.needs_tools

# The projector's width the lab's screenshots use, and a smaller projector's.
WIDTHS = (PROJECTOR[0], 1280)


@pytest.fixture(name="browser", scope="module")
def browser_fixture():
    driver = chromium()
    yield driver
    driver.quit()


def shared_lab(broken):
    """The recorded broken lab, its shared gpu-7 on node1 held by two shares (memory and compute consumed)."""
    for seat, name, amount in (("user13", "share-a", "10Gi"), ("user14", "share-b", "20Gi")):
        for result in find(broken["claims"], seat, name)["status"]["allocation"]["devices"]["results"]:
            result["consumedCapacity"] = {"memory": amount, "compute": "25"}
    return broken


@pytest.mark.parametrize("view", ["instructor", "public"])
@pytest.mark.parametrize("width", WIDTHS)
def test_every_figure_of_the_board_is_whole_on_the_projector(broken, browser, tmp_path, view, width):
    board = board_build.build(shared_lab(broken), now=NOW, board={})["board"]
    board = board_state.public(board) if view == "public" else board
    page = tmp_path / "board.html"
    page.write_text(board_page.render(board))
    browser.set_window_size(width, PROJECTOR[1])
    browser.get(page.as_uri())
    lines = [t.text for t in browser.find_elements("css selector", ".tile .line")]
    assert "compute 50 used, 50 free of 100" in " ".join(" ".join(lines).split()), lines
    browser.save_screenshot(str(tmp_path / f"board-{view}-{width}.png"))
    assert cut_text(browser) == [], f"cut at {width}px (screenshot {tmp_path}/board-{view}-{width}.png)"


@pytest.mark.parametrize("view", ["instructor", "public"])
def test_the_waitlist_is_shown_in_order_and_the_projector_names_nobody(healthy, browser, tmp_path, view):
    from test_board_model import _full_with_line  # pylint: disable=import-outside-toplevel
    board = board_build.build(_full_with_line(healthy), now=NOW, board={})["board"]
    board = board_state.public(board) if view == "public" else board
    page = tmp_path / "board.html"
    page.write_text(board_page.render(board))
    browser.set_window_size(*PROJECTOR)
    browser.get(page.as_uri())
    rows = [" ".join(r.text.split()) for r in browser.find_elements("css selector", "#line tr[data-line]")]
    browser.save_screenshot(str(tmp_path / f"board-line-{view}.png"))
    assert [r.split()[:2] for r in rows] == [["gpu.example.com", "#1"], ["gpu.example.com", "#2"]], rows
    shown = " ".join(rows)
    if view == "public":
        assert "user03" not in shown and "user06" not in shown, rows
    else:
        assert rows[0].split()[2] == "user03" and rows[1].split()[2] == "user06", rows
    assert cut_text(browser) == [], f"cut (screenshot {tmp_path}/board-line-{view}.png)"
