"""The proxy auto-config file each proxy listener serves at /proxy.pac: fetched with curl, its
decisions evaluated by Chromium's JavaScript engine, and used by Chromium (--proxy-pac-url) to
load a page through Lookout while a direct host stays out of the log."""

import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import client_env, wait_until
from origins import HTTPOrigin

DIRECT = ["intranet.corp.test", "*.one.test", "**.deep.test", "10.0.0.1"]


def fetch(port: int, path: str = "/proxy.pac", method: str = "GET"):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_the_listener_serves_a_pac_naming_itself_without_the_admin_token(make_proxy):
    proxy = make_proxy({"pac": {"direct": DIRECT}, "admin": {"token": "t0ken-for-the-admin-pages-123456"}})
    status, headers, body = fetch(proxy.port)
    assert status == 200
    assert headers["Content-Type"] == "application/x-ns-proxy-autoconfig"
    script = body.decode()
    assert "function FindProxyForURL(url, host)" in script
    assert f'return "PROXY 127.0.0.1:{proxy.port}";' in script
    for host in ("intranet.corp.test", "one.test", "deep.test", "10.0.0.1"):
        assert f'"{host}"' in script
    head_status, head_headers, head_body = fetch(proxy.port, method="HEAD")
    assert head_status == 200 and head_body == b"" and head_headers["Content-Length"] == str(len(body))
    # The other pages still ask for the token.
    assert fetch(proxy.port, "/")[0] == 401
    records = proxy.summaries(2, where=lambda r: r["url"].endswith("/proxy.pac"))
    assert [r["status"] for r in records] == [200, 200] and {r["kind"] for r in records} == {"admin"}


def test_an_admin_only_listener_serves_no_pac(make_proxy):
    proxy = make_proxy({"admin": {"listen": "127.0.0.1:0"}})
    wait_until(lambda: len(proxy.ports) == 2, message=proxy.stderr)
    assert fetch(proxy.ports[1])[0] != 200
    assert fetch(proxy.ports[0])[0] == 200


def test_a_bad_direct_host_is_a_config_error_naming_it(make_proxy, lookout_bin):
    proxy = make_proxy({"pac": {"direct": ["ok.test", "a*b.test"]}}, start=False)
    check = subprocess.run([str(lookout_bin), "config", "check", str(proxy.config_path)], capture_output=True, text=True,
                           timeout=30, env=client_env())
    assert check.returncode != 0
    assert "pac.direct" in check.stderr + check.stdout


@pytest.fixture
def chromium_pac():
    from browser import start_chromium
    drivers = []

    def start(pac_url: str | None = None):
        driver = start_chromium(Path(tempfile.mkdtemp()), pac_url=pac_url)
        drivers.append(driver)
        return driver
    yield start
    for driver in drivers:
        driver.quit()


def test_the_pac_decides_as_the_host_patterns_do(make_proxy, chromium_pac):
    proxy = make_proxy({"pac": {"direct": DIRECT}})
    script = fetch(proxy.port)[2].decode()
    driver = chromium_pac()
    proxied = f"PROXY 127.0.0.1:{proxy.port}"
    cases = {
        "intranet.corp.test": "DIRECT", "INTRANET.corp.test.": "DIRECT", "other.corp.test": proxied,
        "a.one.test": "DIRECT", "a.b.one.test": proxied, "one.test": proxied,
        "a.deep.test": "DIRECT", "a.b.deep.test": "DIRECT", "deep.test": proxied, "xdeep.test": proxied,
        "10.0.0.1": "DIRECT", "10.0.0.2": proxied, "example.com": proxied,
    }
    answers = driver.execute_script(script + "\nreturn arguments[0].map(h => FindProxyForURL('http://' + h + '/', h));",
                                    list(cases))
    assert dict(zip(cases, answers)) == cases


def test_chromium_loads_a_page_through_the_pac_and_a_direct_host_stays_out(make_proxy, chromium_pac):
    from selenium.common.exceptions import WebDriverException
    with HTTPOrigin() as site:
        # Chromium's own background requests follow the file too: refused here, never resolved.
        proxy = make_proxy({"pac": {"direct": ["direct.pac.test"]},
                            "access": {"allow_hosts": ["page.pac.test", "127.0.0.1"]},
                            "map": {"remote": [{"from": "http://page.pac.test/", "to": site.url("/")}]}})
        driver = chromium_pac(f"http://127.0.0.1:{proxy.port}/proxy.pac")

        def through_lookout() -> bool:
            # A navigation made before Chromium has read the file goes direct (and fails): try again.
            try:
                driver.get("http://page.pac.test/echo")
            except WebDriverException:
                return False
            return '"target": "/echo"' in driver.page_source
        wait_until(through_lookout, timeout=20, interval=0.5, message="the page did not come through Lookout")
        record = proxy.summaries(1, where=lambda r: r.get("mapped_from") == "http://page.pac.test/echo")[0]
        assert record["status"] == 200 and record["kind"] == "http"
        # The direct host is looked up by Chromium itself, which resolves nothing but loopback here.
        with pytest.raises(WebDriverException, match="ERR_NAME_NOT_RESOLVED"):
            driver.get("http://direct.pac.test/")
        time.sleep(0.5)
        assert not any("direct.pac.test" in (r.get("url") or "") for r in proxy.summaries())
