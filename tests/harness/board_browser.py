"""The GPU board in Debian's headless chromium, as a person sees it on the projector.

chromium() drives /usr/bin/chromium through Debian's chromium-driver (Service('/usr/bin/chromedriver'): Selenium
Manager downloads nothing), at the projector's width (PROJECTOR). cut_text(driver) lists what the page does not
show whole: an element whose content is wider than its box (scrollWidth > clientWidth: text clipped, cut with an
ellipsis, or spilling over its neighbour), and a page wider than the window. tests/lab/test_board.py checks the
live board with it, tests/unit/plugins/module_utils/test_board_browser.py the page on recorded objects.
"""

from __future__ import annotations

import os

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PROJECTOR = (1600, 1400)  # the window the board's screenshots are taken in (width, height)

# Every element with content wider than its box, and the page when it is wider than the window (a horizontal
# scroll bar: the right of the board is off the projector). A 1px margin for subpixel rounding.
CUT_TEXT = r"""
var cut = [];
var page = document.documentElement;
if (page.scrollWidth > window.innerWidth + 1) {
  cut.push('the page is ' + page.scrollWidth + 'px wide in a window of ' + window.innerWidth + 'px');
}
document.querySelectorAll('body *').forEach(function (node) {
  if (node.clientWidth > 0 && node.scrollWidth > node.clientWidth + 1) {
    cut.push(node.tagName.toLowerCase() + (node.className ? '.' + String(node.className).split(' ').join('.') : '')
             + ' shows ' + node.clientWidth + 'px of ' + node.scrollWidth + 'px: ' + (node.textContent || '').slice(0, 120));
  }
});
return cut;
"""


def chromium(width: int = PROJECTOR[0], height: int = PROJECTOR[1]):
    """A headless chromium (selenium webdriver) with a window of width x height."""
    from selenium import webdriver  # pylint: disable=import-outside-toplevel
    from selenium.webdriver.chrome.service import Service  # pylint: disable=import-outside-toplevel

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not fetch a browser or a driver
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), "apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def cut_text(driver) -> list[str]:
    """What the page in the driver does not show whole (CUT_TEXT), one line each; [] when every figure is whole."""
    return driver.execute_script(CUT_TEXT)
