"""HTTP/2 toward intercepted clients: a client that offers h2 in ALPN inside a CONNECT gets an
HTTP/2 server (nghttp2), and every stream runs as an exchange through the same pipeline as
HTTP/1.1 — toward HTTP/1.1 origins here. Peers: curl --http2, httpx[http2], and the raw `h2`
client (h2_client.py) for what ordinary clients never do: shut windows, resets, floods."""

import asyncio
import hashlib
import json
import os
import signal
import struct
import ssl
import subprocess
import time
import urllib.request

import h2.errors
import httpx
import pytest

import origins
from conftest import assert_error_summary, client_env, curl, curl_sha256, rss_kib, wait_until
from h2_client import H2Client, Response, connect_through
from test_tls_intercept import ca_file, intercepting

ENHANCE_YOUR_CALM = 0xb


@pytest.fixture(scope="module")
def good_origin(pki):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    yield origin
    origin.stop()


def open_h2(proxy, origin, **kw) -> H2Client:
    client = H2Client(proxy.port, ca_file(proxy), port=origin.port, **kw)
    assert client.alpn == "h2", client.alpn
    return client


def test_curl_http2_requests_are_exchanges_with_their_stream_ids(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    first = f"https://localhost:{good_origin.port}/fixed/100"
    second = f"https://localhost:{good_origin.port}/echo"
    result = curl(proxy, first, "--http2", "--cacert", ca_file(proxy), second)
    assert result.rc == 0, result.stderr
    assert result.is_http2, result.blocks
    recs = proxy.summaries(2, kind="intercepted")
    assert [r["url"] for r in recs] == [second, first], recs
    assert [r["stream_id"] for r in recs] == [1, 3], recs
    assert recs[0]["conn"] == recs[1]["conn"], "one connection, two streams"
    for rec in recs:
        assert rec["http_version"] == "HTTP/2" and rec["status"] == 200, rec
        assert rec["upstream"]["protocol"] == "http/1.1", rec
    assert recs[1]["bytes"]["response_body"] == 100, recs[1]
    # The origin heard HTTP/1.1 with Host from :authority (RFC 9113 §8.3.1).
    echoed, _ = json.JSONDecoder().raw_decode(result.body[result.body.index(b"{"):].decode())
    assert ["Host", f"localhost:{good_origin.port}"] in echoed["headers"], echoed


def test_many_concurrent_streams_share_one_connection(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))

    async def fetch_all():
        context = ssl.create_default_context(cafile=ca_file(proxy))
        async with httpx.AsyncClient(http2=True, proxy=proxy.url, verify=context, timeout=30) as client:
            urls = [f"https://localhost:{good_origin.port}/fixed/{1000 + i}" for i in range(40)]
            # The first request settles the connection (ALPN h2); the rest share it at once.
            responses = [await client.get(urls[0])]
            responses += await asyncio.gather(*(client.get(u) for u in urls[1:]))
            return [(r.http_version, r.status_code, len(r.content)) for r in responses]

    results = asyncio.run(fetch_all())
    assert results == [("HTTP/2", 200, 1000 + i) for i in range(40)], results
    recs = proxy.summaries(40, kind="intercepted")
    assert len({r["conn"] for r in recs}) == 1, "httpx multiplexed them over one connection"
    assert len({r["stream_id"] for r in recs}) == 40
    assert all(r["http_version"] == "HTTP/2" for r in recs)


def test_bodies_cross_intact_both_ways(make_proxy, pki, good_origin, tmp_path):
    proxy = make_proxy(intercepting(pki, good_origin))
    size = 24 << 20
    rc, count, digest, blocks, err = curl_sha256(proxy, f"https://localhost:{good_origin.port}/huge/{size}",
                                                 "--http2", "--cacert", ca_file(proxy))
    assert rc == 0, err
    assert (count, digest) == (size, origins.expected_sha256(size))
    # An upload of unknown length (no content-length): chunked toward the HTTP/1.1 origin.
    upload = os.urandom(3 << 20)
    client = open_h2(proxy, good_origin)
    stream = client.request("/echo", method="POST", body=upload)
    r = client.response(stream, timeout=60)
    assert r.status == 200, r.status
    echoed = json.loads(bytes(r.body))
    assert echoed["body_length"] == len(upload) and echoed["body_framing"] == "chunked", echoed
    assert echoed["body_sha256"] == hashlib.sha256(upload).hexdigest()
    rec = proxy.summaries(2, kind="intercepted")[-1]
    assert rec["bytes"]["request_body"] == len(upload), rec
    client.close()


def test_trailers_cookies_and_early_hints_are_translated(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    client = open_h2(proxy, good_origin)
    # RFC 9113 §8.2.3: cookie crumbs are joined for HTTP/1.1.
    echo = client.request("/echo", headers=[("cookie", "a=1"), ("cookie", "b=2"), ("x-thing", "kept")])
    r = client.response(echo)
    headers = json.loads(bytes(r.body))["headers"]
    assert ["Cookie", "a=1; b=2"] in headers, headers
    assert ["x-thing", "kept"] in headers, headers
    # Trailers from a chunked HTTP/1.1 response arrive as an HTTP/2 trailer section.
    chunked = client.request("/chunked/100000")
    r = client.response(chunked)
    assert len(r.body) == 100000
    assert ("x-checksum", origins.expected_sha256(100000)) in r.trailers, r.trailers
    # No connection-specific fields on HTTP/2 (§8.2.2), whatever the origin sent.
    hop = client.request("/hop")
    r = client.response(hop)
    names = [k for k, _ in r.headers]
    assert "connection" not in names and "keep-alive" not in names and "x-hop-header" not in names, names
    assert r.header("x-end") == "kept"
    # 1xx passes as an interim HEADERS frame.
    hints = client.request("/103")
    r = client.response(hints)
    assert r.status == 200 and bytes(r.body) == b"hello"
    assert any(dict(h).get(":status") == "103" for h in r.informational), r.informational
    client.close()


def test_a_slow_stream_does_not_stall_the_others(make_proxy, pki, good_origin):
    """Flow control is backpressure (RFC 9113 §5.2): a stream whose window the client keeps shut
    holds back only its own response; another stream on the connection still completes, and the
    proxy does not buffer the held-back body."""
    proxy = make_proxy(intercepting(pki, good_origin))
    client = open_h2(proxy, good_origin, window=65535)
    client.auto_ack = False
    big = client.request(f"/huge/{64 << 20}")
    client.wait(lambda: len(client.responses[big].body) >= 65535, message="the first window's worth")
    # Open the connection's window only: stream `big` stays shut.
    client.conn.increment_flow_control_window(1 << 30)
    client.flush()
    small = client.request("/fixed/5000")
    # Nothing is acknowledged: the small response fits in its own stream's first window.
    r = client.response(small)
    assert r.ended and len(r.body) == 5000
    assert len(client.responses[big].body) == 65535, "not a byte past the stream's window"
    time.sleep(1)
    assert rss_kib(proxy.proc.pid) < 200 * 1024, "the held-back body is not buffered"
    client.conn.reset_stream(big, h2.errors.ErrorCodes.CANCEL)
    client.flush()
    rec = next(r for r in proxy.summaries(2, kind="intercepted") if r["url"].endswith(f"/huge/{64 << 20}"))
    assert_error_summary(rec, 200, "client_closed", url=rec["url"])
    assert "reset HTTP/2 stream 1 (CANCEL)" in rec["error"]["message"], rec
    client.close()


def test_a_reset_stream_ends_its_exchange_and_closes_upstream(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    client = open_h2(proxy, good_origin)
    stream = client.request("/slow?pieces=20&interval=0.2")
    client.wait(lambda: client.responses[stream].status == 200, message="response head")
    client.conn.reset_stream(stream, h2.errors.ErrorCodes.CANCEL)
    client.flush()
    rec = proxy.only_summary(kind="intercepted")
    assert_error_summary(rec, 200, "client_closed", url=rec["url"])
    assert rec["stream_id"] == stream
    # The connection goes on.
    again = client.request("/fixed/10")
    assert client.response(again).status == 200
    client.close()


def test_refusals_are_stream_errors_with_records(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, http2={"max_header_list_bytes": 4096}))
    client = open_h2(proxy, good_origin)
    big = client.request("/fixed/1", headers=[("x-big", "v" * 5000)])
    r = client.response(big)
    assert r.status == 431 and r.header("x-lookout-error") == "request_header_too_large", (r.status, r.headers)
    other = H2Client(proxy.port, ca_file(proxy), port=good_origin.port, authority="elsewhere.example:443")
    misdirected = other.request("/fixed/1")
    r = other.response(misdirected)
    assert r.status == 421 and r.header("x-lookout-error") == "misdirected_request", (r.status, r.headers)
    # The same check on a connection whose earlier streams named the origin (Lookout keeps the
    # authority that last matched): another one on a later stream is still misdirected.
    assert client.response(client.request("/fixed/2")).status == 200
    client.authority, named = "elsewhere.example:443", client.authority
    misdirected_later = client.request("/fixed/1")
    client.authority = named
    r = client.response(misdirected_later)
    assert r.status == 421 and r.header("x-lookout-error") == "misdirected_request", (r.status, r.headers)
    # An HPACK bomb: one 1 KB field, then indexed references to it — a small frame that decodes
    # to more than the limit.
    bomb = client.request("/fixed/1", headers=[("x-rep", "v" * 1000)] * 10)
    r = client.response(bomb)
    assert r.status == 431 and r.header("x-lookout-error") == "request_header_too_large", (r.status, r.headers)
    # CONNECT on a stream (RFC 9113 §8.5), and a request naming no authority at all: nghttp2
    # finds that one malformed (neither :authority nor host) and resets it.
    connect_stream = client.conn.get_next_available_stream_id()
    client.conn.send_headers(connect_stream, [(":method", "CONNECT"), (":authority", "localhost:443")], end_stream=False)
    client.responses[connect_stream] = Response()
    client.flush()
    r = client.response(connect_stream)
    assert r.status == 501 and r.header("x-lookout-error") == "connect_over_http2", (r.status, r.headers)
    anonymous = client.conn.get_next_available_stream_id()
    client.conn.send_headers(anonymous, [(":method", "GET"), (":scheme", "https"), (":path", "/fixed/1")],
                             end_stream=True)
    client.responses[anonymous] = Response()
    client.flush()
    r = client.response(anonymous)
    assert r.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR, (r.status, r.reset)
    ok = client.request("/fixed/3")
    assert client.response(ok).status == 200, "a refusal ends only its own stream"
    recs = proxy.summaries(8, kind="intercepted")
    codes = sorted((r.get("error") or {}).get("code", "") for r in recs)
    assert codes == ["", "", "connect_over_http2", "malformed_request", "misdirected_request", "misdirected_request",
                     "request_header_too_large", "request_header_too_large"], recs
    assert all(r["http_version"] == "HTTP/2" and "stream_id" in r for r in recs), recs
    client.close()
    other.close()


def test_malformed_requests_are_reset_and_logged(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    client = open_h2(proxy, good_origin)
    # A connection-specific field is malformed (RFC 9113 §8.2.2): PROTOCOL_ERROR on the stream.
    stream = client.conn.get_next_available_stream_id()
    client.conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":path", "/fixed/1"),
                                      (":authority", client.authority), ("connection", "close")], end_stream=True)
    client.responses[stream] = Response()
    client.flush()
    r = client.response(stream)
    assert r.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR, r.reset
    rec = proxy.only_summary(kind="intercepted")
    assert rec["error"]["code"] == "malformed_request" and rec["stream_id"] == stream, rec
    assert rec["http_version"] == "HTTP/2"
    client.close()


def test_rapid_reset_is_cut_off_with_enhance_your_calm(make_proxy, pki, good_origin):
    """CVE-2023-44487: streams opened and reset in a loop end the connection with GOAWAY
    ENHANCE_YOUR_CALM, and the log says why."""
    proxy = make_proxy(intercepting(pki, good_origin))
    client = open_h2(proxy, good_origin)
    for _ in range(400):
        stream = client.request("/slow?pieces=50&interval=1")
        client.conn.reset_stream(stream, h2.errors.ErrorCodes.CANCEL)
    try:
        client.flush()
    except OSError:
        pass
    client.wait(lambda: client.goaway is not None or client.closed, timeout=15, message="GOAWAY")
    assert client.goaway and client.goaway[0] == ENHANCE_YOUR_CALM, client.goaway
    events = proxy.log_records(1, where=lambda r: r.get("event") == "connection.didEndHTTP2", timeout=5)
    assert events and events[0]["code"] == "ENHANCE_YOUR_CALM" and "rapid reset" in events[0]["reason"], events
    assert proxy.running
    client.close()


def test_control_frame_floods_are_cut_off(make_proxy, pki, good_origin):
    """PING and SETTINGS (each asks for an ACK), PRIORITY and empty DATA frames cost the client
    nothing: past the burst, GOAWAY ENHANCE_YOUR_CALM."""
    proxy = make_proxy(intercepting(pki, good_origin))
    for flood in ("ping", "settings", "priority", "empty data"):
        client = open_h2(proxy, good_origin)
        upload = client.request("/echo", method="POST", end=False) if flood == "empty data" else None
        for i in range(500):
            if flood == "ping":
                client.conn.ping(i.to_bytes(8, "big"))
            elif flood == "settings":
                client.conn.update_settings({4: 65535 + i})
            elif flood == "priority":
                client.conn.prioritize(1, weight=16 + i % 200)
            else:
                client.conn.send_data(upload, b"")
        try:
            client.flush()
        except OSError:
            pass
        client.wait(lambda: client.goaway is not None or client.closed, timeout=15, message=f"{flood} GOAWAY")
        assert client.goaway and client.goaway[0] == ENHANCE_YOUR_CALM, (flood, client.goaway)
        client.close()
    events = proxy.log_records(4, where=lambda r: r.get("event") == "connection.didEndHTTP2")
    reasons = sorted(e["reason"] for e in events)
    assert reasons == ["a flood of PING frames", "a flood of PRIORITY frames", "a flood of SETTINGS frames",
                       "a flood of empty DATA frames"], reasons
    assert all(e["code"] == "ENHANCE_YOUR_CALM" for e in events), events


def test_stream_limit_is_advertised_and_enforced(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, http2={"max_concurrent_streams": 2}))
    client = open_h2(proxy, good_origin)
    client.wait(lambda: 3 in client.remote_settings, message="SETTINGS")
    assert client.remote_settings[3] == 2  # SETTINGS_MAX_CONCURRENT_STREAMS
    # The client's own bookkeeping would hold the third stream back: it is told the limit is higher.
    client.conn.remote_settings[3] = 100
    client.conn.remote_settings.acknowledge()
    streams = [client.request("/slow?pieces=2&interval=0.5") for _ in range(3)]
    # nghttp2 treats a stream past the acknowledged limit as a connection error (PROTOCOL_ERROR),
    # naming the last stream it took; the record carries its reason.
    client.wait(lambda: client.goaway is not None or client.closed, message="GOAWAY")
    assert client.goaway == (h2.errors.ErrorCodes.PROTOCOL_ERROR, streams[1]), client.goaway
    events = proxy.log_records(1, where=lambda r: r.get("event") == "connection.didEndHTTP2")
    assert events[0]["code"] == "PROTOCOL_ERROR" and "concurrent" in events[0]["reason"].lower(), events
    client.close()


def test_protocol_errors_end_the_connection_with_a_record(make_proxy, pki, good_origin):
    """A bad preface (RFC 9113 §3.4), a CONTINUATION flood (more than 8 after one HEADERS) and a
    stream id going backwards each end the connection with a GOAWAY and a connection.didEndHTTP2
    record."""
    proxy = make_proxy(intercepting(pki, good_origin))
    raw = connect_through(proxy.port, "localhost", good_origin.port)
    context = ssl.create_default_context(cafile=ca_file(proxy))
    context.set_alpn_protocols(["h2"])
    tls = context.wrap_socket(raw, server_hostname="localhost")
    assert tls.selected_alpn_protocol() == "h2"
    tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n" + b"\0" * 64)
    tls.settimeout(10)
    received = b""
    while chunk := tls.recv(65536):
        received += chunk
    assert b"\x00\x00\x08\x07" in received, "a GOAWAY frame (length 8, type 7) before the close"

    client = open_h2(proxy, good_origin)
    block = client.conn.encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", client.authority),
                                        (":path", "/fixed/1"), ("x-padding", "p" * 40)])
    frames = struct.pack(">I", 1)[1:] + bytes([0x1, 0x1]) + struct.pack(">I", 1) + block[:1]  # HEADERS, END_STREAM only
    for i in range(1, 20):
        frames += struct.pack(">I", 1)[1:] + bytes([0x9, 0x0]) + struct.pack(">I", 1) + block[i:i + 1]  # CONTINUATION
    client.sock.sendall(frames)
    client.wait_closed()
    client.close()

    # A stream id lower than one already opened, never used itself (RFC 9113 §5.1.1).
    client = open_h2(proxy, good_origin)
    fields = [(":method", "GET"), (":scheme", "https"), (":authority", client.authority), (":path", "/fixed/1")]
    for stream in (5, 3):
        block = client.conn.encoder.encode(fields)
        client.sock.sendall(struct.pack(">I", len(block))[1:] + bytes([0x1, 0x5]) + struct.pack(">I", stream) + block)
    client.wait(lambda: client.goaway is not None or client.closed, message="GOAWAY")
    assert client.goaway and client.goaway[0] == h2.errors.ErrorCodes.PROTOCOL_ERROR, client.goaway
    events = proxy.log_records(3, where=lambda r: r.get("event") == "connection.didEndHTTP2")
    assert [e["code"] for e in events] == ["PROTOCOL_ERROR"] * 3, events
    assert "magic" in events[0]["reason"].lower() and "continuation" in events[1]["reason"].lower(), events
    assert "stream 3" in events[2]["reason"] and "5.1.1" in events[2]["reason"], events
    assert proxy.running
    client.close()


def test_a_shut_window_times_out(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, timeouts={"client_idle": 1}))
    client = open_h2(proxy, good_origin, window=1024)
    client.auto_ack = False
    stream = client.request(f"/huge/{1 << 20}")
    r = client.response(stream, timeout=15)
    assert r.reset == h2.errors.ErrorCodes.CANCEL, r.reset
    rec = proxy.only_summary(kind="intercepted", timeout=10)
    assert "window shut" in rec["error"]["message"], rec
    client.close()


def test_shutdown_sends_goaway_and_lets_streams_finish(make_proxy, pki, good_origin, tmp_path):
    """SIGTERM: GOAWAY (RFC 9113 §6.8) names the streams that will be served; a running one
    finishes within the grace period. curl (nghttp2) reads on after a graceful GOAWAY."""
    proxy = make_proxy(intercepting(pki, good_origin, timeouts={"shutdown_grace": 10}))
    out = tmp_path / "body"
    client = subprocess.Popen(["curl", "-q", "-sS", "--http2", "-x", proxy.url, "--cacert", ca_file(proxy),
                               "-o", str(out), f"https://localhost:{good_origin.port}/slow?pieces=4&interval=0.5"],
                              stderr=subprocess.PIPE, env=client_env())
    def running():
        with urllib.request.urlopen(proxy.url + "/exchanges?state=in_flight", timeout=5) as page:
            return bool(json.loads(page.read())["exchanges"])
    wait_until(running, timeout=10, message="the stream running")
    proxy.send_signal(signal.SIGTERM)
    assert client.wait(timeout=20) == 0, client.stderr.read()
    assert out.read_bytes() == origins.slow_body(4)
    assert proxy.wait_exit(15) == 0
    rec = proxy.only_summary(kind="intercepted")
    assert rec["status"] == 200 and "error" not in rec, rec


def test_http2_client_off_negotiates_http11(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, http2={"client": False}))
    result = curl(proxy, f"https://localhost:{good_origin.port}/fixed/10", "--http2", "--cacert", ca_file(proxy))
    assert result.rc == 0 and not result.is_http2, result.blocks
    assert proxy.only_summary(kind="intercepted")["http_version"] == "HTTP/1.1"
