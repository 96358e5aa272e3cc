"""Prometheus metrics (`GET /metrics`, `metrics.*`, `admin.listen`): known traffic through the proxy
against scripted origins on 127.0.0.1, then the exposition read back and every series checked
against what was sent — parsed here, by promtool (Prometheus's own parser and linter), and by a
real Prometheus from Debian that the test starts on loopback to scrape Lookout and answer queries
through its HTTP API."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import urllib.parse
import urllib.request

import pytest

from conftest import (assert_error_response, assert_error_summary, connect, curl, free_port, raw_exchange,
                      read_response, request_bytes, wait_until, Reader)
from origins import ScriptedOrigin
import origins
from origins import RawOrigin, behave_echo

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
WRONG_PIN = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


# MARK: reading the exposition

def fetch_metrics(port: int) -> str:
    """GET /metrics as an origin-form request (no proxy), checking the media type."""
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert response.headers["Cache-Control"] == "no-store"
        return response.read().decode()


def parse(text: str) -> list[tuple[str, dict, float]]:
    """The samples of a text exposition: (name, labels, value); comments skipped."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, brace, rest = series.partition("{")
        labels = {}
        if brace:
            rest = rest[:-1]
            i = 0
            while i < len(rest):
                eq = rest.index("=", i)
                key = rest[i:eq]
                j = eq + 2
                out = []
                while rest[j] != '"':
                    if rest[j] == "\\":
                        j += 1
                    out.append(rest[j])
                    j += 1
                labels[key] = "".join(out)
                i = j + 2 if j + 1 < len(rest) and rest[j + 1] == "," else j + 1
        samples.append((name, labels, float(value)))
    return samples


class Scrape:
    def __init__(self, text: str):
        self.text = text
        self.samples = parse(text)

    def value(self, name: str, **labels) -> float | None:
        """The one sample of `name` with exactly `labels` (None when there is none)."""
        found = [v for n, l, v in self.samples if n == name and l == labels]
        assert len(found) <= 1, (name, labels, found)
        return found[0] if found else None

    def series(self, name: str) -> list[dict]:
        return [l for n, l, _ in self.samples if n == name]


def scrape(port: int) -> Scrape:
    return Scrape(fetch_metrics(port))


def scrape_when(proxy, predicate, timeout: float = 5.0) -> Scrape:
    """Scrapes until `predicate(scrape)` holds: the monitor counts on its own queue, a few ms late."""
    latest = {}

    def ready():
        latest["s"] = scrape(proxy.port)
        return predicate(latest["s"])

    wait_until(ready, timeout=timeout, message="metrics never showed the traffic")
    return latest["s"]


def http_count(s: Scrape, status_class: str, code: str = "", method: str = "GET", **more) -> float | None:
    return s.value("lookout_exchanges_total", kind="http", method=method, status_class=status_class, code=code, **more)


# MARK: fixtures

@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/ok", (200, {}, b"x" * 1000))
        o.route("/missing", (404, {}, b"none"))
        yield o


# MARK: what the series count

def test_exchanges_by_kind_method_status_class_and_code(make_proxy, site):
    proxy = make_proxy()
    closed = free_port()
    for _ in range(5):
        assert curl(proxy, site.url("/ok")).status == 200
    for _ in range(2):
        assert curl(proxy, site.url("/missing")).status == 404
    assert curl(proxy, site.url("/ok"), "-X", "POST", "--data-binary", "abc").status == 200
    assert_error_response(curl(proxy, f"http://127.0.0.1:{closed}/"), 502, "upstream_connect_failed")
    resp, _ = raw_exchange(proxy.port, b"BREW /pot HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert resp.status == 400  # an origin-form request that is no admin page

    s = scrape_when(proxy, lambda s: s.value("lookout_exchanges_total", kind="admin", method="OTHER",
                                             status_class="4xx", code="not_a_proxy_request") == 1)
    assert http_count(s, "5xx", "upstream_connect_failed") == 1
    assert http_count(s, "2xx") == 5
    assert http_count(s, "4xx") == 2
    assert http_count(s, "2xx", method="POST") == 1
    # Every plain exchange has a total; the 8 that reached the origin have every upstream phase.
    assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase="total") == 9
    for phase in ("send", "wait", "receive"):
        assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase=phase) == 8, phase
    # DNS and connect happen on new upstream connections only (the origin keeps them alive), and
    # once more for the refused connect, which has no connect phase.
    new = s.value("lookout_upstream_requests_total", connection="new")
    assert new + s.value("lookout_upstream_requests_total", connection="reused") == 8
    assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase="dns") == new + 1
    assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase="connect") == new
    assert s.value("lookout_exchange_phase_seconds_bucket", kind="http", phase="total", le="+Inf") == 9
    assert s.value("lookout_exchange_phase_seconds_sum", kind="http", phase="wait") > 0
    assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase="tls") is None
    # Bytes on the upstream wire: 6 bodies of 1000, 2 of 4, and a 3-byte request body.
    assert s.value("lookout_response_bytes_total", kind="http") >= 6 * 1000 + 2 * 4
    assert s.value("lookout_request_bytes_total", kind="http") >= 3
    assert s.value("lookout_build_info", version="0.1.0") == 1
    assert all("host" not in labels for labels in s.series("lookout_exchanges_total"))


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus package) is not installed")
def test_promtool_parses_and_lints_the_exposition(make_proxy, site):
    proxy = make_proxy({"cache": {"enabled": True}})
    assert curl(proxy, site.url("/ok")).status == 200
    assert_error_response(curl(proxy, f"http://127.0.0.1:{free_port()}/"), 502, "upstream_connect_failed")
    text = scrape_when(proxy, lambda s: http_count(s, "2xx") == 1).text
    checked = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    assert checked.stdout.decode().strip() == "" and checked.stderr.decode().strip() == "", "promtool lint findings"


def test_pool_reuse_retries_redirects_and_cache_lookups(make_proxy, site):
    site.route("/flaky", (503, {}, b"busy"), (200, {}, b"ok"))
    site.route("/from", (302, {"Location": "/ok"}, b""))
    site.route("/stored", (200, {"Cache-Control": "max-age=60"}, b"cached"))
    proxy = make_proxy({
        "retry": {"rules": [{"hosts": ["**"], "limit": 2, "backoff": {"base": 0.01, "jitter": False}}]},
        "redirects": {"rules": [{"hosts": ["**"], "follow": True}]},
        "cache": {"enabled": True},
    })
    # One curl, three URLs: one client connection, and the pooled upstream connection is reused.
    r = curl(proxy, site.url("/ok"), site.url("/ok"), site.url("/ok"))
    assert r.status == 200
    assert curl(proxy, site.url("/flaky")).status == 200
    assert curl(proxy, site.url("/from")).status == 200
    assert curl(proxy, site.url("/stored")).status == 200
    assert curl(proxy, site.url("/stored")).status == 200

    s = scrape_when(proxy, lambda s: s.value("lookout_cache_lookups_total", status="hit") == 1)
    assert s.value("lookout_retries_total") == 1
    assert s.value("lookout_redirects_total") == 1
    assert s.value("lookout_cache_lookups_total", status="miss") == 6
    attempts = 3 + 2 + 2 + 1  # /ok ×3, /flaky twice, /from then /ok, /stored once
    new = s.value("lookout_upstream_requests_total", connection="new")
    reused = s.value("lookout_upstream_requests_total", connection="reused")
    assert new + reused == attempts and reused >= 2, (new, reused)


def test_tunnel_bytes_each_way_and_rejected_connections(make_proxy):
    echo = RawOrigin(behave_echo).start()
    try:
        proxy = make_proxy({"connect": {"allowed_ports": [echo.port]}, "max_connections": 2})
        sock = connect(proxy.port)
        sock.sendall(request_bytes("CONNECT", f"127.0.0.1:{echo.port}", host=f"127.0.0.1:{echo.port}"))
        reader = Reader(sock)
        assert reader.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200")
        sock.sendall(b"a" * 3000)
        assert reader.read_exact(3000) == b"a" * 3000
        sock.sendall(b"b" * 500)
        assert reader.read_exact(500) == b"b" * 500
        # The tunnel and one more connection fill max_connections: a third is refused.
        other = connect(proxy.port)
        refused = connect(proxy.port)
        assert Reader(refused).read_to_eof().startswith(b"HTTP/1.1 503")
        refused.close()
        other.close()
        sock.shutdown(socket.SHUT_WR)
        assert reader.read_to_eof() == b""
        sock.close()

        s = scrape_when(proxy, lambda s: s.value("lookout_tunnel_bytes_total", kind="tunnel",
                                                 direction="client_to_upstream") is not None)
        assert s.value("lookout_tunnel_bytes_total", kind="tunnel", direction="client_to_upstream") == 3500
        assert s.value("lookout_tunnel_bytes_total", kind="tunnel", direction="upstream_to_client") == 3500
        assert s.value("lookout_exchanges_total", kind="tunnel", method="CONNECT", status_class="2xx", code="") == 1
        assert s.value("lookout_connections_rejected_total", code="too_many_connections") == 1
    finally:
        echo.stop()


def test_open_connections_and_exchanges_in_flight_are_read_at_each_scrape(make_proxy, site):
    release = threading.Event()

    def slow(_req):
        release.wait(10)
        return 200, {}, b"late"

    site.route("/slow", slow)
    proxy = make_proxy({"pool": {"idle_timeout": 0.5}})
    # A keep-alive client that finished its exchange: its connection and the pooled upstream stay open.
    idle = connect(proxy.port)
    idle.sendall(request_bytes("GET", site.url("/ok")))
    assert read_response(Reader(idle)).status == 200
    # A second client waits on a slow answer.
    waiting = connect(proxy.port)
    waiting.sendall(request_bytes("GET", site.url("/slow")))
    wait_until(lambda: site.requests_for("/slow"), message="the slow request never reached the origin")

    s = scrape(proxy.port)
    assert s.value("lookout_exchanges_in_flight") == 1
    assert s.value("lookout_client_connections_open") == 3  # idle, waiting, and this scrape
    assert s.value("lookout_upstream_connections_open") == 2  # the pooled one and the slow one's

    release.set()
    assert read_response(Reader(waiting)).status == 200
    idle.close()
    waiting.close()
    # Pooled connections expire after pool.idle_timeout; closed clients leave the count.
    s = scrape_when(proxy, lambda s: s.value("lookout_upstream_connections_open") == 0
                    and s.value("lookout_client_connections_open") == 1)
    assert s.value("lookout_exchanges_in_flight") == 0


def test_trust_evaluations_by_rule_result_and_reason(make_proxy, pki):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        trusting = {"trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]}}
        pinned = {"trust": {**trusting["trust"], "rules": [
            {"name": "local", "hosts": ["localhost"], "evaluators": ["default", "public-keys"], "pins": [WRONG_PIN]}]}}
        passing = make_proxy(trusting)
        refusing = make_proxy(pinned)
        url = f"https://localhost:{origin.port}/fixed/10"  # absolute-form https: Lookout originates TLS
        for _ in range(3):  # a trust evaluation per handshake: per new connection, not per request
            resp, _ = raw_exchange(passing.port, request_bytes("GET", url))
            assert resp.status == 200
        resp, _ = raw_exchange(refusing.port, request_bytes("GET", url))
        assert_error_response(resp, 502, "server_trust_evaluation_failed")

        s = scrape_when(passing, lambda s: http_count(s, "2xx") == 3)
        handshakes = s.value("lookout_upstream_requests_total", connection="new")
        assert handshakes + s.value("lookout_upstream_requests_total", connection="reused") == 3
        assert s.value("lookout_trust_evaluations_total", rule="default", result="passed", reason="") == handshakes
        assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase="tls") == handshakes
        s = scrape_when(refusing, lambda s: http_count(s, "5xx", "server_trust_evaluation_failed") == 1)
        assert s.value("lookout_trust_evaluations_total", rule="local", result="failed", reason="pin_mismatch") == 1
        assert s.series("lookout_trust_evaluations_total") == [{"rule": "local", "result": "failed", "reason": "pin_mismatch"}]
    finally:
        origin.stop()


def test_host_labels_only_for_listed_hosts(make_proxy, site):
    proxy = make_proxy({"metrics": {"host_labels": ["localhost"]}})
    assert curl(proxy, f"http://localhost:{site.port}/ok").status == 200
    assert curl(proxy, f"http://localhost:{site.port}/ok").status == 200
    assert curl(proxy, site.url("/ok")).status == 200
    s = scrape_when(proxy, lambda s: http_count(s, "2xx", host="other") == 1)
    assert http_count(s, "2xx", host="localhost") == 2
    assert s.value("lookout_exchange_phase_seconds_count", kind="http", phase="total", host="localhost") == 2
    assert {labels["host"] for labels in s.series("lookout_exchanges_total")} <= {"localhost", "other"}


# MARK: where the page is served

def admin_port(proxy) -> int:
    """The `admin.listen` port: the second "listening on" line (it may follow the first a little later)."""
    wait_until(lambda: len(proxy.ports) == 2, message=proxy.stderr)
    return proxy.ports[1]


def test_admin_listen_serves_only_the_admin_pages(make_proxy, site):
    proxy = make_proxy({"admin": {"listen": "127.0.0.1:0"}})
    admin = admin_port(proxy)
    assert curl(proxy, site.url("/ok")).status == 200
    s = Scrape(fetch_metrics(admin))
    assert http_count(s, "2xx") in (0, 1, None)  # the proxy port's exchange, maybe not counted yet
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"http://127.0.0.1:{admin}/healthz", timeout=10) as response:
        assert response.read() == b"ok\n"

    # Proxy requests there are refused: 421 with the code, a record, and nothing reaches the origin.
    before = len(site.received)
    resp, _ = raw_exchange(admin, request_bytes("GET", site.url("/ok")))
    assert_error_response(resp, 421, "admin_listener_does_not_proxy")
    resp, _ = raw_exchange(admin, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 421, "admin_listener_does_not_proxy")
    assert len(site.received) == before
    records = proxy.summaries(where=lambda r: r.get("error", {}).get("code") == "admin_listener_does_not_proxy",
                              expected=2)
    for rec in records:
        assert_error_summary(rec, 421, "admin_listener_does_not_proxy")

    # The proxy port serves /metrics too.
    s = scrape_when(proxy, lambda s: s.value("lookout_exchanges_total", kind="tunnel", method="CONNECT",
                                             status_class="4xx", code="admin_listener_does_not_proxy") == 1)
    assert http_count(s, "4xx", "admin_listener_does_not_proxy") == 1


def test_metrics_off(make_proxy):
    proxy = make_proxy({"metrics": {"enabled": False}})
    resp, _ = raw_exchange(proxy.port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert_error_response(resp, 400, "not_a_proxy_request")
    status, _ = raw_exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert b"metrics:" not in status.body


def test_only_get_and_head(make_proxy):
    proxy = make_proxy()
    resp, _ = raw_exchange(proxy.port, b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
                                       b"Connection: close\r\n\r\n")
    assert resp.status == 405 and b"GET and HEAD only" in resp.body
    resp, _ = raw_exchange(proxy.port, b"HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                           method="HEAD")
    assert resp.status == 200 and int(resp.header("Content-Length")) > 0 and resp.body == b""


def test_a_public_admin_address_needs_access_clients(make_proxy):
    proxy = make_proxy({"admin": {"listen": "0.0.0.0:0"}}, start=False)
    checked = subprocess.run([str(proxy.binary), "config", "check", str(proxy.config_path)],
                             capture_output=True, timeout=30)
    assert checked.returncode != 0
    assert b"admin.listen on 0.0.0.0:0 (not a loopback address) would open the admin pages to anyone" in checked.stderr


# MARK: a real Prometheus

@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus (Debian's prometheus package) is not installed")
def test_prometheus_scrapes_lookout_and_answers_queries(make_proxy, site, tmp_path):
    proxy = make_proxy({"admin": {"listen": "127.0.0.1:0"}, "metrics": {"host_labels": ["127.0.0.1"]}})
    admin = admin_port(proxy)
    web = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: lookout\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{admin}']\n")
    server = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{web}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.err", "wb"))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def api(path: str, **query) -> dict:
        url = f"http://127.0.0.1:{web}/api/v1/{path}?{urllib.parse.urlencode(query)}"
        with opener.open(url, timeout=5) as response:
            return json.loads(response.read())

    def instant(expr: str) -> float | None:
        try:
            result = api("query", query=expr)["data"]["result"]
        except OSError:
            return None
        return float(result[0]["value"][1]) if len(result) == 1 else None

    try:
        for _ in range(7):
            assert curl(proxy, site.url("/ok")).status == 200
        for _ in range(3):
            assert curl(proxy, site.url("/missing")).status == 404
        ok = 'lookout_exchanges_total{kind="http",status_class="2xx",host="127.0.0.1"}'
        wait_until(lambda: instant(ok) == 7, timeout=30, interval=0.5,
                   message="Prometheus never stored the 7 exchanges: "
                           + (tmp_path / "prometheus.err").read_text()[-2000:])
        assert instant('lookout_exchanges_total{kind="http",status_class="4xx"}') == 3
        assert instant('sum(lookout_exchange_phase_seconds_count{kind="http",phase="total"})') == 10
        assert instant('up{job="lookout"}') == 1
        quantile = instant('histogram_quantile(0.5, sum by (le) (lookout_exchange_phase_seconds_bucket{phase="total"}))')
        assert quantile is not None and 0 < quantile < 5
        [target] = api("targets")["data"]["activeTargets"]
        assert target["health"] == "up" and target["lastError"] == "", target
        assert target["scrapeUrl"] == f"http://127.0.0.1:{admin}/metrics"
        # Prometheus's scrapes are admin exchanges like any other, logged and counted (from the
        # second scrape on: a page cannot count its own request).
        wait_until(lambda: (instant('sum(lookout_exchanges_total{kind="admin",status_class="2xx"})') or 0) >= 1,
                   timeout=10, interval=0.5, message="Prometheus's own scrapes were never counted")
        assert proxy.summaries(where=lambda r: r["kind"] == "admin" and r["url"].endswith("/metrics"))
    finally:
        server.terminate()
        server.wait(timeout=10)
