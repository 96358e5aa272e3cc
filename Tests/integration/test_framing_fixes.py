"""What a new user's real clients send that Lookout once framed or refused wrongly: Content-Length
lists, raw UTF-8 in targets, Transfer-Encoding variants, and refusals logged in default mode."""

from __future__ import annotations

import socket

import pytest

from conftest import (Reader, assert_error_response, assert_error_summary, connect, raw_exchange, read_response,
                      request_bytes, send_all)
from origins import ScriptedOrigin, echo


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/echo", echo)
        yield o


def test_identical_content_length_list_is_forwarded_as_one_value(proxy, site):
    data = request_bytes("POST", site.url("/echo"), headers=[("Content-Length", "5,5"), ("Content-Length", "5")],
                         body=b"hello")
    resp, reader = raw_exchange(proxy.port, data)
    reader.sock.close()
    assert resp.status == 200 and b"length=5" in resp.body
    [arrived] = site.requests_for("/echo")
    assert arrived.header_all("Content-Length") == ["5"]


def test_differing_content_lengths_are_still_refused(proxy, site):
    data = request_bytes("POST", site.url("/echo"), headers=[("Content-Length", "5, 6")], body=b"hello!")
    resp, reader = raw_exchange(proxy.port, data)
    reader.sock.close()
    assert_error_response(resp, 400, "invalid_content_length")
    assert site.received == []
    assert_error_summary(proxy.only_summary(), 400, "invalid_content_length", required=False)


def test_raw_utf8_target_is_forwarded_byte_for_byte(proxy, site):
    site.route("/caf\u00e9/\u65e5\u672c", (200, {}, b"unicode ok"))
    target = f"{site.url('/caf')}\u00e9/\u65e5\u672c?q=\u00fcber"
    raw = b"GET " + target.encode("utf-8") + b" HTTP/1.1\r\nHost: " + f"127.0.0.1:{site.port}".encode() + b"\r\n\r\n"
    resp, reader = raw_exchange(proxy.port, raw)
    reader.sock.close()
    assert (resp.status, resp.body) == (200, b"unicode ok")
    [arrived] = site.received
    assert arrived.target == "/caf\u00e9/\u65e5\u672c?q=\u00fcber".encode("utf-8")
    assert proxy.only_summary()["url"] == target


def test_invalid_utf8_target_is_refused(proxy, site):
    raw = b"GET http://127.0.0.1:%d/caf\xe9 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % site.port
    resp, reader = raw_exchange(proxy.port, raw)
    reader.sock.close()
    assert_error_response(resp, 400, "malformed_request")
    assert site.received == []
    assert_error_summary(proxy.only_summary(), 400, "malformed_request", required=False)


@pytest.mark.parametrize("coding,forwarded", [
    ("chunked", "chunked"),
    ("identity, chunked", "chunked"),
    ("chunked;foo=bar", "chunked"),
    ("gzip, chunked", "gzip, chunked"),
    ("GZIP , Identity, Chunked", "gzip, chunked"),
])
def test_accepted_transfer_codings_go_on_canonical(proxy, site, coding, forwarded):
    data = (request_bytes("POST", site.url("/echo"), headers=[("Transfer-Encoding", coding)])
            + b"5\r\nhello\r\n0\r\n\r\n")
    resp, reader = raw_exchange(proxy.port, data)
    reader.sock.close()
    assert resp.status == 200 and b"length=5" in resp.body, resp.body
    [arrived] = site.requests_for("/echo")
    assert arrived.header_all("Transfer-Encoding") == [forwarded]


@pytest.mark.parametrize("coding", ["br, chunked", "chunked, identity", "identity", "chunked, chunked"])
def test_unframeable_transfer_codings_are_501(make_proxy, site, coding):
    proxy = make_proxy(verbose_events=True)
    data = (request_bytes("POST", site.url("/echo"), headers=[("Transfer-Encoding", coding)])
            + b"5\r\nhello\r\n0\r\n\r\n")
    resp, reader = raw_exchange(proxy.port, data)
    reader.sock.close()
    assert_error_response(resp, 501, "unsupported_transfer_coding")
    assert site.received == []
    assert_error_summary(proxy.only_summary(), 501, "unsupported_transfer_coding", required=False)
    [event] = proxy.log_records(1, where=lambda e: e["event"] == "request.didFailToCreateRequest")
    assert event["error"]["code"] == "unsupported_transfer_coding"


def test_refused_connection_is_logged_in_default_mode(make_proxy):
    proxy = make_proxy({"max_connections": 1})
    held = connect(proxy.port)
    send_all(held, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
    assert read_response(Reader(held, 10)).status == 200
    refused = connect(proxy.port)
    resp = read_response(Reader(refused, 10))
    assert_error_response(resp, 503, "too_many_connections")
    [rec] = proxy.log_records(1, where=lambda r: r["event"] == "connection.wasRejected")
    assert rec["error"]["code"] == "too_many_connections" and rec["client"].startswith("127.0.0.1:")
    assert not any(r["event"].startswith("task.") for r in proxy.read_log()), "default mode stays summaries-only"
    held.close()
    refused.close()
