"""Every error in SPEC's table that a client can provoke: the response (status, X-Lookout-Error,
text/plain, Connection: close, body "lookout: CODE: ...\\n") and the summary record."""

from __future__ import annotations

import json
import socket
import time

import pytest

import origins
from conftest import (Reader, assert_error_response, assert_error_summary, connect, curl,
                      raw_exchange, read_response, read_slowly_to_end, request_bytes, send_all,
                      small_window_connect, wait_until)


def _targets(origin, tag):
    return [t for _, t, _ in list(origin.requests) if tag in t]


def check_error(proxy, data: bytes, status: int, code: str, *, kind=None, method=None, url=None,
                required=True, timeout=15.0):
    """Send raw bytes, check the error response, that the proxy closes, and the summary."""
    resp, reader = raw_exchange(proxy.port, data, method="GET", timeout=timeout)
    assert_error_response(resp, status, code)
    assert reader.closed_by_peer(5), "the proxy must close the connection after an error"
    rec = proxy.only_summary(timeout=10, where=lambda r: (r.get("error") or {}).get("code") == code)
    assert_error_summary(rec, status, code, kind=kind, method=method, url=url, required=required)
    return resp, rec


# MARK: - malformed request heads (the origin must never see them)

def _cl_and_te(url):
    return request_bytes("POST", url, [("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
                         b"0\r\n\r\n")


HEAD_ERRORS = [
    # id, builder(url) -> bytes, method, status, code
    ("cl_and_te", _cl_and_te, "POST", 400, "conflicting_framing"),
    ("te_and_cl", lambda u: request_bytes("POST", u, [("Transfer-Encoding", "chunked"),
                                                      ("Content-Length", "5")], b"0\r\n\r\n"),
     "POST", 400, "conflicting_framing"),
    ("differing_cls", lambda u: request_bytes("POST", u, [("Content-Length", "5"), ("Content-Length", "6")],
                                              b"hello!"), "POST", 400, "invalid_content_length"),
    ("differing_cl_list", lambda u: request_bytes("POST", u, [("Content-Length", "5, 6")], b"hello!"),
     "POST", 400, "invalid_content_length"),
    ("cl_not_a_number", lambda u: request_bytes("POST", u, [("Content-Length", "abc")], b"abc"),
     "POST", 400, "invalid_content_length"),
    ("cl_negative", lambda u: request_bytes("POST", u, [("Content-Length", "-1")]),
     "POST", 400, "invalid_content_length"),
    ("obs_fold", lambda u: request_bytes("GET", u, [("X-Folded", "a\r\n b")]), "GET", 400, "malformed_request"),
    ("bare_cr_in_value", lambda u: request_bytes("GET", u, [("X-Bare", "a\rb")]), "GET", 400, "malformed_request"),
    ("space_in_header_name", lambda u: request_bytes("GET", u, [("Bad Name", "x")]), "GET", 400, "malformed_request"),
    ("space_before_colon", lambda u: request_bytes("GET", u, [("X-Foo ", "x")]), "GET", 400, "malformed_request"),
    ("invalid_char_in_name", lambda u: request_bytes("GET", u, [("X(Foo)", "x")]), "GET", 400, "malformed_request"),
    ("te_gzip", lambda u: request_bytes("POST", u, [("Transfer-Encoding", "gzip")], b"xyz"),
     "POST", 501, "unsupported_transfer_coding"),
    ("missing_host", lambda u: request_bytes("GET", u, host=""), "GET", 400, "missing_host"),
]


@pytest.mark.parametrize("builder,method,status,code", [pytest.param(*c[1:], id=c[0]) for c in HEAD_ERRORS])
def test_malformed_head(proxy, origin, request, builder, method, status, code):
    tag = f"case={request.node.callspec.id}"
    url = origin.url(f"/echo?{tag}")
    check_error(proxy, builder(url), status, code, kind="http", method=method, url=url)
    time.sleep(0.1)
    assert _targets(origin, tag) == [], "a rejected request reached the origin"


@pytest.mark.parametrize("data", [
    pytest.param(b"GARBAGE\r\n\r\n", id="no_target_no_version"),
    pytest.param(b"GET http://127.0.0.1:1/ HTTP/1.x\r\nHost: 127.0.0.1:1\r\n\r\n", id="bad_version"),
    pytest.param(b"G@T http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", id="bad_method_token"),
    pytest.param(b"GET  http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", id="double_space"),
    pytest.param(b"GET http://127.0.0.1:1/\rx HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", id="bare_cr_in_line"),
])
def test_malformed_request_line(proxy, data):
    check_error(proxy, data, 400, "malformed_request", required=False)


@pytest.mark.parametrize("scheme", ["ftp", "ws"])
def test_unsupported_scheme(proxy, scheme):
    url = f"{scheme}://127.0.0.1:9/x"
    check_error(proxy, request_bytes("GET", url), 400, "unsupported_scheme",
                kind="http", method="GET", url=url)


def test_origin_form_request_for_other_path(proxy):
    resp, rec = check_error(proxy, f"GET /nope HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode(),
                            400, "not_a_proxy_request", kind="admin", method="GET")
    assert resp.body.startswith(b"lookout: not_a_proxy_request: use Lookout as a proxy")


# MARK: - bodies

@pytest.mark.parametrize("body", [
    pytest.param(b"zz\r\nhello\r\n0\r\n\r\n", id="bad_chunk_size"),
    pytest.param(b"5\r\nhelloXX0\r\n\r\n", id="missing_crlf_after_chunk"),
    pytest.param(b"-5\r\nhello\r\n0\r\n\r\n", id="negative_chunk_size"),
    pytest.param(b"fffffffffffffffffffff\r\nhello\r\n0\r\n\r\n", id="chunk_size_overflow"),
])
def test_invalid_chunked_request_body(proxy, origin, body):
    url = origin.url("/echo?chunked=bad")
    check_error(proxy, request_bytes("POST", url, [("Transfer-Encoding", "chunked")], body),
                400, "invalid_chunked_encoding", kind="http", method="POST", url=url)


def test_request_body_limit(make_proxy, origin):
    p = make_proxy({"limits": {"max_request_body_bytes": 100}})
    ok = request_bytes("POST", origin.url("/echo"), [("Content-Length", "100")], b"a" * 100)
    resp, _ = raw_exchange(p.port, ok)
    assert resp.status == 200 and json.loads(resp.body)["body_length"] == 100
    url = origin.url("/echo?too=large")
    resp, reader = raw_exchange(p.port, request_bytes("POST", url, [("Content-Length", "1000")], b"a" * 1000))
    assert_error_response(resp, 413, "request_body_too_large")
    recs = p.summaries(2)
    bad = [r for r in recs if r.get("url") == url]
    assert len(bad) == 1
    assert_error_summary(bad[0], 413, "request_body_too_large", kind="http", method="POST", url=url)


def test_chunked_request_body_limit(make_proxy, origin):
    p = make_proxy({"limits": {"max_request_body_bytes": 100}})
    url = origin.url("/echo?too=large-chunked")
    body = b"".join(b"32\r\n" + b"b" * 50 + b"\r\n" for _ in range(4)) + b"0\r\n\r\n"
    check_error(p, request_bytes("POST", url, [("Transfer-Encoding", "chunked")], body),
                413, "request_body_too_large", kind="http", method="POST", url=url)


# MARK: - head limits

def test_request_line_too_long(proxy, origin):
    url = origin.url("/" + "a" * 9000)
    check_error(proxy, request_bytes("GET", url), 414, "request_line_too_long",
                kind="http", method="GET", required=False)


def test_request_line_limit_is_configurable(make_proxy, origin):
    p = make_proxy({"limits": {"max_request_line_bytes": 200}})
    resp, _ = raw_exchange(p.port, request_bytes("GET", origin.url("/fixed/1?" + "q" * 100)))
    assert resp.status == 200
    check_error(p, request_bytes("GET", origin.url("/fixed/1?" + "q" * 300)), 414,
                "request_line_too_long", required=False)


def test_header_section_too_large(proxy, origin):
    url = origin.url("/echo?big=headers")
    data = request_bytes("GET", url, [("X-Big-1", "a" * 40_000), ("X-Big-2", "b" * 40_000)])
    check_error(proxy, data, 431, "request_header_too_large", kind="http", method="GET", url=url,
                required=False)


def test_too_many_headers(proxy, origin):
    url = origin.url("/echo?many=headers")
    data = request_bytes("GET", url, [(f"X-H-{i}", str(i)) for i in range(200)])
    check_error(proxy, data, 431, "request_header_too_large", kind="http", method="GET", url=url,
                required=False)


def test_header_limits_are_configurable(make_proxy, origin):
    p = make_proxy({"limits": {"max_header_count": 10, "max_header_bytes": 2048}})
    resp, _ = raw_exchange(p.port, request_bytes("GET", origin.url("/fixed/1"),
                                                 [(f"X-H-{i}", "v") for i in range(5)]))
    assert resp.status == 200
    check_error(p, request_bytes("GET", origin.url("/fixed/1"), [(f"X-H-{i}", "v") for i in range(20)]),
                431, "request_header_too_large", required=False)
    p.summaries(2)  # wait for both before the next exchange, so only_summary below sees one new record
    resp, reader = raw_exchange(p.port, request_bytes("GET", origin.url("/fixed/1"), [("X-Long", "z" * 3000)]))
    assert_error_response(resp, 431, "request_header_too_large")
    recs = p.summaries(3)
    assert sum(1 for r in recs if (r.get("error") or {}).get("code") == "request_header_too_large") == 2


# MARK: - timeouts and limits on the client side

def test_client_header_timeout(make_proxy, origin):
    p = make_proxy({"timeouts": {"client_header": 1}})
    s = connect(p.port)
    t0 = time.monotonic()
    s.sendall(f"GET {origin.url('/fixed/1')} HTTP/1.1\r\nHost: {origin.authority}\r\n".encode())
    r = Reader(s, 10)
    resp = read_response(r)
    elapsed = time.monotonic() - t0
    assert_error_response(resp, 408, "client_header_timeout")
    assert 0.9 <= elapsed < 5, elapsed
    assert r.closed_by_peer(5)
    assert_error_summary(p.only_summary(), 408, "client_header_timeout", required=False)


def test_client_header_timeout_covers_the_whole_head(make_proxy, origin):
    """A client dribbling one byte every 0.2 s must not extend the deadline (slowloris)."""
    p = make_proxy({"timeouts": {"client_header": 1}})
    s = connect(p.port)
    data = f"GET {origin.url('/fixed/1')} HTTP/1.1\r\nHost: {origin.authority}\r\nX-Slow: ".encode() + b"z" * 100
    t0 = time.monotonic()
    got_response = False
    for i in range(len(data)):
        if not send_all(s, data[i:i + 1]):
            break
        s.settimeout(0.2)
        try:
            if s.recv(1, socket.MSG_PEEK):
                got_response = True
                break
        except socket.timeout:
            pass
        except ConnectionResetError:
            break
        if time.monotonic() - t0 > 6:
            break
    elapsed = time.monotonic() - t0
    assert got_response, "no response while the head dribbled in"
    assert elapsed < 3, f"408 only after {elapsed:.1f}s"
    resp = read_response(Reader(s, 5))
    assert_error_response(resp, 408, "client_header_timeout")


def test_connection_limit(make_proxy):
    # verbose: the rejection is a connection event, not an exchange
    p = make_proxy({"max_connections": 2}, verbose_events=True)
    held = []
    for _ in range(2):
        s = connect(p.port)
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\n\r\n".encode())
        r = Reader(s, 10)
        assert read_response(r).status == 200
        held.append((s, r))
    third = connect(p.port)
    r = Reader(third, 10)
    third.settimeout(2)
    try:
        early = third.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        early = b""
    if not early:
        send_all(third, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\n\r\n".encode())
    resp = read_response(r)
    assert_error_response(resp, 503, "too_many_connections")
    assert r.closed_by_peer(5)
    recs = p.log_records(1, lambda x: (x.get("error") or {}).get("code") == "too_many_connections")
    assert len(recs) == 1, recs
    if recs[0].get("event") == "exchange":
        assert recs[0].get("status") == 503, recs[0]
    # the held connections still work, and once one closes a new client is accepted
    s, r0 = held[0]
    s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\n\r\n".encode())
    assert read_response(r0).body == b"ok\n"
    s.close()

    def new_client_ok():
        c = connect(p.port)
        try:
            c.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\n\r\n".encode())
            return read_response(Reader(c, 5)).status == 200
        except (EOFError, OSError):
            return False
        finally:
            c.close()
    wait_until(new_client_ok, timeout=5, interval=0.1, message="a slot after a client left")


# MARK: - upstream failures before the response head

def test_upstream_connect_refused(proxy):
    holder, port = origins.unused_port()
    try:
        url = f"http://127.0.0.1:{port}/x"
        r = curl(proxy, url)
        assert r.rc == 0
        assert_error_response(r, 502, "upstream_connect_failed")
    finally:
        holder.close()
    assert_error_summary(proxy.only_summary(), 502, "upstream_connect_failed", kind="http",
                         method="GET", url=url)


def test_upstream_dns_failure(proxy):
    # ".invalid" never resolves (RFC 6761 §6.4): Lookout answers it itself, so this test sends
    # no query to any DNS server, and nothing leaves the machine.
    url = "http://nonexistent.invalid/x"
    t0 = time.monotonic()
    resp, _ = raw_exchange(proxy.port, request_bytes("GET", url), timeout=10)
    assert time.monotonic() - t0 < 2, "an .invalid name must fail at once, without a DNS query"
    assert_error_response(resp, 502, "upstream_dns_failed")
    assert_error_summary(proxy.only_summary(), 502, "upstream_dns_failed", kind="http",
                         method="GET", url=url)


def test_upstream_connect_timeout(make_proxy):
    hole = origins.BlackholeOrigin()
    try:
        p = make_proxy({"timeouts": {"upstream_connect": 1}})
        url = hole.url("/x")
        t0 = time.monotonic()
        resp, _ = raw_exchange(p.port, request_bytes("GET", url))
        elapsed = time.monotonic() - t0
        assert_error_response(resp, 504, "upstream_connect_timeout")
        assert 0.9 <= elapsed < 6, elapsed
        assert_error_summary(p.only_summary(), 504, "upstream_connect_timeout", kind="http",
                             method="GET", url=url)
    finally:
        hole.stop()


def test_upstream_first_byte_timeout(make_proxy, raw_origin):
    silent = raw_origin("never_answers")
    p = make_proxy({"timeouts": {"upstream_first_byte": 1}})
    url = silent.url("/never")
    t0 = time.monotonic()
    resp, _ = raw_exchange(p.port, request_bytes("GET", url))
    elapsed = time.monotonic() - t0
    assert_error_response(resp, 504, "upstream_first_byte_timeout")
    assert 0.9 <= elapsed < 6, elapsed
    assert_error_summary(p.only_summary(), 504, "upstream_first_byte_timeout", kind="http",
                         method="GET", url=url)
    assert silent.wait_received(1)[0].startswith(b"GET /never HTTP/1.1\r\n")


def test_upstream_garbage_head(proxy, raw_origin):
    o = raw_origin("garbage_head")
    url = o.url("/garbage")
    r = curl(proxy, url)
    assert r.rc == 0
    assert_error_response(r, 502, "upstream_malformed_response")
    assert_error_summary(proxy.only_summary(), 502, "upstream_malformed_response", kind="http",
                         method="GET", url=url)


def test_upstream_switching_protocols_unasked(proxy, raw_origin):
    """A 101 to a request that asked for no switch is a broken response: fail at once."""
    o = raw_origin("unrequested_switch")
    url = o.url("/ws")
    t0 = time.monotonic()
    r = curl(proxy, url)
    assert time.monotonic() - t0 < 5
    assert_error_response(r, 502, "upstream_malformed_response")
    assert_error_summary(proxy.only_summary(), 502, "upstream_malformed_response", kind="http",
                         method="GET", url=url)
    assert b"upgrade" not in o.received[0].lower(), "Upgrade must not be forwarded"


def test_upstream_closes_without_response(proxy, raw_origin):
    o = raw_origin("close_without_response")
    url = o.url("/closed")
    resp, _ = raw_exchange(proxy.port, request_bytes("GET", url))
    assert_error_response(resp, 502, "upstream_closed")
    rec = proxy.only_summary()
    assert_error_summary(rec, 502, "upstream_closed", kind="http", method="GET", url=url)
    assert rec["attempts"] == o.accepted, "attempts must count the upstream transactions"


def test_upstream_conflicting_framing(proxy, raw_origin):
    """CL + TE from the origin: either reject (502) or forward with TE only (RFC 9112 6.1)."""
    o = raw_origin("conflicting_framing")
    url = o.url("/conflict")
    resp, _ = raw_exchange(proxy.port, request_bytes("GET", url))
    rec = proxy.only_summary()
    if resp.status == 502:
        assert_error_response(resp, 502, "upstream_malformed_response")
        assert_error_summary(rec, 502, "upstream_malformed_response", kind="http", method="GET", url=url)
    else:
        assert resp.status == 200 and resp.complete and resp.body == origins.CONFLICT_BODY
        assert resp.header("Content-Length") is None or resp.header("Transfer-Encoding") is None
        assert rec["status"] == 200


# MARK: - upstream failures after the head was forwarded

def test_upstream_reset_mid_body_with_curl(proxy, raw_origin):
    o = raw_origin("reset_mid_body")
    url = o.url("/reset")
    r = curl(proxy, url)
    assert r.rc in (18, 56), f"curl exit {r.rc}: the truncation was not visible: {r.stderr}"
    assert r.status == 200
    assert len(r.body) <= origins.RESET_SENT
    assert r.body == origins.pattern(len(r.body))
    assert_error_summary(proxy.only_summary(), 200, "upstream_closed", kind="http", method="GET", url=url)


def test_upstream_reset_mid_body_raw(proxy, raw_origin):
    o = raw_origin("reset_mid_body")
    resp, reader = raw_exchange(proxy.port, request_bytes("GET", o.url("/reset")))
    assert resp.status == 200
    assert not resp.complete, "a truncated body must not look complete"
    assert resp.body == origins.pattern(len(resp.body))
    assert_error_summary(proxy.only_summary(), 200, "upstream_closed")


def test_upstream_reset_reaches_a_slow_client_after_every_byte(proxy, raw_origin):
    """The origin resets after 4 MiB of a declared 8 MiB while the client reads slowly: the
    client gets every byte the origin sent, including what the proxy still had queued for it,
    and then a reset, not an ordinary end."""
    o = raw_origin("reset_after_bulk")
    s = small_window_connect(proxy.port)
    s.sendall(request_bytes("GET", o.url("/bulk")))
    data, reset = read_slowly_to_end(s)
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert len(body) == origins.RESET_BULK_SENT, f"{len(body)} of {origins.RESET_BULK_SENT} bytes arrived"
    assert body == origins.pattern(origins.RESET_BULK_SENT)
    assert reset, "the broken-off response ended like a complete one"
    assert_error_summary(proxy.only_summary(), 200, "upstream_closed")


def test_upstream_reset_with_a_client_that_does_not_read_ends_after_the_linger(proxy, raw_origin):
    """The origin resets while Lookout still holds bytes for a client that reads nothing: Lookout
    waits its 2 s for the client to take them, then resets; the client keeps what reached it
    before, a prefix of the body, and sees the reset."""
    o = raw_origin("reset_after_queued")
    s = small_window_connect(proxy.port)
    s.sendall(request_bytes("GET", o.url("/queued")))
    assert_error_summary(proxy.only_summary(timeout=10), 200, "upstream_closed")
    failed_at = time.monotonic()
    tcp_close = 7  # TCP_CLOSE in tcpi_state, the first byte of TCP_INFO: the RST has arrived
    while s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] != tcp_close:
        assert time.monotonic() - failed_at < 6, "Lookout never gave up on the client"
        time.sleep(0.02)
    waited = time.monotonic() - failed_at
    assert 1.5 <= waited <= 4, f"reset {waited:.2f} s after the failure, not after the 2 s linger"
    data, reset = read_slowly_to_end(s, start_after=0)
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert reset, "the broken-off response ended like a complete one"
    assert 0 < len(body) < origins.RESET_QUEUED_SENT, len(body)
    assert body == origins.pattern(len(body))


def test_upstream_idle_timeout_mid_body(make_proxy, raw_origin):
    o = raw_origin("stall_mid_body")
    p = make_proxy({"timeouts": {"upstream_idle": 1}})
    url = o.url("/stall")
    t0 = time.monotonic()
    resp, reader = raw_exchange(p.port, request_bytes("GET", url))
    elapsed = time.monotonic() - t0
    assert resp.status == 200 and not resp.complete
    assert resp.body == origins.pattern(origins.STALL_SENT)
    assert 0.9 <= elapsed < 6, elapsed
    assert_error_summary(p.only_summary(), 200, "upstream_idle_timeout", kind="http", method="GET", url=url)
