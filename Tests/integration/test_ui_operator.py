"""The operator's loop in the web UI, in a real headless Chromium: a breakpoint set from the filter
box, a held row, its editor (pretty JSON, headers, status), Resume / Abort / Answer by button and
by key, timeouts both ways, and Resend / Edit-and-resend on finished exchanges with the new record
linked to the first."""

from __future__ import annotations

import json

import pytest

from conftest import curl, py_request, wait_until
from test_breakpoints import Background, admin, held
from test_ui import browser, row_count, rows, screenshot  # noqa: F401 - the module's browser fixture

selenium = pytest.importorskip("selenium", reason="make deps installs selenium")
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


@pytest.fixture
def ui(make_proxy, browser, tmp_path):  # noqa: F811
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]}})
    browser.get(f"http://127.0.0.1:{proxy.port}/ui/")
    wait_until(lambda: browser.find_element(By.ID, "stream-state").text == "live", timeout=10)
    return proxy


def click(browser, selector: str):
    """Clicks what the selector finds, trying again while the pane redraws under it."""
    def attempt():
        try:
            browser.find_element(By.CSS_SELECTOR, selector).click()
            return True
        except (StaleElementReferenceException, NoSuchElementException):
            return False
    wait_until(attempt, timeout=10, message=f"clicking {selector}")


def set_breakpoint(browser, expression: str, on: str = "request"):
    box = browser.find_element(By.ID, "filter")
    box.clear()
    box.send_keys(expression)
    Select(browser.find_element(By.ID, "break-on")).select_by_value(on)
    browser.find_element(By.ID, "break").click()
    wait_until(lambda: expression in browser.find_element(By.ID, "breakpoints").text, timeout=10,
               message="the breakpoint's chip")
    box.clear()
    box.send_keys(Keys.ENTER)


def open_held_row(browser, url: str) -> int:
    """Opens the held row for `url` once the table shows it (the running list refreshes each second)."""
    def held_row():
        return next((r for r in rows(browser) if "held" in r["cls"] and r["cells"]["c-url"] == url), None)
    row = wait_until(held_row, timeout=10, message=f"a held row for {url}")
    # On its URL: with the detail pane open the middle of a row is its status cell, where the
    # cancel button is.
    click(browser, f'#spacer .row[data-id="{row["id"]}"] .c-url')
    wait_until(lambda: browser.find_elements(By.ID, "held-headers"), timeout=10, message="the editor")
    return row["id"]


def test_a_paused_post_is_edited_in_the_browser_and_the_origin_gets_the_edit(ui, browser, origin):
    set_breakpoint(browser, "method:POST")
    document = {"user": "ann", "admin": False}
    client = Background(lambda: py_request(ui, "POST", origin.url("/echo?body=1"), body=json.dumps(document).encode(),
                                           headers={"Content-Type": "application/json"}))
    exchange = open_held_row(browser, origin.url("/echo?body=1"))
    assert [r for r in rows(browser) if r["id"] == exchange][0]["cells"]["c-status"].endswith("held · request")
    body = browser.find_element(By.ID, "held-body")
    assert json.loads(body.get_attribute("value")) == document
    assert body.get_attribute("value") == json.dumps(document, indent=2), "JSON is pretty-printed"
    assert body.get_attribute("data-format") == "json"
    screenshot(browser, "held-request")
    body.clear()
    body.send_keys(json.dumps({"user": "ann", "admin": True}))
    headers = browser.find_element(By.ID, "held-headers")
    headers.send_keys(Keys.END, "\nX-Edited-In: browser")
    click(browser, "#held-resume")
    code, _, data = client.join()
    echoed = json.loads(data)
    assert code == 200 and json.loads(echoed["body"]) == {"user": "ann", "admin": True}
    assert ["X-Edited-In", "browser"] in echoed["headers"]
    summary = ui.only_summary(method="POST", kind="http")
    assert summary["id"] == exchange and summary["modified_by"][0] == "breakpoint:1"
    wait_until(lambda: rows(browser) and rows(browser)[0]["cells"]["c-status"] == "200", timeout=10,
               message="the row finished")


def test_a_paused_response_gets_another_status_by_key(ui, browser, origin):
    set_breakpoint(browser, "status:4xx", on="response")
    client = Background(lambda: curl(ui, origin.url("/status/404")))
    open_held_row(browser, origin.url("/status/404"))
    status = browser.find_element(By.ID, "held-status")
    assert status.get_attribute("value") == "404"
    status.clear()
    status.send_keys("200")
    browser.find_element(By.ID, "held-body").send_keys(Keys.CONTROL, Keys.ENTER)
    result = client.join()
    assert result.status == 200 and result.body == b"status 404\n"


def test_abort_and_answer_from_the_browser(ui, browser, origin):
    set_breakpoint(browser, "url~/held")
    aborted = Background(lambda: curl(ui, origin.url("/echo/held-1")))
    open_held_row(browser, origin.url("/echo/held-1"))
    browser.find_element(By.ID, "table").send_keys("a")
    result = aborted.join()
    assert result.status == 502 and result.header("X-Lookout-Error") == "aborted_by_operator"

    answered = Background(lambda: curl(ui, origin.url("/echo/held-2")))
    wait_until(lambda: len(held(ui)) == 1, timeout=10)
    open_held_row(browser, origin.url("/echo/held-2"))
    click(browser, ".answer-form summary")
    status = browser.find_element(By.ID, "answer-status")
    status.clear()
    status.send_keys("418")
    browser.find_element(By.ID, "answer-body").send_keys("short and stout")
    click(browser, "#held-answer")
    result = answered.join()
    assert result.status == 418 and result.body == b"short and stout"
    assert not any(target.endswith("/held-2") for _, target, _ in origin.requests)


def test_timeouts_both_ways_show_in_the_table(ui, browser, origin):
    admin(ui, "POST", "/breakpoints", {"filter": "url~/goes-on", "timeout": 0.5})
    admin(ui, "POST", "/breakpoints", {"filter": "url~/gives-up", "timeout": 0.5, "on_timeout": "abort"})
    assert curl(ui, origin.url("/echo/goes-on")).status == 200
    assert curl(ui, origin.url("/echo/gives-up")).status == 502
    wait_until(lambda: len(rows(browser)) >= 2 and rows(browser)[0]["cells"]["c-code"] == "breakpoint_timeout",
               timeout=10, message="the timed-out row")
    assert rows(browser)[1]["cells"]["c-status"] == "200"


def test_resend_and_edit_and_resend_link_the_new_record(ui, browser, origin):
    py_request(ui, "POST", origin.url("/echo?body=1"), body=b'{"n":1}', headers={"Content-Type": "application/json"})
    first = ui.only_summary(method="POST", kind="http")
    wait_until(lambda: row_count(browser) == 1, timeout=10)
    click(browser, f'#spacer .row[data-id="{first["id"]}"] .c-url')
    click(browser, "#resend")
    resent = ui.summaries(1, where=lambda r: r.get("resent_from") == first["id"])[0]
    wait_until(lambda: str(first["id"]) in browser.find_element(By.ID, "detail-body").text
               and browser.find_element(By.ID, "detail-title").text.startswith(f"#{resent['id']}"),
               timeout=10, message="the new record's detail, naming the first")
    assert [target for method, target, _ in origin.requests if method == "POST"][-2:] == ["/echo?body=1"] * 2
    click(browser, f'#spacer .row[data-id="{first["id"]}"] .c-url')
    click(browser, "#edit-resend")
    wait_until(lambda: browser.find_elements(By.ID, "resend-body"), timeout=10, message="the resend editor")
    body = browser.find_element(By.ID, "resend-body")
    assert json.loads(body.get_attribute("value")) == {"n": 1}, "the captured body, to edit"
    body.clear()
    body.send_keys('{"n":2}')
    browser.find_element(By.ID, "resend-headers").send_keys(Keys.END, "\nX-Again: 2")
    click(browser, "#resend-send")
    edited = ui.summaries(2, where=lambda r: r.get("resent_from") == first["id"])[1]
    assert edited["modified_by"][0].startswith("operator:")
    _, target, headers = origin.requests[-1]
    assert ("X-Again", "2") in headers and target == "/echo?body=1"
    screenshot(browser, "resent")
