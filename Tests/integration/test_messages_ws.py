"""WebSocket messages read as they pass (RFC 6455, permessage-deflate RFC 7692), with the Python
`websockets` library as client and server: cleartext through a blind CONNECT tunnel (how the
library proxies ws://), intercepted wss://, and a plain `Upgrade` relayed by the proxy itself.
Text, binary, fragmented and 16 MiB messages, ping/pong and the close paths; the records — the
`ws.message` events, the summary's `messages` object, the captured `<id>.messages.jsonl` — match
what the peers sent, and the relay is byte for byte."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import ssl
import threading

import pytest

from conftest import wait_until

websockets = pytest.importorskip("websockets", reason="make deps installs websockets")
from websockets.sync.client import connect  # noqa: E402
from websockets.sync.server import serve  # noqa: E402

BIG = 16 << 20


class EchoServer:
    """Echoes every message; a message `close:CODE` closes from the server's side with that code."""

    def __init__(self, compression: str | None = "deflate", tls: ssl.SSLContext | None = None):
        self.server = serve(self.handle, "127.0.0.1", 0, compression=compression, max_size=None, ssl=tls,
                            ping_interval=None)
        self.port = self.server.socket.getsockname()[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def handle(self, ws):
        try:
            for message in ws:
                if message == "drop":
                    ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame: an abnormal closure
                    return
                if isinstance(message, str) and message.startswith("close:"):
                    ws.close(int(message[6:]), "server says bye")
                    return
                ws.send(message)
        except websockets.ConnectionClosed:
            pass

    def stop(self):
        self.server.shutdown()


def conversation(ws) -> bytes:
    """Text, binary, a fragmented text, a ping, a 16 MiB binary; each echoed. Returns the big one's digest."""
    ws.send("hello")
    assert ws.recv() == "hello"
    ws.send(bytes(range(256)) * 4)
    assert ws.recv() == bytes(range(256)) * 4
    ws.send(["frag", "ment", "ed"])
    assert ws.recv() == "fragmented"
    ws.ping(b"p1").wait(10)
    big = os.urandom(BIG)
    ws.send(big)
    assert ws.recv() == big
    return hashlib.sha256(big).digest()


def proxied(proxy, url: str, **options):
    return connect(url, proxy=proxy.url, max_size=None, ping_interval=None, open_timeout=20, **options)


def ws_events(proxy, record_id: int) -> list[dict]:
    return [r for r in proxy.read_log() if r.get("event") == "ws.message" and r.get("id") == record_id]


@pytest.mark.parametrize("compression", ["deflate", None])
def test_a_blind_tunnel_carrying_ws_is_read_message_by_message(make_proxy, compression, tmp_path):
    server = EchoServer(compression=compression)
    proxy = make_proxy({"connect": {"allowed_ports": [server.port]}, "messages": {"decode_budget_bytes": 64 << 20},
                        "capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"], "max_body_bytes": 64 << 20}]}},
                       verbose_events=True)
    try:
        with proxied(proxy, f"ws://127.0.0.1:{server.port}/chat", compression=compression) as ws:
            conversation(ws)
            ws.close(4000, "done")
    finally:
        server.stop()
    record = proxy.only_summary(kind="tunnel")
    m = record["messages"]
    assert record["upgrade"] == "websocket" and m["protocol"] == "websocket" and m["decoding"] == "full", m
    assert m.get("deflate", False) is (compression == "deflate")
    for way in ("client_to_upstream", "upstream_to_client"):
        assert m[way] == {"count": 4, "bytes": 5 + 1024 + 10 + BIG}, (way, m)
    assert m["close_code"] == 4000 and m["close_reason"] == "done" and m["closed_by"] == "client"
    assert 0 <= m["first_ms"] <= m["last_ms"]
    events = ws_events(proxy, record["id"])
    sent = [(e["from"], e["opcode"], e.get("bytes")) for e in events]
    assert sent[:6] == [("client", "text", 5), ("upstream", "text", 5), ("client", "binary", 1024), ("upstream", "binary", 1024),
                        ("client", "text", 10), ("upstream", "text", 10)], sent
    assert ("client", "ping", 2) in sent and ("upstream", "pong", 2) in sent
    assert sent.count(("client", "binary", BIG)) == 1 and ("client", "close", 6) in sent
    hello = next(e for e in events if e["opcode"] == "text")
    assert hello["preview"] == "hello" and hello["ms"] >= 0 and hello.get("compressed", False) is (compression == "deflate")
    fragmented = [e for e in events if e.get("bytes") == 10 and e["from"] == "client"][0]
    assert fragmented["frames"] >= 3 and fragmented["preview"] == "fragmented"  # websockets ends with an empty frame
    # The capture file: a line per message, the payload whole.
    lines = [json.loads(line) for line in open(record["capture"]["messages"])]
    assert [line["type"] for line in lines if line["from"] == "client"][:3] == ["text", "binary", "text"]
    assert lines[0]["text"] == "hello" and base64.b64decode(lines[2 if lines[1]["from"] == "upstream" else 1]["base64"]) \
        == bytes(range(256)) * 4


def test_the_decode_budget_falls_back_to_frame_headers_and_says_so(make_proxy):
    server = EchoServer(compression="deflate")
    proxy = make_proxy({"connect": {"allowed_ports": [server.port]}}, verbose_events=True)
    try:
        with proxied(proxy, f"ws://127.0.0.1:{server.port}/") as ws:
            conversation(ws)
            ws.send("after")
            assert ws.recv() == "after"
            ws.send("close:1001")
            with pytest.raises(websockets.ConnectionClosed):
                ws.recv()
    finally:
        server.stop()
    record = proxy.only_summary(kind="tunnel")
    m = record["messages"]
    assert m["decoding"] == "frame_headers" and m["client_to_upstream"]["count"] == 6, m
    assert m["close_code"] == 1001 and m["closed_by"] == "upstream" and m["close_reason"] == "server says bye"
    after = [e for e in ws_events(proxy, record["id"]) if e["opcode"] == "text"][-1]
    assert "bytes" not in after and "preview" not in after and after["wire_bytes"] > 0


def test_intercepted_wss_is_read_like_cleartext(make_proxy, pki):
    from test_tls_intercept import ca_file, intercepting
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki.good.tls[0]), str(pki.good.tls[1]))
    server = EchoServer(tls=context)
    proxy = make_proxy(intercepting(pki, server, messages={"decode_budget_bytes": 64 << 20}), verbose_events=True)
    client_tls = ssl.create_default_context(cafile=ca_file(proxy))
    try:
        with proxied(proxy, f"wss://localhost:{server.port}/secure", ssl=client_tls) as ws:
            digest = conversation(ws)
            ws.close()
    finally:
        server.stop()
    assert digest
    record = proxy.only_summary(kind="intercepted")
    m = record["messages"]
    assert record["status"] == 101 and record["upgrade"] == "websocket" and m["deflate"] is True
    assert m["upstream_to_client"] == {"count": 4, "bytes": 5 + 1024 + 10 + BIG} and m["close_code"] == 1000


def test_a_plain_upgrade_relayed_by_the_proxy_is_read_too(make_proxy):
    """A client that sends its Upgrade to the proxy in absolute form (no CONNECT)."""
    server = EchoServer(compression=None)
    proxy = make_proxy({}, verbose_events=True)
    try:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        # websockets speaks over a socket we give it; the first request line names the origin.
        sock.sendall(f"GET http://127.0.0.1:{server.port}/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                     .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        mask = b"\x01\x02\x03\x04"
        payload = b"plain upgrade"
        sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        echoed = head.split(b"\r\n\r\n", 1)[1]
        while len(echoed) < 2 + len(payload):
            echoed += sock.recv(4096)
        assert echoed[2:2 + len(payload)] == payload
        sock.sendall(bytes([0x88, 0x82]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"\x03\xe8")))
        sock.recv(4096)
        sock.close()
    finally:
        server.stop()
    record = proxy.only_summary(kind="http")
    m = record["messages"]
    assert m["client_to_upstream"] == {"count": 1, "bytes": len(payload)} and m["close_code"] == 1000
    wait_until(lambda: len(ws_events(proxy, record["id"])) >= 3, timeout=5)
    first = ws_events(proxy, record["id"])[0]
    assert first["from"] == "client" and first["preview"] == "plain upgrade" and first["wire_bytes"] == 2 + 4 + len(payload)


def test_an_end_without_a_close_frame_is_1006_and_filterable(make_proxy):
    from test_log_command import lookout_log
    server = EchoServer(compression=None)
    proxy = make_proxy({"connect": {"allowed_ports": [server.port]}})
    try:
        with proxied(proxy, f"ws://127.0.0.1:{server.port}/") as ws:
            ws.send("drop")
            with pytest.raises(websockets.ConnectionClosed):
                ws.recv()
    finally:
        server.stop()
    record = proxy.only_summary(kind="tunnel")
    assert record["messages"]["close_code"] == 1006 and "closed_by" not in record["messages"], record["messages"]
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--filter", "ws.close:1006", "--format", "jsonl")
    assert rc == 0 and [json.loads(line)["id"] for line in out.splitlines()] == [record["id"]]
