"""The GPU board on the lab, in a real browser: Debian's chromium, headless, driven by selenium through
Debian's chromium-driver (tests/harness/board_browser.py: Selenium Manager downloads nothing).

- dralab-board runs on cp1 as a systemd service (enabled, its own user, 0600 kubeconfig and token);
- the instructor's view (the token from the artifacts folder) draws 24 device tiles;
- a seat logs in over SSH with its password, runs `can-has-gpu reserve --for 10m`, and the tile of its
  GPU shows the seat within 2 s of the command's return;
- the projector's view shows no seat password, no seat token and not the board's token, and every figure whole
  (tests/harness/board_browser.py: no line cut, clipped or spilling out of its tile at the projector's width);
- a seat in the GPU waitlist (every GPU taken) is a row of the board's line, with its seat on the instructor's
  view and without it on the projector's; dra_health names it; a GPU freed goes to it and the row goes;
- a wrong token is refused (401, no board drawn);
- health.yml's static snapshot, opened from disk, draws the 24 tiles from its own data;
- the seat cards show one card per seat (seat, password, ssh line, board URL) and print (A4 PDF).

Screenshots of each view go to $DRALAB_CACHE/lab/artifacts/screenshots/ (instructor.png, projector.png,
line.png, line-projector.png, refused.png, snapshot.png, seat-cards.png and seat-cards.pdf; printed at the end). Part of the molecule
verifier (tests/lab); `make test-lab-board` runs it alone against the lab `make lab` left up.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

from board_browser import chromium, cut_text  # tests/harness/board_browser.py
from conftest import ARTIFACTS, HEALTH_PLAYBOOK, credentials, login, node_host, run_playbook, unit_installed, wait_for

SEAT = "user02"
FILL = "board-line-fill"  # the instructor's namespace of the claims that take every other GPU (no seat's)
GPUS = 24
LATENCY = 2.0
SHOTS = ARTIFACTS / "screenshots"


def board_info() -> dict:
    path = ARTIFACTS / "board" / "board.json"
    assert path.is_file(), f"no {path}: playbooks/board.yml (site.yml) has not run on the lab"
    info = json.loads(path.read_text())
    assert info["url"], info
    return info


def token() -> str:
    return (ARTIFACTS / "board" / "instructor").read_text().strip()


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def secrets() -> dict[str, str]:
    """Every credential the projector's view must not show: seat passwords and tokens, the board's token."""
    found = {"board token": token()}
    with open(ARTIFACTS / "credentials.csv", encoding="utf-8") as sheet:
        for line in sheet.read().splitlines()[1:]:
            seat, _host, _address, password = line.split(",")[:4]
            if password:
                found[f"{seat}'s password"] = password
    for path in (ARTIFACTS / "seats").glob("*.kubeconfig"):
        for user in yaml.safe_load(path.read_text())["users"]:
            if user["user"].get("token"):
                found[f"{path.stem}'s token"] = user["user"]["token"]
    return found


@pytest.fixture(scope="module")
def browser():
    driver = chromium()  # at the projector's width (make lab-tools installs chromium and chromium-driver)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()
    print(f"\n[board] screenshots: {', '.join(sorted(str(p) for p in SHOTS.iterdir()))}", file=sys.stderr)


@pytest.fixture(scope="module")
def seat():
    session = login(SEAT)
    session.run("can-has-gpu release --all")
    yield session
    session.run("can-has-gpu release --all")
    session.close()


def tiles(driver):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, ".tile")


def wait(driver, what, check, timeout, poll=0.05):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=poll).until(check, message=what)


def test_the_board_runs_as_a_service_on_cp1():
    cp1 = node_host("cp1")
    service = cp1.service("dralab-board")
    assert service.is_enabled and service.is_running
    for path in ("/etc/dralab/dralab-board.kubeconfig", "/etc/dralab/dralab-board.env"):
        assert cp1.file(path).mode == 0o600, path
    assert cp1.file("/etc/dralab/dralab-board.kubeconfig").user == "dralab-board"
    assert cp1.process.filter(user="dralab-board"), "the board does not run as its own user"
    assert not unit_installed(node_host("worker1"), "dralab-board")


def test_the_instructors_view_shows_every_gpu_and_the_seats_reservation(browser, seat):
    from selenium.webdriver.common.by import By

    url = board_info()["instructor_url"] + "?token=" + token()
    browser.get(url)
    wait(browser, "24 tiles", lambda d: len(tiles(d)) == GPUS, 30)
    wait(browser, "the stream to be live", lambda d: d.find_element(By.ID, "status").text == "live", 30)
    assert "instructor view" in browser.find_element(By.ID, "view").text

    rc, out, err = seat.run("can-has-gpu reserve --for 10m", timeout=180)
    returned = time.monotonic()
    assert rc == 0, out + err
    match = re.search(r"^Reserved (gpu-\w+): (gpu-\d+) on (\S+)", out, re.M)
    assert match, out
    claim, device, node = match.groups()
    selector = f'.tile[data-node="{node}"][data-device="{device}"][data-seat~="{SEAT}"]'
    wait(browser, f"{SEAT} on the tile of {device} on {node}",
         lambda d: d.find_elements(By.CSS_SELECTOR, selector), LATENCY)
    shown = time.monotonic() - returned
    tile = browser.find_element(By.CSS_SELECTOR, selector)
    assert claim in tile.text and "lease" in tile.text, tile.text
    print(f"\n[board] {SEAT} reserved {device} on {node}: on its tile {shown:.2f}s after reserve returned",
          file=sys.stderr)
    browser.save_screenshot(str(SHOTS / "instructor.png"))


def test_the_projectors_view_shows_no_secret(browser, seat):
    from selenium.webdriver.common.by import By

    browser.get(board_info()["url"])
    wait(browser, "24 tiles", lambda d: len(tiles(d)) == GPUS, 30)
    assert "projector view" in browser.find_element(By.ID, "view").text
    shown = browser.page_source + "\n" + browser.find_element(By.TAG_NAME, "body").text
    found = secrets()
    assert len(found) > 4, "the seats' passwords and tokens were not found"
    leaked = [name for name, value in found.items() if value in shown]
    assert not leaked, f"the projector's view shows {leaked}"
    browser.save_screenshot(str(SHOTS / "projector.png"))
    assert cut_text(browser) == [], "the projector's view cuts what it shows (screenshots/projector.png)"


def free_gpus(custom) -> dict[str, int]:
    """{node: GPUs of the example driver that no claim holds}."""
    published = {}
    for item in custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]:
        if item["spec"].get("driver") == "gpu.example.com":
            for device in item["spec"].get("devices") or []:
                published[(item["spec"]["pool"]["name"], device["name"])] = item["spec"].get("nodeName")
    for claim in custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceclaims")["items"]:
        for result in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            published.pop((result["pool"], result["device"]), None)
    counts: dict[str, int] = {}
    for node in published.values():
        counts[node] = counts.get(node, 0) + 1
    return counts


def fill_every_gpu(core, custom):
    """The instructor takes every free GPU: per node a claim of all its free GPUs and a pod that holds it."""
    from kubernetes import client

    image = json.loads(node_host("cp1").file("/etc/dralab/can-has-gpu.json").content_string)["holder_image"]
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=FILL)))
    for node, count in sorted(free_gpus(custom).items()):
        name = f"fill-{node}"
        custom.create_namespaced_custom_object("resource.k8s.io", "v1", FILL, "resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": count}}]}}})
        core.create_namespaced_pod(FILL, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                     "containers": [{"name": "hold", "image": image, "command": ["sleep", "3600"],
                                     "resources": {"claims": [{"name": "gpu"}]}}]}})
    wait_for("every GPU taken", lambda: not free_gpus(custom), timeout=120)


def line_rows(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#line tr[data-line]")]


def test_a_seat_in_line_is_on_the_board_and_gets_the_next_gpu(browser, core, custom, seat):
    """Every GPU taken (user02's and the instructor's), another seat runs `can-has-gpu reserve` over SSH and waits in
    line: the instructor's view shows its row with the seat, the projector's without; dra_health names the line;
    a GPU freed is the seat's, and the row is gone."""
    from kubernetes import client
    from selenium.webdriver.common.by import By

    waiting_seat = next(s for s in sorted(credentials()) if s != SEAT)
    waiter = login(waiting_seat)
    waiter.run("can-has-gpu release --all")
    answer: dict = {}
    try:
        fill_every_gpu(core, custom)
        thread = threading.Thread(target=lambda: answer.update(
            zip(("rc", "out", "err"), waiter.run("can-has-gpu reserve --for 5m", timeout=300))), daemon=True)
        thread.start()
        browser.get(board_info()["instructor_url"] + "?token=" + token())
        row = wait(browser, f"{waiting_seat} in the board's line",
                   lambda d: [r for r in line_rows(d) if waiting_seat in r and "#1" in r], 60)
        assert "gpu.example.com" in row[0], row
        browser.save_screenshot(str(SHOTS / "line.png"))
        proc = run_playbook(HEALTH_PLAYBOOK, "-e", json.dumps({"health_json_path": str(SHOTS / "health-line.json"),
                                                              "health_options": {"fail_on_unhealthy": False}}))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        report = json.loads((SHOTS / "health-line.json").read_text())
        assert [(r["seat"], r["position"]) for r in report["waitlist"]] == [(waiting_seat, 1)], report["waitlist"]
        assert any(line.startswith("  gpu.example.com: " + waiting_seat) for line in report["report_lines"])
        browser.get(board_info()["url"])
        public = wait(browser, "the line on the projector's view", line_rows, 30)
        section = browser.find_element(By.ID, "line").get_attribute("innerHTML")
        assert public and "#1" in public[0] and waiting_seat not in section, section  # the room sees no one's place
        browser.save_screenshot(str(SHOTS / "line-projector.png"))
        first = sorted(pod.metadata.name for pod in core.list_namespaced_pod(FILL).items)[0]
        core.delete_namespaced_pod(first, FILL, grace_period_seconds=0)  # the claim is freed when its pod is gone
        custom.delete_namespaced_custom_object("resource.k8s.io", "v1", FILL, "resourceclaims", first)
        thread.join(timeout=240)
        assert answer.get("rc") == 0 and "Reserved" in answer.get("out", ""), answer
        print(f"\n[board] {waiting_seat} waited in line, then: {answer['out'].strip().splitlines()[-1]}",
              file=sys.stderr)
        browser.get(board_info()["instructor_url"] + "?token=" + token())
        wait(browser, "the line empty again", lambda d: "Nobody waits in line." in d.page_source and not line_rows(d), 30)
    finally:
        core.delete_namespace(FILL, body=client.V1DeleteOptions(grace_period_seconds=0))
        waiter.run("can-has-gpu release --all")
        waiter.close()


def test_a_wrong_token_is_refused(browser):
    from selenium.webdriver.common.by import By

    info = board_info()
    assert status_of(info["instructor_url"] + "?token=wrong-" + "x" * 26) == 401
    assert status_of(info["instructor_url"]) == 401
    browser.get(info["instructor_url"] + "?token=wrong-" + "x" * 26)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "needs its token" in body and not tiles(browser), body
    browser.save_screenshot(str(SHOTS / "refused.png"))


def test_the_health_snapshot_draws_the_board_offline(browser):
    """health.yml's after-action record: a file opened from disk draws every tile from its own data."""
    from selenium.webdriver.common.by import By

    snapshot = ARTIFACTS / "board-snapshot.html"
    assert snapshot.stat().st_mode & 0o777 == 0o600
    browser.get(snapshot.as_uri())
    wait(browser, "24 tiles in the snapshot", lambda d: len(tiles(d)) == GPUS, 10)
    assert browser.find_element(By.ID, "status").text == "snapshot"
    assert "snapshot of" in browser.find_element(By.ID, "generated").text
    browser.save_screenshot(str(SHOTS / "snapshot.png"))


def test_the_seat_cards_print_one_card_per_seat(browser):
    """The printable credential sheet: per seat its name, password, ssh line and the board's address."""
    import base64

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.print_page_options import PrintOptions

    cards_file = ARTIFACTS / "seat-cards.html"
    assert cards_file.stat().st_mode & 0o777 == 0o600
    with open(ARTIFACTS / "credentials.csv", encoding="utf-8") as sheet:
        rows = [line.split(",") for line in sheet.read().splitlines()[1:]]
    browser.get(cards_file.as_uri())
    cards = {c.get_attribute("data-seat"): c.text for c in browser.find_elements(By.CSS_SELECTOR, ".card")}
    assert sorted(cards) == sorted(r[0] for r in rows), cards
    url = board_info()["url"]
    for seat, _host, address, password, *_rest in rows:
        text = cards[seat]
        assert password in text and f"ssh {seat}@{address}" in text and url in text, text
    browser.save_screenshot(str(SHOTS / "seat-cards.png"))
    options = PrintOptions()
    options.page_height, options.page_width = 29.7, 21.0  # A4, as the page's @page rule asks
    pdf = base64.b64decode(browser.print_page(options))
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages") >= 1
    (SHOTS / "seat-cards.pdf").write_bytes(pdf)
