"""Event streams and gRPC messages split as they pass: Server-Sent Events and NDJSON from an origin
that writes each event at a scripted moment (time to the first event and the gaps within ±5 ms of
the moments the origin really wrote them), a stream cut in the middle, and gRPC calls from grpcio (unary, server-streaming,
bidirectional) with their status from the trailers."""

from __future__ import annotations

import json
import math
import socket
import struct
import subprocess
import threading
import time
from types import SimpleNamespace

import pytest

from conftest import client_env, curl, wait_until

# Linux's SO_TIMESTAMPNS (asm-generic/socket.h), which the socket module does not name.
SO_TIMESTAMPNS = 35
FIRST_MS = 150
GAPS_MS = [40, 40, 40, 250, 40]


class ScriptedStream:
    """Answers each request with `content_type`, then writes `events` (bytes each) at the script's
    moments, chunked; `cut` closes the connection in the middle of the last event instead of ending.
    `written_ms` keeps when each write really left, counted from the request's head: a loaded machine
    wakes the script late, and the proxy's timings are judged against what happened."""

    def __init__(self, content_type: str, events: list[bytes], cut: bool = False):
        self.content_type, self.events, self.cut = content_type, events, cut
        self.written_ms: list[float] = []
        self.epoch = 0.0
        self.sock = socket.create_server(("127.0.0.1", 0))
        # Set on the listener, so the kernel stamps the request as it arrives, before accept():
        # an accepted socket takes it over.
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
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
            head, arrived = b"", None
            while b"\r\n\r\n" not in head:
                data, ancillary, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(16))
                head += data
                for level, kind, stamp in ancillary:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and arrived is None:
                        seconds, nanoseconds = struct.unpack("qq", stamp)
                        arrived = seconds + nanoseconds / 1e9
            start = time.monotonic()
            # The kernel's stamp of the head's arrival: a thread woken late on a busy machine
            # would otherwise count its own wait as the proxy's.
            self.epoch = epoch = arrived if arrived is not None else time.time()
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\nTransfer-Encoding: chunked\r\n"
                         "Cache-Control: no-store\r\n\r\n".encode())
            moment = FIRST_MS / 1000
            for index, event in enumerate(self.events):
                time.sleep(max(0.0, start + moment - time.monotonic()))
                self.written_ms.append((time.time() - epoch) * 1000)
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


class Delivery:
    """curl -N through the proxy, its output read as it arrives: when each of the origin's writes
    reached the client (epoch seconds), and when the client started."""

    def __init__(self, proxy, url: str, *args: str):
        self.started = time.time()
        p = subprocess.Popen(["curl", "-q", "-sS", "-N", "-x", proxy.url, *args, url], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=client_env())
        self.reads: list[tuple[int, float]] = []  # (bytes so far, when)
        self.body = b""
        while chunk := p.stdout.read1(65536):
            self.body += chunk
            self.reads.append((len(self.body), time.time()))
        self.stderr = p.stderr.read().decode(errors="replace")
        self.rc = p.wait(timeout=60)

    def received(self, events: list[bytes]) -> list[float]:
        """When each event's last byte reached the client."""
        moments, end = [], 0
        for event in events:
            end += len(event)
            moments.append(next(when for size, when in self.reads if size >= end))
        return moments


def assert_timing(m: dict, origin: ScriptedStream, delivery: Delivery, events: int, first: int = 1):
    """Each stamp of the proxy's must lie between when the origin wrote the event and when the
    client had it, both counted from the kernel's stamp of the request's arrival at the origin
    (on loopback, the moment the proxy sent it). With prompt delivery that window is a
    millisecond or two wide; a busy machine widens it by exactly the delay it caused. `first` is
    the first write that is an event (an SSE comment line is none)."""
    assert m["count"] == events and m["upstream_to_client"]["count"] == events, m
    wrote = origin.written_ms
    assert len(wrote) == len(origin.events), wrote
    assert abs(wrote[first] - (FIRST_MS + sum(GAPS_MS[:first]))) < 50, f"the origin kept roughly to its script: {wrote}"
    had = [(moment - origin.epoch) * 1000 for moment in delivery.received(origin.events)]
    assert wrote[first] - 1 <= m["first_event_ms"] <= had[first] + 1, (m, wrote, had)
    # Each gap between two stamps lies between the least and the most the truth allows; so do
    # the gaps' order statistics.
    pairs = range(first, len(wrote) - 1)
    low = sorted(wrote[i + 1] - had[i] for i in pairs)
    high = sorted(had[i + 1] - wrote[i] for i in pairs)
    for key, k in (("p50", math.ceil(len(low) / 2) - 1), ("max", -1)):  # nearest rank
        assert low[k] - 1 <= m["gaps_ms"][key] <= high[k] + 1, (key, m, wrote, had)
    assert abs(m["gaps_ms"]["max"] - max(GAPS_MS)) < 50, m


def test_server_sent_events_are_split_and_timed(make_proxy):
    origin = ScriptedStream("text/event-stream", SSE)
    proxy = make_proxy({}, verbose_events=True)
    try:
        delivery = Delivery(proxy, origin.url("/stream"))
    finally:
        origin.stop()
    assert delivery.rc == 0 and delivery.body == b"".join(SSE), "relayed byte for byte"
    record = proxy.only_summary(kind="http")
    m = record["messages"]
    assert m["protocol"] == "sse" and m["decoding"] == "full"
    assert_timing(m, origin, delivery, 5)
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
        delivery = Delivery(proxy, origin.url("/tokens"))
    finally:
        origin.stop()
    assert delivery.rc == 0 and delivery.body == b"".join(lines)
    record = proxy.only_summary(kind="http")
    m = record["messages"]
    assert m["protocol"] == "ndjson"
    assert_timing(m, origin, delivery, 6, first=0)
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
