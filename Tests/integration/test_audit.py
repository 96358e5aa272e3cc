"""Passive security findings (`audit`): origins that set each kind of bad header, over plain http
and through interception; ids, evidence and redaction in the records; `disable` and per-host
rules; `/metrics`, `lookout log summary --by finding` and the `finding:` filter; a config naming
an unknown id is refused."""

from __future__ import annotations

import json
import urllib.request

from conftest import curl
from origins import ScriptedOrigin
from test_log_command import lookout_log
from test_tls_intercept import ca_file, good_origin, intercepting  # noqa: F401 - the origin fixture

BAD_PAGE = (200, {"Content-Type": "text/html", "Set-Cookie": "sid=s3cret-value; Path=/", "Server": "nginx/1.25.3"},
            b"<html></html>")
CORS = (200, {"Access-Control-Allow-Origin": "https://evil.test", "Access-Control-Allow-Credentials": "true"}, b"{}")


def ids(record) -> list[str]:
    return [f["id"] for f in record.get("findings", [])]


def test_plain_http_findings_with_evidence_redacted(make_proxy):
    with ScriptedOrigin() as origin:
        origin.route("/page", BAD_PAGE)
        origin.route("/api", CORS)
        proxy = make_proxy({"audit": {"enabled": True}})
        curl(proxy, origin.url("/page?api_key=k3y&page=1"), "-u", "alice:pw")
        curl(proxy, origin.url("/api"), "-H", "Origin: https://evil.test")
        records = proxy.summaries(2, kind="http")
        page = next(r for r in records if "/page" in r["url"])
        api = next(r for r in records if "/api" in r["url"])
    assert ids(page) == ["cookie-over-http", "cookie-no-httponly", "cookie-no-samesite", "xcto-missing", "csp-missing",
                         "frame-protection-missing", "secret-in-query", "basic-auth-over-http", "server-version-disclosed"]
    assert ids(api) == ["cors-reflects-origin"]
    text = json.dumps(page["findings"])
    assert "s3cret-value" not in text and "k3y" not in text and "YWxpY2U6cHc" not in text, "no secret in the evidence"
    cookie = next(f for f in page["findings"] if f["id"] == "cookie-over-http")
    assert cookie == {"id": "cookie-over-http", "severity": "medium", "cwe": 319, "evidence": "Set-Cookie: sid=[redacted]"}
    # Where people look: the filter, the summary by finding, /metrics.
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--filter", "finding:cors-*", "--format", "jsonl")
    assert rc == 0 and [json.loads(line)["id"] for line in out.splitlines()] == [api["id"]]
    rc, out, _ = lookout_log(proxy, "summary", str(proxy.log_path), "--by", "finding")
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:]}
    assert rows["cookie-over-http"] == "1" and rows["cors-reflects-origin"] == "1", out
    page_metrics = urllib.request.urlopen(f"{proxy.url}/metrics", timeout=10).read().decode()
    assert 'lookout_findings_total{id="basic-auth-over-http",severity="high"} 1' in page_metrics


def test_intercepted_https_findings_and_what_is_turned_off(make_proxy, pki, good_origin):
    config = intercepting(pki, good_origin, audit={
        "enabled": True, "disable": ["server-version-disclosed"],
        "rules": [{"hosts": ["localhost"], "disable": ["hsts-missing"]}]})
    proxy = make_proxy(config)
    result = curl(proxy, f"https://localhost:{good_origin.port}/fixed/10", "--cacert", ca_file(proxy))
    assert result.rc == 0
    record = proxy.only_summary(kind="intercepted")
    assert "cookie-over-http" not in ids(record) and "server-version-disclosed" not in ids(record)
    # The test origin answers text/plain: no document findings; its TLS is modern and trusted.
    assert not any(i.startswith("tls-") or i == "trust-evaluation-disabled" for i in ids(record)), ids(record)


def test_https_document_findings_through_interception(make_proxy, pki):
    with ScriptedOrigin(tls=pki.good.tls) as origin:
        origin.route("/page", (200, {"Content-Type": "text/html", "Set-Cookie": "sid=x; Path=/",
                                     "Strict-Transport-Security": "max-age=600"}, b"<html></html>"))
        origin.route("/safe", (200, {"Content-Type": "text/html", "Set-Cookie": "sid=x; Secure; HttpOnly; SameSite=Lax",
                                     "Strict-Transport-Security": "max-age=31536000", "X-Content-Type-Options": "nosniff",
                                     "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'"}, b"<html></html>"))
        proxy = make_proxy(intercepting(pki, origin, audit={"enabled": True}))
        for path in ("/page", "/safe"):
            assert curl(proxy, origin.url(path), "--cacert", ca_file(proxy)).rc == 0
        records = {r["url"].rsplit("/", 1)[1]: r for r in proxy.summaries(2, kind="intercepted")}
    assert ids(records["page"]) == ["cookie-no-secure", "cookie-no-httponly", "cookie-no-samesite", "hsts-weak", "xcto-missing",
                                    "csp-missing", "frame-protection-missing"], ids(records["page"])
    assert ids(records["safe"]) == [], "a well-configured page has no finding"


def test_an_unknown_finding_id_is_a_config_error(make_proxy):
    proxy = make_proxy({"audit": {"enabled": True, "disable": ["hsts-mising"]}}, start=False)
    import subprocess
    from conftest import client_env
    check = subprocess.run([str(proxy.binary), "config", "check", str(proxy.config_path)], capture_output=True, text=True,
                           env=client_env())
    assert check.returncode != 0 and "audit.disable[0]" in check.stderr + check.stdout and "hsts-mising" in check.stderr + check.stdout


def test_the_ui_groups_findings_by_id_with_the_exchanges_behind_each(make_proxy):
    import pytest
    pytest.importorskip("selenium")
    from conftest import wait_until
    from selenium.webdriver.common.by import By
    from browser import start_chromium
    import tempfile
    from pathlib import Path
    with ScriptedOrigin() as origin:
        origin.route("/page", BAD_PAGE)
        origin.route("/api", CORS)
        proxy = make_proxy({"audit": {"enabled": True}})
        driver = start_chromium(Path(tempfile.mkdtemp()))
        try:
            driver.get(f"http://127.0.0.1:{proxy.port}/ui/")
            wait_until(lambda: driver.find_element(By.ID, "stream-state").text == "live", timeout=10)
            for path in ("/page", "/page", "/api"):
                curl(proxy, origin.url(path), "-H", "Origin: https://evil.test")
            wait_until(lambda: driver.execute_script("return state.rows.length") == 3, timeout=10)
            driver.find_element(By.ID, "findings").click()
            groups = driver.execute_script("""return [...document.querySelectorAll('#findings-view .finding-group')]
                .map(g => [g.dataset.finding, g.querySelectorAll('a.finding-exchange').length])""")
            assert groups[0][1] == 2 and ["cors-reflects-origin", 1] in groups and ["cookie-over-http", 2] in groups, groups
            driver.find_element(By.CSS_SELECTOR, '[data-finding="cors-reflects-origin"] a.finding-exchange').click()
            wait_until(lambda: "#" in driver.find_element(By.ID, "detail-title").text, timeout=5)
            assert "/api" in driver.find_element(By.ID, "detail-title").text
            assert "cors-reflects-origin" in driver.find_element(By.CSS_SELECTOR, ".section-findings").text
        finally:
            driver.quit()
