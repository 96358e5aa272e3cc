"""The JSON-lines log (Sources/LookoutMonitors/LOG.md): summary records, redaction, verbose lifecycle, SIGHUP reopen."""

from __future__ import annotations

import http.client
import json
import signal
import time

import pytest

import origins
from conftest import (TIMING_KEYS, assert_envelope, assert_http_summary, connect, curl, is_number,
                      raw_exchange, read_response, request_bytes, Reader, wait_until)

SECRETS = {
    "Authorization": "Bearer AUTH-SECRET-4f9a1c",
    "Cookie": "session=COOKIE-SECRET-77b2e0",
    "Proxy-Authorization": "Basic UFJPWFktU0VDUkVULWQ1ZTY=",
}
SET_COOKIE_SECRET = "SETCOOKIE-SECRET-0xC0FFEE"


def test_summary_record_is_exact(proxy, origin):
    url = origin.url("/fixed/1234")
    c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    c.request("GET", url)
    r = c.getresponse()
    assert r.read() == origins.pattern(1234)
    client = "%s:%d" % c.sock.getsockname()
    c.close()
    rec = proxy.only_summary()
    assert_http_summary(rec, method="GET", url=url, status=200, response_body=1234, request_body=0,
                        reused=False, upstream=origin.authority)
    assert rec["client"] == client
    assert rec["attempts"] == 1
    assert "cache" not in rec, "no cache configured: the field must be absent"
    assert set(rec["timings_ms"]) >= set(TIMING_KEYS)
    t = rec["timings_ms"]
    assert t["total"] >= max(v for v in (t["send"], t["wait"], t["receive"]) if v >= 0)
    # exactly one line carries the exchange, one JSON object terminated by "\n"
    lines = proxy.log_path.read_bytes().split(b"\n")
    exchange_lines = [ln for ln in lines if b'"exchange"' in ln]
    assert len(exchange_lines) == 1 and exchange_lines[0].startswith(b"{") and exchange_lines[0].endswith(b"}")


def test_ids_unique_and_conn_distinguishes_connections(proxy, origin):
    for _ in range(3):
        resp, _ = raw_exchange(proxy.port, request_bytes("GET", origin.url("/fixed/1"),
                                                         [("Connection", "close")]))
        assert resp.status == 200
    recs = proxy.summaries(3)
    assert len({r["id"] for r in recs}) == 3
    assert len({r["conn"] for r in recs}) == 3
    assert len({r["client"] for r in recs}) == 3


def test_timings_reflect_a_slow_body(proxy, origin):
    url = origin.url("/slow?pieces=3&interval=0.5")
    r = curl(proxy, url)
    assert r.rc == 0 and r.body == origins.slow_body(3)
    rec = proxy.only_summary()
    t = rec["timings_ms"]
    assert t["total"] >= 950, t
    assert t["receive"] >= 900, t
    assert 0 <= t["wait"] < 900, t
    assert rec["bytes"]["response_body"] >= len(origins.slow_body(3))


def _send_secrets(p, origin):
    headers = [(k, v) for k, v in SECRETS.items()] + [("X-Visible", "visible-value-42")]
    resp, _ = raw_exchange(p.port, request_bytes("GET", origin.url("/echo?secrets=1"), headers))
    assert resp.status == 200
    seen = dict((k.lower(), v) for k, v in json.loads(resp.body)["headers"])
    assert seen["authorization"] == SECRETS["Authorization"], "end-to-end credentials must be forwarded"
    assert seen["cookie"] == SECRETS["Cookie"]
    resp, _ = raw_exchange(p.port, request_bytes("GET", origin.url("/set-cookie"),
                                                 [("Cookie", SECRETS["Cookie"])]))
    assert SET_COOKIE_SECRET in resp.header("Set-Cookie")
    p.summaries(2)
    p.stop()
    return p.log_path.read_text()


def test_secrets_are_redacted(make_proxy, origin):
    p = make_proxy({"log": {"include_headers": True}})
    text = _send_secrets(p, origin)
    for v in list(SECRETS.values()) + [SET_COOKIE_SECRET, "AUTH-SECRET", "COOKIE-SECRET", "UFJPWFktU0VDUkVU"]:
        assert v not in text, f"secret {v!r} written to the log"
    assert "visible-value-42" in text, "include_headers: true must log header values"
    assert text.count("[redacted]") >= 4  # Authorization, Cookie x2, Set-Cookie (at least)


def test_secrets_revealed_only_when_asked(make_proxy, origin):
    p = make_proxy({"log": {"include_headers": True, "reveal_secrets": True}})
    text = _send_secrets(p, origin)
    assert SECRETS["Authorization"] in text
    assert SECRETS["Cookie"] in text
    assert SET_COOKIE_SECRET in text


def test_headers_not_logged_by_default(proxy, origin):
    resp, _ = raw_exchange(proxy.port, request_bytes("GET", origin.url("/fixed/1"),
                                                     [("X-Visible", "visible-value-42")]))
    assert resp.status == 200
    proxy.summaries(1)
    proxy.stop()
    assert "visible-value-42" not in proxy.log_path.read_text()


def _lifecycle(records: list[dict], rid: int) -> list[str]:
    return [r["event"] for r in records if r.get("id") == rid and r.get("event") != "exchange"]


def _check_lifecycle(events: list[str], first: str = "request.didCreateInitialRequest"):
    assert events, "no lifecycle events"
    assert events[0] == first, events
    assert events[-1] == "request.didFinish", events
    assert events.count("request.didCreateInitialRequest") + events.count("request.didFailToCreateRequest") == 1, events
    assert events.count("request.didFinish") == 1, events
    start, end = 0, len(events) - 1
    for i, e in enumerate(events):
        if e.startswith("task."):
            assert start < i < end, events


@pytest.mark.parametrize("how", ["flag", "config"])
def test_verbose_lifecycle_order(make_proxy, origin, how):
    p = make_proxy({"log": {"verbose": True}} if how == "config" else None, verbose_events=how == "flag")
    url = origin.url("/fixed/2000")
    r = curl(p, url)
    assert r.rc == 0 and r.body == origins.pattern(2000)
    summary = p.summaries(1)[0]
    assert_http_summary(summary, method="GET", url=url, status=200, response_body=2000)
    rid = summary["id"]
    p.log_records(1, lambda r: r.get("id") == rid and r.get("event") == "request.didFinish")
    recs = p.read_log()
    for rec in recs:
        assert_envelope(rec)
        assert rec["event"].split(".")[0] in ("connection", "request", "task", "tunnel", "session", "exchange"), rec
    events = _lifecycle(recs, rid)
    _check_lifecycle(events)
    assert any(e.startswith("task.") for e in events), events
    assert "task.didReceiveResponse" in events, events
    for rec in recs:
        if rec["event"].startswith("task.") and rec.get("id") == rid:
            assert type(rec.get("task")) is int and type(rec.get("conn")) is int, rec


def test_verbose_lifecycle_of_a_rejected_request(make_proxy):
    p = make_proxy(verbose_events=True)
    resp, _ = raw_exchange(p.port, b"GARBAGE\r\n\r\n")
    assert resp.status == 400
    summary = p.summaries(1)[0]
    rid = summary["id"]
    p.log_records(1, lambda r: r.get("id") == rid and r.get("event") == "request.didFinish")
    events = _lifecycle(p.read_log(), rid)
    _check_lifecycle(events, first="request.didFailToCreateRequest")
    assert "request.didCreateInitialRequest" not in events


def test_default_mode_writes_only_summaries(proxy, origin):
    for path in ("/fixed/1", "/chunked/10"):
        assert curl(proxy, origin.url(path)).rc == 0
    proxy.summaries(2)
    proxy.stop()
    # session.* (start/stop of the whole proxy) are tolerated; nothing per exchange but the summary
    events = [r["event"] for r in proxy.read_log() if not r["event"].startswith("session.")]
    assert events == ["exchange", "exchange"], events


def test_log_disabled_writes_nothing(make_proxy, origin):
    p = make_proxy({"log": {"enabled": False}})
    r = curl(p, origin.url("/fixed/5"))
    assert r.rc == 0 and r.status == 200 and len(r.body) == 5
    p.stop()
    assert not p.log_path.exists() or p.log_path.read_bytes() == b"", "log.enabled: false must write no traffic log"
    assert "traffic log disabled" in p.stderr


def test_sighup_reopens_the_log(proxy, origin):
    u1, u2 = origin.url("/fixed/1?before"), origin.url("/fixed/1?after")
    assert curl(proxy, u1).rc == 0
    proxy.summaries(1)
    rotated = proxy.log_path.with_name("lookout.log.1")
    proxy.log_path.rename(rotated)
    proxy.send_signal(signal.SIGHUP)
    wait_until(proxy.log_path.exists, timeout=5, message="the log file to be reopened after SIGHUP")
    assert proxy.running(), "SIGHUP must not stop the proxy"
    assert curl(proxy, u2).rc == 0
    new = proxy.summaries(1)
    assert [r["url"] for r in new] == [u2]
    proxy.check_log_file(rotated)
    old = [r for r in proxy.read_log(rotated) if r.get("event") == "exchange"]
    assert [r["url"] for r in old] == [u1]


def test_log_to_stdout(make_proxy, origin):
    p = make_proxy(log_to_stdout=True)
    url = origin.url("/fixed/9")
    assert curl(p, url).rc == 0
    rec = p.only_summary()
    assert_http_summary(rec, method="GET", url=url, status=200, response_body=9)
    assert "listening on" not in p.stdout, "operational messages belong on stderr"
