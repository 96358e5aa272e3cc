"""The web UI at `/ui/`, in a real headless Chromium (Debian's `chromium` and `chromium-driver`,
driven by Selenium): the table fills while curl traffic flows, filtering narrows it (errors inline
at their column), a failed exchange shows its code, the detail pane's timings match the log
record, a captured JSON body renders, the HAR download parses, pausing stops updates, running
exchanges can be cancelled, and the keys work. Screenshots of the table and of a detail pane are
written to `.build/test-results/screenshots/` on every run."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from conftest import curl, free_port, wait_until
from origins import RawOrigin, reply_and_hold
from origins import ScriptedOrigin

selenium = pytest.importorskip("selenium", reason="make deps installs selenium")
from browser import start_chromium  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402

SCREENSHOTS = Path(__file__).resolve().parents[2] / ".build" / "test-results" / "screenshots"
DOCUMENT = {"service": "inventory", "items": [{"sku": "A-1", "count": 3}, {"sku": "B-2", "count": 0}], "ok": True}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("downloads"))
    yield driver
    driver.quit()


@pytest.fixture
def site():
    with ScriptedOrigin() as origin:
        origin.route("/ok", (200, {"Content-Type": "text/plain"}, b"fine"))
        origin.route("/fail", (503, {"Content-Type": "text/plain"}, b"down"))
        origin.route("/inventory.json", (200, {"Content-Type": "application/json"}, json.dumps(DOCUMENT).encode()))
        yield origin


@pytest.fixture
def ui(make_proxy, browser, tmp_path):
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]}})
    browser.get(f"http://127.0.0.1:{proxy.port}/ui/")
    wait_until(lambda: browser.find_element(By.ID, "stream-state").text == "live", timeout=10,
               message="the live stream connected")
    return proxy


def rows(browser) -> list[dict]:
    """The rows drawn (the table is virtualised: those in view), top to bottom."""
    return browser.execute_script("""
        return [...document.querySelectorAll('#spacer .row')]
          .sort((a, b) => a.dataset.index - b.dataset.index)
          .map(r => ({id: Number(r.dataset.id), cls: r.className,
                      cells: Object.fromEntries([...r.children].map(c => [c.className, c.textContent]))}));""")


def row_count(browser) -> int:
    return browser.execute_script("return state.view.length")


def screenshot(browser, name: str):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def test_the_table_fills_while_traffic_flows(ui, browser, site):
    assert row_count(browser) == 0
    for index in range(6):
        curl(ui, site.url(f"/ok?n={index}"))
    curl(ui, site.url("/fail"))
    wait_until(lambda: row_count(browser) == 7, timeout=10, message="seven rows")
    drawn = rows(browser)
    # Newest first, each with its method, URL and status.
    assert drawn[0]["cells"]["c-url"] == site.url("/fail") and drawn[0]["cells"]["c-status"] == "503"
    assert "failed" in drawn[0]["cls"]
    assert drawn[1]["cells"]["c-url"] == site.url("/ok?n=5") and drawn[1]["cells"]["c-method"] == "GET"
    assert all(r["cells"]["c-kind"] == "http" for r in drawn)
    records = {r["id"]: r for r in ui.summaries(7, where=lambda r: r["kind"] == "http")}
    assert {r["id"] for r in drawn} == set(records)
    # The header bar carries the status page's counters.
    wait_until(lambda: "finished: " in browser.find_element(By.ID, "counters").text, timeout=5)
    screenshot(browser, "table")


def test_filtering_narrows_the_table_and_errors_show_at_their_column(ui, browser, site):
    for path in ("/ok", "/fail", "/ok", "/fail", "/ok"):
        curl(ui, site.url(path))
    wait_until(lambda: row_count(browser) == 5, timeout=10, message="five rows")
    box = browser.find_element(By.ID, "filter")
    box.send_keys("status:5xx", Keys.ENTER)
    wait_until(lambda: row_count(browser) == 2, timeout=10, message="only the two failures")
    assert all(r["cells"]["c-status"] == "503" for r in rows(browser))
    # Live records are filtered on the server too.
    curl(ui, site.url("/ok"))
    curl(ui, site.url("/fail"))
    wait_until(lambda: row_count(browser) == 3, timeout=10, message="the new failure, not the success")
    # A bad expression: the message and a caret under the column the parser names.
    box.clear()
    box.send_keys("status:5xx and (", Keys.ENTER)
    error = browser.find_element(By.ID, "filter-error")
    wait_until(lambda: error.is_displayed(), timeout=10, message="the inline error")
    column = int(error.get_attribute("data-column"))
    assert column >= 1
    caret = browser.find_element(By.ID, "filter-caret").text
    assert caret.strip() == "^" and browser.execute_script("return document.getElementById('filter-caret').textContent.indexOf('^')") == column - 1
    assert "filter" in browser.find_element(By.ID, "filter-message").text
    assert "invalid" in box.get_attribute("class")
    box.clear()
    box.send_keys(Keys.ENTER)
    wait_until(lambda: row_count(browser) == 7, timeout=10, message="everything again")
    assert not error.is_displayed()


def test_a_failed_exchange_shows_its_code(ui, browser):
    closed = free_port()
    result = curl(ui, f"http://127.0.0.1:{closed}/nothing-listens")
    assert result.status == 502
    wait_until(lambda: row_count(browser) == 1, timeout=10)
    [row] = rows(browser)
    assert row["cells"]["c-code"] == "upstream_connect_failed" and row["cells"]["c-status"] == "502"
    row_element = browser.find_element(By.CSS_SELECTOR, f'#spacer .row[data-id="{row["id"]}"]')
    row_element.click()
    # The pane fills after the record is fetched, so the error box appears a moment after the click
    # (and is drawn anew if the pane re-renders): look it up on every try.
    def error_text():
        try:
            return " ".join(e.text for e in browser.find_elements(By.ID, "detail-error"))
        except StaleElementReferenceException:
            return ""
    wait_until(lambda: error_text().startswith("upstream_connect_failed: "), timeout=5,
               message="the detail pane's error box")


def test_the_detail_pane_shows_the_records_timings_and_a_json_body(ui, browser, site):
    curl(ui, site.url("/inventory.json"))
    record = ui.only_summary(where=lambda r: r["kind"] == "http")
    wait_until(lambda: row_count(browser) == 1, timeout=10)
    browser.find_element(By.CSS_SELECTOR, f'#spacer .row[data-id="{record["id"]}"]').click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#waterfall .num"), timeout=5)
    shown = {e.get_attribute("data-phase"): float(e.get_attribute("data-ms"))
             for e in browser.find_elements(By.CSS_SELECTOR, "#waterfall .num")}
    timings = record["timings_ms"]
    for phase, value in timings.items():
        if value >= 0:
            assert shown[phase] == pytest.approx(value), (phase, shown, timings)
        else:
            assert phase not in shown
    assert "total" in shown and "wait" in shown
    # The body is fetched after the pane is drawn; its <pre> appears when it has arrived.
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, 'pre.body[data-which="response"][data-format="json"]'),
               timeout=5, message="the response body rendered as JSON")
    pre = browser.find_element(By.CSS_SELECTOR, 'pre.body[data-which="response"]')
    assert pre.text == json.dumps(DOCUMENT, indent=2)
    attempts = browser.find_element(By.CSS_SELECTOR, ".section-attempts").text
    assert site.url("/inventory.json") in attempts and "200" in attempts
    screenshot(browser, "detail")


def test_the_har_download_parses(ui, browser, site):
    for path in ("/ok", "/fail", "/inventory.json"):
        curl(ui, site.url(path))
    wait_until(lambda: row_count(browser) == 3, timeout=10)
    box = browser.find_element(By.ID, "filter")
    box.send_keys("status:200", Keys.ENTER)
    wait_until(lambda: row_count(browser) == 2, timeout=10)
    for old in browser.downloads.glob("*"):
        old.unlink()
    browser.find_element(By.ID, "har").click()
    target = browser.downloads / "lookout.har"
    wait_until(lambda: target.exists() and target.stat().st_size > 0, timeout=15, message="the HAR file")
    har = json.loads(target.read_text())
    entries = har["log"]["entries"]
    assert har["log"]["version"] == "1.2" and len(entries) == 2
    assert [e["request"]["url"] for e in entries] == [site.url("/ok"), site.url("/inventory.json")]
    assert json.loads(entries[1]["response"]["content"]["text"]) == DOCUMENT
    from haralyzer import HarParser
    assert len(HarParser(har).pages) >= 0 and HarParser(har).har_data["entries"] == entries


def test_the_recording_download_holds_the_filtered_log_and_its_bodies(ui, browser, site, tmp_path):
    import tarfile
    for path in ("/ok", "/fail", "/inventory.json"):
        curl(ui, site.url(path))
    wait_until(lambda: row_count(browser) == 3, timeout=10)
    browser.find_element(By.ID, "filter").send_keys("status:200", Keys.ENTER)
    wait_until(lambda: row_count(browser) == 2, timeout=10)
    for old in browser.downloads.glob("*"):
        old.unlink()
    browser.find_element(By.ID, "recording").click()
    target = browser.downloads / "lookout-recording.tar.gz"
    wait_until(lambda: target.exists() and not list(browser.downloads.glob("*.crdownload")), timeout=15,
               message="the recording")
    with tarfile.open(target, "r:gz") as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    folder = tmp_path / "unpacked" / "lookout-recording"
    records = [json.loads(line) for line in (folder / "recording.jsonl").read_text().splitlines()]
    assert [r["url"] for r in records] == [site.url("/ok"), site.url("/inventory.json")]
    # Capture paths are relative to the log, and each names a file in the archive.
    assert records[1]["capture"]["response"] == f"capture/{records[1]['id']}.response"
    assert (folder / records[1]["capture"]["response"]).read_bytes() == json.dumps(DOCUMENT).encode()
    assert (folder / records[0]["capture"]["response"]).read_bytes() == b"fine"


def test_pausing_stops_updates_until_resumed(ui, browser, site):
    curl(ui, site.url("/ok"))
    wait_until(lambda: row_count(browser) == 1, timeout=10)
    browser.find_element(By.ID, "pause").click()
    for _ in range(3):
        curl(ui, site.url("/ok"))
    ui.summaries(4, where=lambda r: r["kind"] == "http")
    time.sleep(1.0)
    assert row_count(browser) == 1
    assert "3 waiting" in browser.find_element(By.ID, "row-count").text
    browser.find_element(By.ID, "pause").click()
    wait_until(lambda: row_count(browser) == 4, timeout=10, message="the waiting rows after resuming")
    browser.find_element(By.ID, "clear").click()
    assert row_count(browser) == 0


def test_running_exchanges_show_and_can_be_cancelled(ui, browser):
    silent = RawOrigin(reply_and_hold(None)).start()
    port = silent.port
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(r=curl(ui, f"http://127.0.0.1:{port}/slow")))
    thread.start()
    try:
        wait_until(lambda: rows(browser) and "running" in rows(browser)[0]["cls"], timeout=10, message="a running row")
        row = rows(browser)[0]
        assert row["cells"]["c-status"].endswith("running · wait")

        def click_cancel():
            # The table redraws as the in-flight list refreshes: a button may be replaced under us.
            try:
                browser.find_element(By.CSS_SELECTOR, f'#spacer .row[data-id="{row["id"]}"] .cancel').click()
                return True
            except (StaleElementReferenceException, NoSuchElementException):
                return False
        wait_until(click_cancel, timeout=5, message="clicking cancel")
        thread.join(10)
        assert result["r"].status == 502 and result["r"].header("X-Lookout-Error") == "cancelled_by_operator"
        wait_until(lambda: rows(browser) and rows(browser)[0]["cells"]["c-code"] == "cancelled_by_operator",
                   timeout=10, message="the row finished as cancelled")
        assert "running" not in rows(browser)[0]["cls"]
    finally:
        silent.stop()


def test_keys_move_focus_select_and_open(ui, browser, site):
    for index in range(3):
        curl(ui, site.url(f"/ok?k={index}"))
    wait_until(lambda: row_count(browser) == 3, timeout=10)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "filter"
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    page = browser.find_element(By.ID, "table")
    page.send_keys(Keys.ARROW_DOWN)
    page.send_keys(Keys.ARROW_DOWN)
    selected = browser.find_element(By.CSS_SELECTOR, "#spacer .row.selected")
    assert selected.get_attribute("data-index") == "1"
    page.send_keys(Keys.ENTER)
    title = browser.find_element(By.ID, "detail-title")
    wait_until(lambda: site.url("/ok?k=1") in title.text, timeout=5, message="the detail of the second row")
    page.send_keys(Keys.ESCAPE)
    assert not browser.find_element(By.ID, "detail").is_displayed()


def test_ten_thousand_rows_stay_virtualised(ui, browser):
    # The table draws only what is in view, however many rows it holds.
    browser.execute_script("""
        for (let i = 1; i <= 10000; i++) state.rows.push({id: 1e9 + i, event: 'exchange', kind: 'http', method: 'GET',
          url: 'http://synthetic.test/' + i, status: 200, ts: new Date().toISOString(), timings_ms: {total: 1}});
        render();""")
    assert row_count(browser) == 10000
    drawn = len(browser.find_elements(By.CSS_SELECTOR, "#spacer .row"))
    assert 0 < drawn < 120
    start = time.monotonic()
    browser.execute_script("""
        const v = document.getElementById('viewport');
        for (let i = 0; i < 200; i++) { v.scrollTop = i * 1200; drawRows(); }""")
    assert time.monotonic() - start < 5
    assert len(browser.find_elements(By.CSS_SELECTOR, "#spacer .row")) < 120


def test_the_token_in_the_address_becomes_a_cookie(make_proxy, browser, site):
    token = "ui-Token-7"
    proxy = make_proxy({"admin": {"token": token}})
    browser.delete_all_cookies()
    browser.get(f"http://127.0.0.1:{proxy.port}/ui/")
    assert "admin_token_required" in browser.page_source
    browser.get(f"http://127.0.0.1:{proxy.port}/ui/?token={token}")
    wait_until(lambda: browser.find_element(By.ID, "stream-state").text == "live", timeout=10)
    assert "token" not in browser.current_url
    assert browser.execute_script("return document.cookie") == ""  # HttpOnly: scripts never see it
    curl(proxy, site.url("/ok"))
    wait_until(lambda: row_count(browser) == 1, timeout=10)
    browser.delete_all_cookies()


def test_the_files_are_served_with_a_strict_policy(make_proxy, site):
    from conftest import raw_exchange
    proxy = make_proxy()

    def get(path: str):
        resp, _ = raw_exchange(proxy.port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return resp

    page = get("/ui/")
    assert page.status == 200 and page.header("Content-Type") == "text/html; charset=utf-8"
    assert b'<script src="app.js">' in page.body
    policy = page.header("Content-Security-Policy")
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.header("X-Content-Type-Options") == "nosniff" and page.header("Cache-Control") == "no-store"
    assert get("/ui/app.js").header("Content-Type") == "text/javascript; charset=utf-8"
    assert get("/ui/style.css").header("Content-Type") == "text/css; charset=utf-8"
    moved = get("/ui?token=abc")
    assert moved.status == 308 and moved.header("Location") == "/ui/?token=abc"
    assert get("/ui/../../etc/passwd").status == 404
    assert get("/ui/nothing.js").status == 404
    # The HAR of the ring for scripts, with its filter.
    curl(proxy, site.url("/ok"))
    curl(proxy, site.url("/fail"))
    proxy.summaries(2, where=lambda r: r["kind"] == "http")
    har = get("/exchanges.har?filter=" + "status%3A5xx")
    assert har.header("Content-Disposition") == 'attachment; filename="lookout.har"'
    entries = json.loads(har.body)["log"]["entries"]
    assert [e["response"]["status"] for e in entries] == [503]
    assert get("/exchanges.har?filter=status%3A").status == 400
