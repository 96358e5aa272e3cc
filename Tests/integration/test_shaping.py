"""Traffic shaping for testing: map remote and map local, per-host latency and
bandwidth both ways, injected faults, and tunnels — each measured against the clock, each
application a record (`request.didMapRemote`, `request.didMapLocal`, `request.didShape`,
`request.didInjectFault`, `tunnel.didShape`) and a part of the summary (`mapped_from`, `shaping`).

Origins are Python servers on 127.0.0.1; mapped-from hosts such as `api.mapped.test` are never
resolved (the map sends the request elsewhere first)."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import statistics
import subprocess
import threading
import time

import pytest

import origins
from conftest import Reader, connect, curl, free_port, read_response, request_bytes, rss_kib
from origins import ScriptedOrigin, echo

MiB = 1 << 20


def shaped(hosts, **rule) -> dict:
    return {"shaping": {"rules": [{"hosts": list(hosts), **rule}]}}


def proxied_get(proxy, url: str, headers: dict | None = None, timeout: float = 60) -> tuple[float, bytes, bytes]:
    """Sends a GET for `url` through the proxy on a fresh connection; (seconds until the whole
    response was read, head, body)."""
    sock = connect(proxy.port, timeout=timeout)
    try:
        start = time.monotonic()
        sock.sendall(request_bytes("GET", url, headers=list((headers or {}).items()) + [("Connection", "close")]))
        reader = Reader(sock, timeout=timeout)
        data = reader.read_to_eof()
        elapsed = time.monotonic() - start
    finally:
        sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return elapsed, head, body


# MARK: - Latency


def arrival_delays(proxy, site, count: int) -> list[float]:
    """Seconds from sending each GET for /t to its arrival at `site`, one connection each."""
    delays = []
    for _ in range(count):
        sock = connect(proxy.port)
        sent = time.monotonic()
        sock.sendall(request_bytes("GET", site.url("/t"), headers=[("Connection", "close")]))
        response = read_response(Reader(sock))
        sock.close()
        assert response.status == 200
        delays.append(site.received[-1].at - sent)
    return delays


def test_latency_is_added_before_the_request_goes_upstream(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/t", (200, {}, b"ok"))
        baseline = statistics.median(arrival_delays(make_proxy({}), site, 5))
        proxy = make_proxy(shaped(["127.0.0.1"], latency_ms=300))
        delays = arrival_delays(proxy, site, 5)
        # Each request reached the origin at least 300 ms late, and 300 ms later than without the
        # rule give or take 10 ms (medians: one slow wake-up of the Python origin does not count).
        assert min(delays) >= 0.299, delays
        assert abs(statistics.median(delays) - baseline - 0.300) <= 0.010, (delays, baseline)
        recs = proxy.summaries(5, kind="http")
        for rec in recs:
            assert rec["shaping"] == {"rule": "127.0.0.1", "latency_ms": 300, "download_kbps": 0, "upload_kbps": 0}, rec
            assert rec["timings_ms"]["total"] >= 300, rec
        events = proxy.log_records(5, lambda r: r.get("event") == "request.didShape")
        assert {e["latency_ms"] for e in events} == {300}, events


def test_jitter_stays_within_its_bounds(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/t", (200, {}, b"ok"))
        proxy = make_proxy(shaped(["127.0.0.1"], latency_ms=200, jitter_ms=100))
        delays = arrival_delays(proxy, site, 12)
        assert all(0.099 <= d <= 0.330 for d in delays), delays
        drawn = [r["shaping"]["latency_ms"] for r in proxy.summaries(12, kind="http")]
        assert all(100 <= d <= 300 for d in drawn), drawn
        assert len(set(drawn)) > 6, f"the latency should vary: {drawn}"


def test_unshaped_hosts_on_the_same_pool_are_not_slowed(make_proxy, origin):
    # Two client-side hosts map to one origin (one pool); only one of them is shaped.
    target = f"http://127.0.0.1:{origin.port}/"
    proxy = make_proxy({
        "map": {"remote": [{"from": "http://slow.mapped.test/", "to": target},
                           {"from": "http://fast.mapped.test/", "to": target}]},
        **shaped(["slow.mapped.test"], download_kbps=800, latency_ms=200),
    })
    result: dict = {}
    slow = threading.Thread(target=lambda: result.update(slow=proxied_get(proxy, "http://slow.mapped.test/fixed/262144")))
    slow.start()
    time.sleep(0.5)
    fast_times = []
    for _ in range(5):
        elapsed, head, body = proxied_get(proxy, "http://fast.mapped.test/fixed/262144")
        assert head.startswith(b"HTTP/1.1 200") and body == origins.pattern(262144)
        fast_times.append(elapsed)
    slow.join(30)
    assert max(fast_times) < 0.5, fast_times
    elapsed, head, body = result["slow"]
    assert body == origins.pattern(262144)
    assert elapsed == pytest.approx(0.2 + 262144 * 8 / 800_000, rel=0.05), elapsed
    recs = proxy.summaries(6, kind="http")
    assert sum(1 for r in recs if "shaping" in r) == 1, recs


# MARK: - Bandwidth


def test_a_download_is_paced_at_its_rate(make_proxy, origin):
    proxy = make_proxy(shaped(["127.0.0.1"], download_kbps=800))
    elapsed, head, body = proxied_get(proxy, origin.url(f"/fixed/{MiB}"))
    assert head.startswith(b"HTTP/1.1 200") and len(body) == MiB
    assert hashlib.sha256(body).hexdigest() == origins.expected_sha256(MiB)
    # 1 MiB at 800 kbit/s is 10.49 s.
    assert elapsed == pytest.approx(MiB * 8 / 800_000, rel=0.05), elapsed
    rec = proxy.only_summary(kind="http")
    assert rec["shaping"]["download_kbps"] == 800 and rec["bytes"]["response_body"] == MiB, rec


def test_pacing_is_backpressure_not_buffering(make_proxy, origin):
    # 1 GiB offered at loopback speed, paced at 1 MB/s: the origin is held back, not read ahead.
    proxy = make_proxy(shaped(["127.0.0.1"], download_kbps=8000))
    sock = connect(proxy.port, timeout=30)
    try:
        sock.sendall(request_bytes("GET", origin.url(f"/huge/{1 << 30}")))
        before = rss_kib(proxy.proc.pid)
        received = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            received += len(sock.recv(1 << 16))
        grown = rss_kib(proxy.proc.pid) - before
    finally:
        sock.close()
    assert 2 * MiB < received < 4 * MiB, received
    assert grown < 16 * 1024, f"RSS grew by {grown} KiB while pacing"


def test_an_upload_is_paced_at_its_rate(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/up", echo)
        proxy = make_proxy(shaped(["127.0.0.1"], upload_kbps=1600))
        body = origins.pattern(MiB)
        sock = connect(proxy.port, timeout=30)
        sent = time.monotonic()
        sock.sendall(request_bytes("POST", site.url("/up"), headers=[("Content-Type", "application/octet-stream"),
                                                               ("Content-Length", str(len(body)))], body=body))
        response = read_response(Reader(sock, timeout=30))
        sock.close()
        assert response.status == 200
        arrived = site.received[-1]
        assert arrived.body_length == len(body) and arrived.body_sha256 == hashlib.sha256(body).hexdigest()
        # 1 MiB at 1600 kbit/s is 5.24 s, measured where the body arrives.
        assert arrived.at - sent == pytest.approx(len(body) * 8 / 1_600_000, rel=0.05), arrived.at - sent
        rec = proxy.only_summary(kind="http")
        assert rec["shaping"]["upload_kbps"] == 1600 and rec["bytes"]["request_body"] == len(body), rec


def test_a_profile_gives_its_numbers_and_the_rule_overrides_them(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/t", (200, {}, b"ok"))
        proxy = make_proxy(shaped(["127.0.0.1"], profile="fast-3g", latency_ms=50))
        assert curl(proxy, site.url("/t")).status == 200
        rec = proxy.only_summary(kind="http")
        assert rec["shaping"] == {"rule": "127.0.0.1", "profile": "fast-3g", "latency_ms": 50,
                                  "download_kbps": 1440, "upload_kbps": 675}, rec


# MARK: - Faults


def test_an_injected_status_never_reaches_the_origin(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/t", (200, {}, b"ok"))
        proxy = make_proxy(shaped(["127.0.0.1"], faults={"status": {"code": 503, "rate": 1}}))
        result = curl(proxy, site.url("/t"))
        assert result.status == 503 and result.header("X-Lookout-Error") == "injected_fault", result
        assert site.received == []
        rec = proxy.only_summary(kind="http")
        assert rec["status"] == 503 and rec["error"]["code"] == "injected_fault", rec
        assert "faults.status" in rec["error"]["message"] and rec["shaping"]["faults"] == ["status"], rec
        [event] = proxy.log_records(1, lambda r: r.get("event") == "request.didInjectFault")
        assert event["fault"] == "status" and event["status"] == 503 and event["id"] == rec["id"], event


def test_an_injected_status_hits_its_share_of_requests(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/t", (200, {}, b"ok"))
        proxy = make_proxy(shaped(["127.0.0.1"], faults={"status": {"code": 429, "rate": 0.5}}))
        statuses = [curl(proxy, site.url("/t")).status for _ in range(40)]
        assert set(statuses) == {200, 429}, statuses
        # Binomial(40, 0.5): outside 8..32 once in ~10^5 runs.
        assert 8 <= statuses.count(429) <= 32, statuses
        assert len(site.received) == statuses.count(200)


def test_reset_after_bytes_cuts_the_client_off_there(make_proxy, origin):
    proxy = make_proxy(shaped(["127.0.0.1"], faults={"reset_after_bytes": 1000}))
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", origin.url("/fixed/100000")))
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Content-Length: 100000" in head and body == origins.pattern(1000), (head, len(body))
    rec = proxy.only_summary(kind="http")
    assert rec["status"] == 200 and rec["error"]["code"] == "injected_fault", rec
    assert rec["shaping"]["faults"] == ["reset_after_bytes"], rec


def test_a_stall_holds_the_body_after_the_head(make_proxy, origin):
    proxy = make_proxy(shaped(["127.0.0.1"], faults={"stall_ms": 500}))
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", origin.url("/fixed/5000")))
    reader = Reader(sock)
    head = reader.read_until(b"\r\n\r\n")
    at_head = time.monotonic()
    body = reader.read_exact(5000)
    stalled = time.monotonic() - at_head
    sock.close()
    assert head is not None and body == origins.pattern(5000)
    assert 0.49 <= stalled <= 0.6, stalled
    rec = proxy.only_summary(kind="http")
    assert rec["shaping"]["faults"] == ["stall"] and "error" not in rec, rec


# MARK: - Map remote and map local


def test_map_remote_rewrites_the_target_and_host(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/api/users", echo)
        proxy = make_proxy({"map": {"remote": [{"from": "http://api.mapped.test/v2/", "to": site.url("/api/")}]}})
        result = curl(proxy, "http://api.mapped.test/v2/users?page=2")
        assert result.status == 200, result
        [arrived] = site.received
        assert arrived.target == b"/api/users?page=2"
        assert arrived.header("Host") == f"127.0.0.1:{site.port}"
        rec = proxy.only_summary(kind="http")
        assert rec["url"] == site.url("/api/users?page=2"), rec
        assert rec["mapped_from"] == "http://api.mapped.test/v2/users?page=2", rec
        [event] = proxy.log_records(1, lambda r: r.get("event") == "request.didMapRemote")
        assert event["from"] == "http://api.mapped.test/v2/" and event["mapped_url"] == rec["url"], event


def test_map_remote_can_preserve_the_host(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/v2/x", echo)
        proxy = make_proxy({"map": {"remote": [{"from": "http://api.mapped.test:8081", "to": site.url("/"),
                                                "preserve_host": True}]}})
        assert curl(proxy, "http://api.mapped.test:8081/v2/x").status == 200
        assert site.received[0].header("Host") == "api.mapped.test:8081"
        assert site.received[0].target == b"/v2/x"


def test_map_remote_from_https_to_http_needs_allow_downgrade(make_proxy, pki):
    tls_origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        with ScriptedOrigin() as plain:
            plain.route("/r", (200, {"Content-Type": "text/plain"}, b"plain answer"))
            intercepting = {"connect": {"allowed_ports": [tls_origin.port]}, "interception": {"hosts": ["localhost"]},
                            "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]}}
            rule = {"from": f"https://localhost:{tls_origin.port}/r", "to": plain.url("/r")}
            proxy = make_proxy({**intercepting, "map": {"remote": [rule]}})
            ca = str(proxy.workdir / "state" / "ca.pem")
            refused = curl(proxy, f"https://localhost:{tls_origin.port}/r", "--cacert", ca)
            assert refused.status == 502 and refused.header("X-Lookout-Error") == "map_downgrade_refused", refused
            assert plain.received == []
            rec = proxy.only_summary(kind="intercepted")
            assert rec["error"]["code"] == "map_downgrade_refused" and "allow_downgrade" in rec["error"]["message"], rec

            allowed = make_proxy({**intercepting, "map": {"remote": [{**rule, "allow_downgrade": True}]}})
            ca = str(allowed.workdir / "state" / "ca.pem")
            result = curl(allowed, f"https://localhost:{tls_origin.port}/r", "--cacert", ca)
            assert result.status == 200 and result.body == b"plain answer", result
            rec = allowed.only_summary(kind="intercepted")
            assert rec["mapped_from"] == f"https://localhost:{tls_origin.port}/r" and rec["url"] == plain.url("/r"), rec
    finally:
        tls_origin.stop()


def test_map_local_answers_from_files(make_proxy, tmp_path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    document = {"feature": True, "items": [1, 2, 3]}
    (fixtures / "config.json").write_text(json.dumps(document))
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    (fixtures / "logo.png").write_bytes(png)
    (fixtures / "gone.txt").write_text("not here\n")
    proxy = make_proxy({"map": {"local": [
        {"from": "http://api.mapped.test/config.json", "file": str(fixtures / "config.json")},
        {"from": "http://api.mapped.test/logo.png", "file": str(fixtures / "logo.png")},
        {"from": "http://api.mapped.test/gone", "file": str(fixtures / "gone.txt"), "status": 404},
    ]}})
    result = curl(proxy, "http://api.mapped.test/config.json?v=3")
    assert result.status == 200 and json.loads(result.body) == document
    assert result.header("Content-Type") == "application/json"
    image = curl(proxy, "http://api.mapped.test/logo.png")
    assert image.status == 200 and image.body == png and image.header("Content-Type") == "image/png"
    missing = curl(proxy, "http://api.mapped.test/gone")
    assert missing.status == 404 and missing.body == b"not here\n"
    assert missing.header("Content-Type") == "text/plain; charset=utf-8"
    head = curl(proxy, "http://api.mapped.test/config.json", "-I")
    # HEAD: the length the GET would have, and no body (curl -I writes the head where the body would go).
    assert head.rc == 0 and head.status == 200 and head.header("Content-Length") == str(len(json.dumps(document)))
    assert head.body.endswith(b"\r\n\r\n"), head.body
    recs = proxy.summaries(4, kind="http")
    first = recs[0]
    assert first["mapped_from"] == "http://api.mapped.test/config.json?v=3", first
    assert first["url"] == "file://" + str(fixtures / "config.json") and "upstream" not in first, first
    events = proxy.log_records(4, lambda r: r.get("event") == "request.didMapLocal")
    assert [e["status"] for e in events] == [200, 200, 404, 200], events
    assert events[1]["bytes"] == len(png) and events[1]["content_type"] == "image/png", events


def test_map_local_file_gone_at_request_time_is_a_clear_error(make_proxy, tmp_path):
    fixture = tmp_path / "answer.json"
    fixture.write_text("{}")
    proxy = make_proxy({"map": {"local": [{"from": "http://api.mapped.test/a", "file": str(fixture)}]}})
    fixture.unlink()
    result = curl(proxy, "http://api.mapped.test/a")
    assert result.status == 500 and result.header("X-Lookout-Error") == "map_local_unreadable", result
    rec = proxy.only_summary(kind="http")
    assert str(fixture) in rec["error"]["message"], rec


def config_check(lookout_bin, path):
    return subprocess.run([str(lookout_bin), "config", "check", str(path)], capture_output=True, text=True, timeout=20)


def test_config_check_names_a_missing_map_local_file(lookout_bin, tmp_path):
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "ok.json").write_text("{}")
    config = tmp_path / "lookout.yaml"
    config.write_text('map:\n  local:\n    - from: "https://api.example.com/ok.json"\n      file: "fixtures/ok.json"\n'
                      '    - from: "https://api.example.com/config.json"\n      file: "fixtures/config.json"\n')
    check = config_check(lookout_bin, config)
    assert check.returncode == 1, check.stdout
    missing = tmp_path / "fixtures" / "config.json"
    assert re.search(rf"^{re.escape(str(config))}:6:\d+: map\.local\[1\]\.file: {re.escape(str(missing))}: no such file",
                     check.stderr, re.M), check.stderr
    assert "ok.json" not in check.stderr, check.stderr


@pytest.mark.parametrize("section, message", [
    ('shaping:\n  rules:\n    - hosts: ["a.test"]\n      profile: "5g"\n', r"shaping\.rules\[0\]\.profile: unknown profile"),
    ('shaping:\n  rules:\n    - hosts: ["a.test"]\n      latency_ms: 10\n      jitter_ms: 20\n', r"jitter_ms: must not exceed latency_ms"),
    ('shaping:\n  rules:\n    - hosts: ["a.test"]\n      download_kbps: -5\n', r"download_kbps: must not be negative"),
    ('shaping:\n  rules:\n    - hosts: ["a.test"]\n      faults:\n        status: {code: 200}\n', r"status\.code: an injected status is an error"),
    ('shaping:\n  rules:\n    - hosts: ["a.test"]\n      faults:\n        status: {code: 503, rate: 1.5}\n', r"status\.rate: expected the share"),
    ('map:\n  remote:\n    - from: "ftp://a.test/"\n      to: "http://127.0.0.1:1/"\n', r"map\.remote\[0\]\.from: .*expected an http:// or https:// URL"),
    ('map:\n  remote:\n    - from: "http://a.test/"\n      to: "http://*.b.test/"\n', r"map\.remote\[0\]\.to: .*one host, not a pattern"),
    ('map:\n  remote:\n    - from: "http://a.test/"\n', r"map\.remote\[0\]\.to: a map remote rule needs to"),
])
def test_config_check_refuses_bad_map_and_shaping_rules(lookout_bin, tmp_path, section, message):
    config = tmp_path / "bad.yaml"
    config.write_text(section)
    check = config_check(lookout_bin, config)
    assert check.returncode == 1, check.stdout
    assert re.search(message, check.stderr), check.stderr


def test_the_issue_example_config_is_valid(lookout_bin, tmp_path):
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "config.json").write_text("{}")
    config = tmp_path / "lookout.yaml"
    config.write_text("""map:
  remote:
    - from: "https://api.example.com/v2/"
      to: "http://127.0.0.1:3000/"
      preserve_host: false
  local:
    - from: "https://api.example.com/config.json"
      file: "fixtures/config.json"
      status: 200
shaping:
  rules:
    - hosts: ["api.example.com"]
      profile: ""
      latency_ms: 300
      jitter_ms: 50
      download_kbps: 1600
      upload_kbps: 750
      faults:
        status: {code: 503, rate: 0.1}
        reset_after_bytes: 0
        stall_ms: 0
""")
    check = config_check(lookout_bin, config)
    assert check.returncode == 0, check.stderr


# MARK: - Tunnels


def test_a_blind_tunnel_gets_latency_and_bandwidth(make_proxy, origin):
    proxy = make_proxy({"connect": {"allowed_ports": [origin.port]},
                        **shaped(["127.0.0.1"], latency_ms=300, download_kbps=800, upload_kbps=800)})
    sock = connect(proxy.port, timeout=30)
    start = time.monotonic()
    sock.sendall(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\nHost: 127.0.0.1:{origin.port}\r\n\r\n".encode())
    reader = Reader(sock, timeout=30)
    assert reader.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200")
    opened = time.monotonic() - start
    # The latency was waited; the upper bound leaves room for a busy 2-core machine's scheduling.
    assert 0.299 <= opened <= 0.450, opened
    size = 256 * 1024
    start = time.monotonic()
    sock.sendall(f"GET /fixed/{size} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    response = read_response(reader)
    elapsed = time.monotonic() - start
    sock.close()
    assert response.status == 200 and response.body == origins.pattern(size)
    assert elapsed == pytest.approx(size * 8 / 800_000, rel=0.05), elapsed
    rec = proxy.only_summary(kind="tunnel")
    assert rec["shaping"]["latency_ms"] == 300 and rec["bytes"]["upstream_to_client"] > size, rec
    [event] = proxy.log_records(1, lambda r: r.get("event") == "tunnel.didShape")
    assert event["download_kbps"] == 800, event


# MARK: - HTTP/2 clients


def test_an_intercepted_http2_stream_is_paced_and_can_be_reset(make_proxy, pki):
    tls_origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        proxy = make_proxy({"connect": {"allowed_ports": [tls_origin.port]}, "interception": {"hosts": ["localhost"]},
                            "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]},
                            "shaping": {"rules": [{"hosts": ["localhost"], "download_kbps": 800}]}})
        ca = str(proxy.workdir / "state" / "ca.pem")
        size = 256 * 1024
        start = time.monotonic()
        result = curl(proxy, f"https://localhost:{tls_origin.port}/fixed/{size}", "--http2", "--cacert", ca)
        elapsed = time.monotonic() - start
        assert result.rc == 0 and result.is_http2 and result.body == origins.pattern(size), result.stderr
        # The TLS handshakes add a few milliseconds to the 2.62 s the body takes at 800 kbit/s.
        assert elapsed == pytest.approx(size * 8 / 800_000, rel=0.05), elapsed
        rec = proxy.only_summary(kind="intercepted")
        assert rec["http_version"] == "HTTP/2" and rec["shaping"]["download_kbps"] == 800, rec

        cut = make_proxy({"connect": {"allowed_ports": [tls_origin.port]}, "interception": {"hosts": ["localhost"]},
                          "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]},
                          "shaping": {"rules": [{"hosts": ["localhost"], "faults": {"reset_after_bytes": 5000}}]}})
        result = curl(cut, f"https://localhost:{tls_origin.port}/fixed/100000", "--http2",
                      "--cacert", str(cut.workdir / "state" / "ca.pem"))
        assert result.rc != 0 and result.body == origins.pattern(5000), (result.rc, len(result.body), result.stderr)
        rec = cut.only_summary(kind="intercepted")
        assert rec["error"]["code"] == "injected_fault" and rec["shaping"]["faults"] == ["reset_after_bytes"], rec
    finally:
        tls_origin.stop()
