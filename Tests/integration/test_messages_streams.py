"""Event streams and gRPC messages split as they pass: Server-Sent Events and NDJSON from an origin
that writes each event at a scripted moment (time to the first event and the gaps within ±5 ms of
the script), a stream cut in the middle, and gRPC calls from grpcio (unary, server-streaming,
bidirectional) with their status from the trailers."""

from __future__ import annotations

import json
import socket
import threading
import time
from types import SimpleNamespace

import pytest

from conftest import curl, wait_until

FIRST_MS = 150
GAPS_MS = [40, 40, 40, 250, 40]


class ScriptedStream:
    """Answers each request with `content_type`, then writes `events` (bytes each) at the script's
    moments, chunked; `cut` closes the connection in the middle of the last event instead of ending."""

    def __init__(self, content_type: str, events: list[bytes], cut: bool = False):
        self.content_type, self.events, self.cut = content_type, events, cut
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket):
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            start = time.monotonic()
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\nTransfer-Encoding: chunked\r\n"
                         "Cache-Control: no-store\r\n\r\n".encode())
            moment = FIRST_MS / 1000
            for index, event in enumerate(self.events):
                time.sleep(max(0.0, start + moment - time.monotonic()))
                if self.cut and index == len(self.events) - 1:
                    conn.sendall(b"%x\r\n%s" % (len(event), event[: len(event) // 2]))
                    return
                conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
                if index < len(GAPS_MS):
                    moment += GAPS_MS[index] / 1000
            conn.sendall(b"0\r\n\r\n")

    def stop(self):
        self.sock.close()


SSE = [b": hello\n\n", b"data: one\n\n", b"event: add\nid: 2\ndata: {\"n\": 2}\n\n", b"data: three\ndata: lines\n\n",
       b"data: four\n\n", b"data: [DONE]\n\n"]


def assert_timing(m: dict, events: int):
    # The comment line is no event: the first event is the second write, one gap later.
    assert m["count"] == events and m["upstream_to_client"]["count"] == events, m
    assert abs(m["first_event_ms"] - (FIRST_MS + GAPS_MS[0])) <= 5, m
    gaps = sorted(GAPS_MS[1:])
    assert abs(m["gaps_ms"]["p50"] - gaps[len(gaps) // 2 - 1]) <= 5 and abs(m["gaps_ms"]["max"] - 250) <= 5, m


def test_server_sent_events_are_split_and_timed(make_proxy):
    origin = ScriptedStream("text/event-stream", SSE)
    proxy = make_proxy({}, verbose_events=True)
    try:
        result = curl(proxy, origin.url("/stream"), "-N")
    finally:
        origin.stop()
    assert result.body == b"".join(SSE), "relayed byte for byte"
    record = proxy.only_summary(kind="http")
    m = record["messages"]
    assert m["protocol"] == "sse" and m["decoding"] == "full"
    assert_timing(m, 5)
    events = [r for r in proxy.read_log() if r.get("event") == "stream.event" and r.get("id") == record["id"]]
    assert [e["index"] for e in events] == [1, 2, 3, 4, 5] and all(e["from"] == "upstream" for e in events)
    assert [e.get("preview") for e in events] == ["one", '{"n": 2}', "three\nlines", "four", "[DONE]"]
    assert events[1]["event_name"] == "add" and events[1]["event_id"] == "2" and events[0]["event_name"] == "message"
    assert events[0]["bytes"] == len(SSE[1]), "a keep-alive comment between events belongs to none"
    # Where people look: the filter language, the summary's columns, /metrics.
    from test_log_command import lookout_log
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--filter", "first_event>100ms and messages>=5", "--format", "jsonl")
    assert rc == 0 and [json.loads(line)["id"] for line in out.splitlines()] == [record["id"]]
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--filter", "first_event>1s", "--format", "jsonl")
    assert rc == 0 and out == ""
    rc, out, _ = lookout_log(proxy, "summary", str(proxy.log_path), "--by", "kind")
    assert rc == 0 and "first_event_p50" in out.splitlines()[0], out
    import urllib.request
    page = urllib.request.urlopen(f"{proxy.url}/metrics", timeout=10).read().decode()
    assert 'lookout_messages_total{protocol="sse",direction="upstream_to_client"} 5' in page, page
    assert 'lookout_stream_first_event_seconds_count{protocol="sse"} 1' in page
    assert 'lookout_stream_gap_seconds_count{protocol="sse"} 4' in page


def test_ndjson_is_a_line_each_and_a_cut_stream_keeps_what_arrived(make_proxy, tmp_path):
    lines = [json.dumps({"token": i}).encode() + b"\n" for i in range(6)]
    origin = ScriptedStream("application/x-ndjson", lines)
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]}})
    try:
        assert curl(proxy, origin.url("/tokens"), "-N").body == b"".join(lines)
    finally:
        origin.stop()
    record = proxy.only_summary(kind="http")
    m = record["messages"]
    assert m["protocol"] == "ndjson" and abs(m["first_event_ms"] - FIRST_MS) <= 5 and m["count"] == 6, m
    captured = [json.loads(line) for line in open(record["capture"]["messages"])]
    assert [json.loads(c["text"]) for c in captured] == [{"token": i} for i in range(6)]
    assert all(c["type"] == "event" and c["from"] == "upstream" for c in captured)

    cut = ScriptedStream("application/x-ndjson", lines, cut=True)
    proxy2 = make_proxy({})
    try:
        broken = curl(proxy2, cut.url("/tokens"), "-N")
    finally:
        cut.stop()
    assert broken.rc != 0, "the client sees a broken transfer"
    record = proxy2.only_summary(kind="http")
    assert record["error"]["code"].startswith("upstream_"), record
    assert record["messages"]["count"] == 5, "the five whole lines; the cut one is no event"


def test_grpc_messages_each_way_and_the_status(make_proxy, pki):
    import grpc
    from test_grpc import SERVICE, _handlers, channel_through
    from test_tls_intercept import intercepting
    from concurrent import futures
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((_handlers(),))
    cert, key = pki.good.tls
    port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())]))
    server.start()
    proxy = make_proxy(intercepting(pki, SimpleNamespace(port=port)), verbose_events=True)
    try:
        with channel_through(proxy, port) as channel:
            assert channel.unary_unary(f"/{SERVICE}/Reverse")(b"lookout", timeout=10) == b"tuokool"
            assert len(list(channel.unary_stream(f"/{SERVICE}/Count")(b"4", timeout=10))) == 4
            echo = channel.stream_stream(f"/{SERVICE}/Echo")
            assert list(echo(iter([b"a", b"bb", b"ccc"]), timeout=10)) == [b"echo:a", b"echo:bb", b"echo:ccc"]
            with pytest.raises(grpc.RpcError):
                channel.unary_unary(f"/{SERVICE}/Fail")(b"widget", timeout=10)
    finally:
        server.stop(0)
    records = {r["url"].rsplit("/", 1)[1]: r for r in proxy.summaries(4, kind="intercepted")}
    reverse, count, echo, fail = (records[name]["messages"] for name in ("Reverse", "Count", "Echo", "Fail"))
    assert reverse["protocol"] == "grpc" and reverse["client_to_upstream"] == {"count": 1, "bytes": 5 + 7}, reverse
    assert reverse["upstream_to_client"] == {"count": 1, "bytes": 12} and reverse["grpc_status"] == 0
    assert count["upstream_to_client"]["count"] == 4 and count["first_event_ms"] >= 0
    assert echo["client_to_upstream"]["count"] == 3 and echo["upstream_to_client"]["count"] == 3
    assert fail["grpc_status"] == 5 and fail["grpc_message"] == "no such thing: widget", fail
    events = [r for r in proxy.read_log() if r.get("event") == "stream.event" and r.get("id") == records["Echo"]["id"]]
    sent = [(e["from"], e["index"], e["bytes"]) for e in events]
    assert ("client", 3, 5 + 3) in sent and ("upstream", 3, 5 + 8) in sent, sent
    assert next(e for e in events if e["from"] == "upstream")["preview_base64"] == "ZWNobzph"  # "echo:a"
