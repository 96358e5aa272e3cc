"""Protocol switches over plain HTTP (Upgrade, e.g. WebSocket): relayed as a tunnel after the 101."""

from __future__ import annotations

import hashlib
import os
import socket
import time

import origins
from conftest import (Reader, assert_envelope, connect,
                      is_number, read_response, rss_kib)

WS_HEADERS = [("Upgrade", "websocket"), ("Connection", "Upgrade"),
              ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]


def handshake(url: str, authority: str, headers=WS_HEADERS) -> bytes:
    lines = [f"GET {url} HTTP/1.1", f"Host: {authority}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def open_websocket(proxy, o, early: bytes = b""):
    """Sends the handshake (plus `early` bytes right behind it), reads the 101; returns socket,
    reader and the response."""
    s = connect(proxy.port)
    s.sendall(handshake(o.url("/chat"), o.authority) + early)
    r = Reader(s, 15)
    resp = read_response(r)
    return s, r, resp


def echo_round_trip(s: socket.socket, r: Reader, payload: bytes):
    """Sends `payload` while reading the echo back (both ways at once, so neither side stalls)."""
    got = bytearray()
    view = memoryview(payload)
    sent = 0
    s.setblocking(True)
    while sent < len(payload):
        n = s.send(view[sent:sent + 65536])
        sent += n
        # keep the echo flowing so the proxy's buffers never fill up both ways
        while len(got) + 65536 <= sent:
            got += r.read_exact(65536)
    got += r.read_exact(len(payload) - len(got))
    return bytes(got)


def test_websocket_upgrade_is_relayed_both_ways(make_proxy, raw_origin):
    p = make_proxy(verbose_events=True)
    o = raw_origin("websocket_echo")
    s, r, resp = open_websocket(p, o)
    assert resp.status == 101, resp.head
    assert resp.header("Upgrade").lower() == "websocket"
    assert "upgrade" in resp.header("Connection").lower()
    assert resp.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert resp.header("Via"), resp.head
    # The origin's first frame came in the same segment as its 101: nothing of it may be lost.
    assert r.read_exact(len(origins.WS_GREETING)) == origins.WS_GREETING
    payload = os.urandom(3 << 20)
    assert echo_round_trip(s, r, payload) == payload
    s.shutdown(socket.SHUT_WR)
    assert r.read_to_eof() == b""
    s.close()

    # What the origin was asked: the switch, on this hop too.
    head = o.wait_received(1)[0].lower()
    assert b"\r\nupgrade: websocket\r\n" in head, head
    assert b"\r\nconnection: upgrade\r\n" in head, head
    assert b"sec-websocket-key: dghlihnhbxbszsbub25jzq==" in head, head

    rec = p.only_summary()
    assert_envelope(rec)
    assert "error" not in rec, rec
    assert rec["kind"] == "http" and rec["method"] == "GET" and rec["url"] == o.url("/chat"), rec
    assert rec["status"] == 101, rec
    assert rec["upgrade"] == "websocket", rec
    assert rec["bytes"]["client_to_upstream"] == len(payload), rec
    assert rec["bytes"]["upstream_to_client"] == len(payload) + len(origins.WS_GREETING), rec
    assert rec["bytes"]["response_body"] == 0 and rec["bytes"]["response_headers"] > 0, rec
    assert is_number(rec["duration_ms"]) and rec["duration_ms"] >= 0, rec

    rid = rec["id"]
    events = [e["event"] for e in p.read_log() if e.get("id") == rid and e["event"] != "exchange"]
    assert events[0] == "request.didCreateInitialRequest", events
    assert events[-1] == "request.didFinish", events
    assert events.count("task.didReceiveResponse") == 1, events
    assert events.count("task.didComplete") == 1, events
    # The task ends at the 101; the tunnel opens after it and closes before the exchange ends.
    assert events.index("task.didComplete") < events.index("tunnel.didOpen") < events.index("tunnel.didClose"), events
    closed = next(e for e in p.read_log() if e.get("id") == rid and e["event"] == "tunnel.didClose")
    assert closed["client_to_upstream"] == len(payload), closed
    assert closed["upstream_to_client"] == len(payload) + len(origins.WS_GREETING), closed


def test_bytes_sent_right_behind_the_handshake_are_kept(make_proxy, raw_origin):
    """A client that does not wait for the 101: its first frame is already the new protocol."""
    p = make_proxy()
    o = raw_origin("websocket_echo")
    early = b"\x81\x05early"
    s, r, resp = open_websocket(p, o, early=early)
    assert resp.status == 101
    assert r.read_exact(len(origins.WS_GREETING)) == origins.WS_GREETING
    assert r.read_exact(len(early)) == early
    s.shutdown(socket.SHUT_WR)
    assert r.read_to_eof() == b""
    s.close()
    rec = p.only_summary()
    assert rec["status"] == 101 and rec["bytes"]["client_to_upstream"] == len(early), rec


def test_refused_upgrade_stays_http(make_proxy, raw_origin):
    """The origin answers without switching: an ordinary response, and the connection stays HTTP."""
    p = make_proxy()
    o = raw_origin("websocket_echo")
    s = connect(p.port)
    s.sendall(handshake(o.url("/chat"), o.authority, [("Upgrade", "other"), ("Connection", "Upgrade")]))
    r = Reader(s, 15)
    resp = read_response(r)
    assert resp.status == 426 and resp.body == b"no", resp.head
    assert resp.header("Upgrade") is None, "Upgrade is hop-by-hop on a response that did not switch"
    s.close()
    rec = p.only_summary()
    assert rec["status"] == 426 and "upgrade" not in rec and "error" not in rec, rec


def test_upgrade_through_an_upgrade_unaware_client_path_closes_cleanly(make_proxy, raw_origin):
    """The client goes away in the middle of the switched conversation: the origin side is closed
    too, and the summary records what was relayed and how it ended."""
    p = make_proxy()
    o = raw_origin("websocket_echo")
    s, r, resp = open_websocket(p, o)
    assert resp.status == 101
    assert r.read_exact(len(origins.WS_GREETING)) == origins.WS_GREETING
    s.sendall(b"ping")
    assert r.read_exact(4) == b"ping"
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()  # RST
    rec = p.only_summary()
    assert rec["status"] == 101 and rec["upgrade"] == "websocket", rec
    assert rec["bytes"]["client_to_upstream"] == 4 and rec["bytes"]["upstream_to_client"] == 4 + len(origins.WS_GREETING), rec
    assert rec["error"]["code"] == "client_closed", rec


def test_switched_origin_flooding_a_slow_client_keeps_every_byte_and_memory_bounded(make_proxy, raw_origin):
    """24 MiB from the origin right after its 101, to a client that starts reading 1.5 s late:
    backpressure holds the rest in the kernel, not in the proxy, and nothing is lost."""
    p = make_proxy()
    o = raw_origin("websocket_echo")
    base = rss_kib(p.proc.pid)
    s = connect(p.port)
    s.sendall(handshake(o.url("/flood"), o.authority))
    time.sleep(1.5)
    peak = rss_kib(p.proc.pid)
    r = Reader(s, 30)
    resp = read_response(r)
    assert resp.status == 101, resp.head
    assert r.read_exact(len(origins.WS_GREETING)) == origins.WS_GREETING
    expected = hashlib.sha256()
    chunk = origins.pattern(1 << 20)
    for _ in range(origins.WS_FLOOD_MIB):
        expected.update(chunk)
    got = hashlib.sha256()
    total = 0
    while True:
        data = r.read_exact(1 << 20)  # fewer only at EOF
        if not data:
            break
        got.update(data)
        total += len(data)
        peak = max(peak, rss_kib(p.proc.pid))
    s.close()
    assert total == origins.WS_FLOOD_MIB << 20
    assert got.hexdigest() == expected.hexdigest()
    assert peak - base < 16 * 1024, f"RSS grew by {peak - base} KiB while relaying {total} bytes"
    rec = p.only_summary()
    assert rec["status"] == 101 and "error" not in rec, rec
    assert rec["bytes"]["upstream_to_client"] == total + len(origins.WS_GREETING), rec
    assert rec["bytes"]["client_to_upstream"] == 0, rec


def test_origin_reset_after_the_switch_is_logged_and_delivers_what_came_before(make_proxy, raw_origin):
    """The origin resets the switched connection: the client still gets every byte sent before
    the reset, then a reset of its own; the summary keeps status 101 and says upstream_closed."""
    p = make_proxy()
    o = raw_origin("websocket_echo")
    s = connect(p.port)
    s.sendall(handshake(o.url("/reset"), o.authority))
    r = Reader(s, 15)
    resp = read_response(r)
    assert resp.status == 101, resp.head
    assert r.read_to_eof() == origins.WS_GREETING + origins.WS_PARTIAL
    assert r.reset, "the origin's reset reached the client as an ordinary end"
    s.close()
    rec = p.only_summary()
    assert rec["status"] == 101 and rec["upgrade"] == "websocket", rec
    assert rec["error"]["code"] == "upstream_closed", rec
    assert rec["bytes"]["upstream_to_client"] == len(origins.WS_GREETING) + len(origins.WS_PARTIAL), rec
    assert rec["bytes"]["client_to_upstream"] == 0, rec
