"""Retry policy (retry.rules): held-back statuses, failed connections, Retry-After, backoff, bodies
kept for replay, and what is never retried — through the proxy against scripted origins."""

from __future__ import annotations

import email.utils
import socket
import threading
import time

import pytest

from conftest import assert_error_response, assert_error_summary, curl, py_request, raw_exchange, request_bytes
from origins import ScriptedOrigin, echo


def retry_rule(**rule):
    return {"retry": {"rules": [{"hosts": ["**"], "limit": 2, "backoff": {"base": 0.05, "jitter": False},
                                 **rule}]}}


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        yield o


def unavailable(**fields):
    return (503, fields, b"busy")


def arrivals(site, path):
    return [r.at for r in site.requests_for(path)]


def test_503_then_200(make_proxy, site):
    site.route("/r", unavailable(), (200, {}, b"ok"))
    proxy = make_proxy(retry_rule(), verbose_events=True)
    r = curl(proxy, site.url("/r"))
    assert (r.status, r.body) == (200, b"ok")
    rec = proxy.only_summary(url=site.url("/r"))
    assert rec["attempts"] == 2 and rec["status"] == 200 and rec["redirects"] == 0
    assert [t["status"] for t in rec["transactions"]] == [503, 200]
    assert rec["timings_ms"]["blocked"] >= 50
    [event] = proxy.log_records(1, where=lambda e: e["event"] == "request.isRetrying")
    assert (event["id"], event["attempt"], event["reason"], event["delay_ms"]) == (rec["id"], 2, "503", 50)


def test_attempts_run_out_and_the_last_response_goes_through(make_proxy, site):
    site.route("/r", unavailable(**{"X-Try": "last"}))
    proxy = make_proxy(retry_rule())
    r = curl(proxy, site.url("/r"))
    assert (r.status, r.body, r.header("X-Try")) == (503, b"busy", "last")
    assert len(site.requests_for("/r")) == 3
    rec = proxy.only_summary(url=site.url("/r"))
    assert rec["attempts"] == 3 and rec["status"] == 503 and "error" not in rec


def test_backoff_timings(make_proxy, site):
    site.route("/r", unavailable(), unavailable(), (200, {}, b"ok"))
    proxy = make_proxy(retry_rule(backoff={"base": 0.4, "multiplier": 2, "max": 5, "jitter": False}))
    assert curl(proxy, site.url("/r")).status == 200
    t = arrivals(site, "/r")
    gaps = [t[1] - t[0], t[2] - t[1]]
    for gap, expected in zip(gaps, [0.4, 0.8]):
        assert expected * 0.9 <= gap <= expected * 1.1, gaps


def test_retry_after_seconds(make_proxy, site):
    site.route("/r", unavailable(**{"Retry-After": "1"}), (200, {}, b"ok"))
    proxy = make_proxy(retry_rule())
    assert curl(proxy, site.url("/r")).status == 200
    t = arrivals(site, "/r")
    assert 0.95 <= t[1] - t[0] <= 1.2, t


def test_retry_after_date(make_proxy, site):
    def later(_req):
        return 503, {"Retry-After": email.utils.formatdate(time.time() + 2, usegmt=True)}, b"busy"
    site.route("/r", later, (200, {}, b"ok"))
    proxy = make_proxy(retry_rule())
    assert curl(proxy, site.url("/r")).status == 200
    t = arrivals(site, "/r")
    assert 0.9 <= t[1] - t[0] <= 2.3, t  # an HTTP-date has whole seconds


def test_retry_after_is_capped(make_proxy, site):
    site.route("/r", unavailable(**{"Retry-After": "3600"}), (200, {}, b"ok"))
    proxy = make_proxy(retry_rule(max_retry_after=0.3))
    assert curl(proxy, site.url("/r")).status == 200
    t = arrivals(site, "/r")
    assert 0.27 <= t[1] - t[0] <= 0.5, t


def test_429_only_when_listed(make_proxy, site):
    site.route("/r", (429, {}, b"slow down"), (200, {}, b"ok"))
    proxy = make_proxy(retry_rule())
    assert curl(proxy, site.url("/r")).status == 429
    site.route("/r", (429, {}, b"slow down"), (200, {}, b"ok"))
    listed = make_proxy(retry_rule(statuses=[429]))
    assert curl(listed, site.url("/r")).status == 200


def test_connect_refused_then_listening(make_proxy):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    started = []

    def listen_soon():
        time.sleep(0.2)
        o = ScriptedOrigin(port=port)
        o.route("/r", (200, {}, b"up now"))
        started.append(o)

    threading.Thread(target=listen_soon, daemon=True).start()
    proxy = make_proxy(retry_rule(limit=3, backoff={"base": 0.3, "jitter": False}), verbose_events=True)
    try:
        r = curl(proxy, f"http://127.0.0.1:{port}/r")
        assert (r.status, r.body) == (200, b"up now"), r
        rec = proxy.only_summary(url=f"http://127.0.0.1:{port}/r")
        assert rec["attempts"] >= 2
        assert rec["transactions"][0]["error"] == "upstream_connect_failed"
        assert rec["transactions"][-1]["status"] == 200
        reasons = [e["reason"] for e in proxy.log_records(1, where=lambda e: e["event"] == "request.isRetrying")]
        assert reasons[0] == "upstream_connect_failed"
    finally:
        for o in started:
            o.stop()


def test_errors_not_listed_are_not_retried(make_proxy):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    proxy = make_proxy(retry_rule(errors=["upstream_closed"]))
    r = curl(proxy, f"http://127.0.0.1:{port}/r")
    assert_error_response(r, 502, "upstream_connect_failed")
    rec = proxy.only_summary(url=f"http://127.0.0.1:{port}/r")
    assert rec["attempts"] == 1


def test_post_is_retried_only_when_listed(make_proxy, site):
    site.route("/p", unavailable(), echo)
    proxy = make_proxy(retry_rule())
    st, _, body = py_request(proxy, "POST", site.url("/p"), body=b"payload")
    assert st == 503 and len(site.requests_for("/p")) == 1
    site.route("/p", unavailable(), echo)
    listed = make_proxy(retry_rule(methods=["POST"]))
    st, _, body = py_request(listed, "POST", site.url("/p"), body=b"payload")
    assert st == 200 and b"method=POST length=7" in body
    assert [r.body_length for r in site.requests_for("/p")[1:]] == [7, 7]


def test_chunked_body_is_replayed(make_proxy, site):
    site.route("/p", unavailable(), echo)
    proxy = make_proxy(retry_rule())
    data = (request_bytes("PUT", site.url("/p"), headers=[("Transfer-Encoding", "chunked")])
            + b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    resp, reader = raw_exchange(proxy.port, data)
    reader.sock.close()
    assert resp.status == 200 and b"length=11" in resp.body, resp.body
    assert [r.body_length for r in site.requests_for("/p")] == [11, 11]


def test_body_over_replay_limit_is_not_retried(make_proxy, site):
    site.route("/p", unavailable(), echo)
    proxy = make_proxy(retry_rule(replay_body_bytes=1024))
    st, _, _ = py_request(proxy, "PUT", site.url("/p"), body=b"z" * 2048)
    assert st == 503 and len(site.requests_for("/p")) == 1
    st, _, body = py_request(proxy, "PUT", site.url("/p"), body=b"z" * 1000)
    assert st == 200 and b"length=1000" in body


def test_failure_after_bytes_reached_the_client_is_not_retried(make_proxy, raw_origin):
    origin = raw_origin("reset_mid_body")
    proxy = make_proxy(retry_rule(errors=["upstream_closed"]))
    r = curl(proxy, origin.url("/x"))
    assert r.rc != 0  # a truncated transfer, not a retried one
    rec = proxy.only_summary(url=origin.url("/x"))
    assert rec["attempts"] == 1 and rec["error"]["code"] == "upstream_closed"
    assert len(origin.received) == 1
