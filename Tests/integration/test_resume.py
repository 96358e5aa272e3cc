"""Resumed downloads (`retry.rules[i].resume`): a GET response that breaks off mid-body is asked
for again with `Range` and `If-Range` and spliced, so the client gets one unbroken body; a `200`,
a changed validator or a wrong `Content-Range` leaves the break as it was. Clients: curl over
HTTP/1.1 and, intercepted, over HTTP/2; with the cache filling too."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import time

import pytest

from conftest import curl
from origins import RawOrigin, read_head
from test_tls_intercept import ca_file, intercepting

BODY = os.urandom(3_000_000)
ETAG = '"v1"'


def breaking(mode: str, cut: int = 700_000, validator: dict | None = None, breaks: int = 1):
    """An origin whose first `breaks` answers stop after `cut` body bytes; a Range request is
    answered per `mode`: ok (a correct 206), changed (a 200: If-Range no longer matches),
    wrong_range (a 206 from another offset), again (breaks once more)."""
    fields = validator if validator is not None else {"ETag": ETAG}
    state = {"broken": 0}

    def behave(conn, origin):
        head = read_head(conn)
        origin.record(head)
        text = head.decode("latin-1")
        m = re.search(r"(?im)^range: bytes=(\d+)-\r?$", text)
        extra = "".join(f"{k}: {v}\r\n" for k, v in fields.items())
        if m and mode != "again":
            start = int(m.group(1))
            if mode == "changed":
                conn.sendall(f"HTTP/1.1 200 OK\r\nETag: \"v2\"\r\nContent-Length: {len(BODY)}\r\n\r\n".encode() + BODY)
                return
            if mode == "wrong_range":
                start = max(0, start - 10)
            part = BODY[start:]
            conn.sendall((f"HTTP/1.1 206 Partial Content\r\n{extra}Content-Range: bytes {start}-{len(BODY) - 1}/{len(BODY)}\r\n"
                          f"Content-Length: {len(part)}\r\n\r\n").encode() + part)
            return
        start = int(m.group(1)) if m else 0
        status = "206 Partial Content" if m else "200 OK"
        prefix = f"Content-Range: bytes {start}-{len(BODY) - 1}/{len(BODY)}\r\n" if m else ""
        body = BODY[start:]
        conn.sendall((f"HTTP/1.1 {status}\r\n{extra}{prefix}Content-Length: {len(body)}\r\n\r\n").encode())
        if state["broken"] < breaks:
            state["broken"] += 1
            conn.sendall(body[:cut])
            time.sleep(0.05)
            conn.shutdown(socket.SHUT_RDWR)
            return
        conn.sendall(body)

    return behave


@pytest.fixture
def origin_factory():
    started = []

    def make(behavior, tls=None):
        o = RawOrigin(behavior, tls=tls).start()
        started.append(o)
        return o

    yield make
    for o in started:
        o.stop()


def resuming(max_resumes: int = 3, **extra):
    return {"retry": {"rules": [{"hosts": ["**"], "resume": True, "max_resumes": max_resumes}]}, **extra}


def resumes(proxy, exchanges: int = 1, **match):
    """The resume events, read once the log holds the summaries of `exchanges` exchanges: an
    exchange's events are written before its summary, so none can still be on its way."""
    proxy.summaries(exchanges, **match)
    return proxy.log_records(where=lambda e: e["event"] == "request.didResume")


def test_a_broken_body_is_resumed_and_spliced(make_proxy, origin_factory):
    o = origin_factory(breaking("ok"))
    proxy = make_proxy(resuming(), verbose_events=True)
    r = curl(proxy, o.url("/big"))
    assert r.rc == 0 and r.status == 200, r.stderr
    assert hashlib.sha256(r.body).digest() == hashlib.sha256(BODY).digest()
    [summary] = proxy.summaries(1)
    assert "error" not in summary and summary["status"] == 200, summary
    assert summary["attempts"] == 2 and len(summary["transactions"]) == 2, summary
    [event] = resumes(proxy)
    assert event["offset"] >= 700_000 - 65536 and event["validator"] == ETAG and event["attempt"] == 2, event
    assert event["reason"] == "upstream_closed", event
    second = o.received[1].decode("latin-1")
    assert f"Range: bytes={event['offset']}-" in second and f"If-Range: {ETAG}" in second, second


@pytest.mark.parametrize("mode", ["changed", "wrong_range"])
def test_a_resumption_that_does_not_continue_leaves_the_break(make_proxy, origin_factory, mode):
    o = origin_factory(breaking(mode))
    proxy = make_proxy(resuming())
    r = curl(proxy, o.url("/big"))
    assert r.rc in (18, 56), (r.rc, r.stderr)  # a partial body, then the reset
    assert len(r.body) < len(BODY) and BODY.startswith(r.body), "nothing that does not belong was spliced"
    [summary] = proxy.summaries(1)
    assert summary["error"]["code"] == "upstream_closed", summary


def test_no_strong_validator_no_resumption(make_proxy, origin_factory):
    weak = origin_factory(breaking("ok", validator={"ETag": 'W/"weak"'}))
    recent = origin_factory(breaking("ok", validator={"Last-Modified": "Thu, 26 Nov 2026 10:00:00 GMT",
                                                      "Date": "Thu, 26 Nov 2026 10:00:30 GMT"}))
    proxy = make_proxy(resuming(), verbose_events=True)
    for o in (weak, recent):
        assert curl(proxy, o.url("/big")).rc in (18, 56)
        assert len(o.received) == 1
    assert resumes(proxy, exchanges=2) == []


def test_last_modified_is_a_strong_validator_when_old_enough(make_proxy, origin_factory):
    fields = {"Last-Modified": "Thu, 26 Nov 2026 10:00:00 GMT", "Date": "Thu, 26 Nov 2026 10:05:00 GMT"}
    o = origin_factory(breaking("ok", validator=fields))
    proxy = make_proxy(resuming(), verbose_events=True)
    r = curl(proxy, o.url("/big"))
    assert r.rc == 0 and r.body == BODY
    assert resumes(proxy)[0]["validator"] == fields["Last-Modified"]


def test_max_resumes_bounds_the_attempts(make_proxy, origin_factory):
    o = origin_factory(breaking("again", cut=200_000, breaks=10))
    proxy = make_proxy(resuming(max_resumes=2), verbose_events=True)
    r = curl(proxy, o.url("/big"))
    assert r.rc in (18, 56) and BODY.startswith(r.body)
    assert len(resumes(proxy)) == 2 and len(o.received) == 3
    assert proxy.summaries(1)[0]["error"]["code"] == "upstream_closed"


def test_without_the_rule_the_break_reaches_the_client(make_proxy, origin_factory):
    o = origin_factory(breaking("ok"))
    proxy = make_proxy()
    assert curl(proxy, o.url("/big")).rc in (18, 56)
    assert len(o.received) == 1


def test_the_cache_stores_the_spliced_body(make_proxy, origin_factory):
    o = origin_factory(breaking("ok", validator={"ETag": ETAG, "Cache-Control": "max-age=600"}))
    proxy = make_proxy(resuming(cache={"enabled": True}))
    first = curl(proxy, o.url("/big"))
    assert first.rc == 0 and first.body == BODY
    second = curl(proxy, o.url("/big"))
    assert second.body == BODY and second.header("Cache-Status").startswith("Lookout; hit"), second.headers
    assert len(o.received) == 2  # the broken request and its resumption; the hit asked nobody


def test_an_http2_client_gets_the_spliced_body(make_proxy, origin_factory, pki):
    o = origin_factory(breaking("ok"), tls=pki.good.tls)
    proxy = make_proxy({**intercepting(pki, o), **resuming()})
    r = curl(proxy, f"https://localhost:{o.port}/big", "--http2", "--cacert", ca_file(proxy))
    assert r.rc == 0 and r.is_http2 and r.body == BODY, r.stderr


def test_an_http2_origin_reset_mid_body_is_resumed(make_proxy, pki):
    from origins import expected_sha256
    from origins.h2 import H2Origin
    origin = H2Origin(tls=pki.good.tls).start()
    try:
        proxy = make_proxy({**intercepting(pki, origin), **resuming()}, verbose_events=True)
        r = curl(proxy, origin.url("/resumable/200000"), "--http2", "--cacert", ca_file(proxy))
        assert r.rc == 0 and hashlib.sha256(r.body).hexdigest() == expected_sha256(200_000), r.stderr
        [event] = resumes(proxy, kind="intercepted")
        assert event["offset"] == 16000 and event["reason"] == "upstream_stream_reset", event
        [summary] = proxy.summaries(1, kind="intercepted")
        assert summary["upstream"]["protocol"] == "h2" and summary["attempts"] == 2, summary
    finally:
        origin.stop()
