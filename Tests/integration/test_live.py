"""The live event stream (`GET /events`, Server-Sent Events) and the ring behind it (`GET /exchanges`,
`GET /exchanges/ID`): records arrive as curl traffic flows, are the log's own JSON, are filtered on
the server, resume with Last-Event-ID, and a consumer that stops reading loses records (told with a
`dropped` event) without slowing the traffic."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
import urllib.parse

import pytest

from conftest import Reader, assert_error_response, connect, curl, free_port, raw_exchange, read_response, wait_until
from origins import ScriptedOrigin


class EventStream:
    """A `GET /events` client on a raw socket, parsing SSE frames as they come."""

    def __init__(self, port: int, query: str = "", last_event_id: int | None = None, rcvbuf: int | None = None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(15)
        self.sock.connect(("127.0.0.1", port))
        extra = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id is not None else ""
        self.sock.sendall(f"GET /events{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{extra}\r\n".encode())
        self.buffer = b""
        self.head = None
        self.events: list[dict] = []   # {"id": int | None, "event": str, "data": str}
        self.comments: list[str] = []
        self.retry = None

    def read_head(self) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        self.head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        return self.head

    def _fill(self, timeout: float | None = None) -> bool:
        if timeout is not None:
            self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("stream closed")
        self.buffer += data
        return True

    def _parse(self):
        # Frames end with a blank line; scanned by index so a large backlog parses in linear time.
        start = 0
        while True:
            end = self.buffer.find(b"\n\n", start)
            if end < 0:
                break
            block = self.buffer[start:end]
            start = end + 2
            frame = {"id": None, "event": "message", "data": []}
            for line in block.decode().split("\n"):
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "id":
                    frame["id"] = int(value)
                elif field == "event":
                    frame["event"] = value
                elif field == "data":
                    frame["data"].append(value)
                elif field == "retry":
                    self.retry = int(value)
            if frame["data"]:
                frame["data"] = "\n".join(frame["data"])
                self.events.append(frame)
        self.buffer = self.buffer[start:]

    def wait_for(self, predicate, timeout: float = 10.0, message: str = "") -> list[dict]:
        if self.head is None:
            self.read_head()
        deadline = time.monotonic() + timeout
        while True:
            self._parse()
            if predicate(self):
                return self.events
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {message or predicate}; got {self.events[-3:]}")
            try:
                self._fill(timeout=remaining)
            except socket.timeout:
                pass

    def records(self, event: str | None = None) -> list[dict]:
        out = [json.loads(f["data"]) for f in self.events if f["event"] == "message"]
        return [r for r in out if event is None or r["event"] == event]

    def close(self):
        self.sock.close()


def get_json(port: int, path: str) -> tuple[int, dict]:
    resp, _ = raw_exchange(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    return resp.status, json.loads(resp.body)


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/ok", (200, {}, b"fine"))
        o.route("/fail", (503, {}, b"down"))
        yield o


def test_records_arrive_as_traffic_flows_and_are_the_logs_own_json(make_proxy, site):
    proxy = make_proxy()
    stream = EventStream(proxy.port)
    head = stream.read_head().decode()
    assert head.startswith("HTTP/1.1 200")
    assert "Content-Type: text/event-stream; charset=utf-8" in head and "Cache-Control: no-store" in head
    stream.wait_for(lambda s: s.retry == 2000, message="the retry line")
    for path in ("/ok", "/fail", "/ok"):
        curl(proxy, site.url(path))
    stream.wait_for(lambda s: len(s.records("exchange")) == 3, message="three exchanges")
    records = stream.records("exchange")
    assert [r["status"] for r in records] == [200, 503, 200]
    ids = [f["id"] for f in stream.events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    # Byte for byte the log's summary records.
    proxy.summaries(3, where=lambda r: r["kind"] == "http")
    lines = [line for line in proxy.log_path.read_text().splitlines() if '"event":"exchange"' in line]
    for frame in stream.events[-3:]:
        assert frame["data"] in lines
    assert not stream.records("task.didResolve"), "lifecycle records only with verbose=1"
    stream.close()
    # The stream itself is an admin exchange, logged when it ends, without an error.
    rec = proxy.only_summary(where=lambda r: r["url"].endswith("/events"))
    assert rec["kind"] == "admin" and rec["status"] == 200 and "error" not in rec


def test_filters_are_applied_on_the_server(make_proxy, site):
    proxy = make_proxy()
    failures = EventStream(proxy.port, "?" + urllib.parse.urlencode({"filter": "status:5xx or code:*"}))
    failures.read_head()
    for path in ("/ok", "/fail", "/ok", "/fail"):
        curl(proxy, site.url(path))
    assert_error_response(curl(proxy, f"http://127.0.0.1:{free_port()}/"), 502, "upstream_connect_failed")
    failures.wait_for(lambda s: len(s.records()) == 3, message="three failures")
    time.sleep(0.3)
    failures._parse()
    assert [(r.get("status"), r.get("error", {}).get("code")) for r in failures.records()] == [
        (503, None), (503, None), (502, "upstream_connect_failed")]
    failures.close()

    resp, _ = raw_exchange(proxy.port, b"GET /events?filter=status%3A5x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert resp.status == 400
    body = json.loads(resp.body)
    assert body == {"error": 'filter: "5x" is not a status (e.g. 404 or 5xx)', "column": 8}


def test_verbose_streams_lifecycle_records_only_while_asked(make_proxy, site):
    proxy = make_proxy()
    plain = EventStream(proxy.port)
    verbose = EventStream(proxy.port, "?verbose=1")
    plain.read_head()
    verbose.read_head()
    time.sleep(0.2)  # the subscription is registered on the monitor's queue
    curl(proxy, site.url("/ok"))
    verbose.wait_for(lambda s: s.records("exchange"), message="the exchange")
    names = [r["event"] for r in verbose.records()]
    for name in ("request.didCreateInitialRequest", "task.didResolve", "task.didConnect", "task.didReceiveResponse",
                 "task.didComplete", "request.didFinish", "exchange"):
        assert name in names, (name, names)
    exchange_id = verbose.records("exchange")[0]["id"]
    plain.wait_for(lambda s: s.records("exchange"), message="the exchange on the plain stream")
    # Only what the default log writes: summaries and session records (these may arrive first).
    assert {r["event"] for r in plain.records()} <= {"exchange", "session.didStart", "session.reachabilityDidChange"}
    status, detail = get_json(proxy.port, f"/exchanges/{exchange_id}")
    assert status == 200 and detail["exchange"]["id"] == exchange_id
    assert "task.didResolve" in [e["event"] for e in detail["events"]]
    assert all(e["id"] == exchange_id for e in detail["events"])

    # Once nobody streams lifecycle events they are no longer built.
    verbose.close()
    time.sleep(0.3)
    curl(proxy, site.url("/ok"))
    def plain_exchanges(s):
        return [r for r in s.records("exchange") if r["kind"] == "http"]

    plain.wait_for(lambda s: len(plain_exchanges(s)) == 2, message="the second exchange")
    later = plain_exchanges(plain)[1]["id"]
    status, detail = get_json(proxy.port, f"/exchanges/{later}")
    assert status == 200 and detail["events"] == []
    plain.close()


def test_last_event_id_resumes_from_the_ring(make_proxy, site):
    proxy = make_proxy()
    first = EventStream(proxy.port)
    first.read_head()
    time.sleep(0.2)
    curl(proxy, site.url("/ok"))
    first.wait_for(lambda s: s.records("exchange"), message="the first exchange")
    seen = first.events[-1]["id"]
    first.close()
    for path in ("/fail", "/ok"):  # missed while disconnected
        curl(proxy, site.url(path))
    wait_until(lambda: len(proxy.summaries(where=lambda r: r["kind"] == "http")) == 3)
    time.sleep(0.1)
    resumed = EventStream(proxy.port, last_event_id=seen)
    resumed.wait_for(lambda s: len(s.records("exchange")) >= 3, message="the missed records")
    missed = [r for r in resumed.records("exchange") if r["kind"] == "http"]
    assert [r["status"] for r in missed] == [503, 200]
    assert all(f["id"] > seen for f in resumed.events)
    curl(proxy, site.url("/ok"))  # and live ones after them
    resumed.wait_for(lambda s: len([r for r in s.records("exchange") if r["kind"] == "http"]) == 3,
                     message="the live record after the replay")
    resumed.close()

    resp, _ = raw_exchange(proxy.port, b"GET /events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: soon\r\nConnection: close\r\n\r\n")
    assert resp.status == 400 and b"Last-Event-ID" in resp.body


def test_a_stalled_consumer_loses_records_without_slowing_traffic(make_proxy, site):
    proxy = make_proxy({"log": {"include_headers": True}})
    stalled = EventStream(proxy.port, "?verbose=1", rcvbuf=4096)
    stalled.read_head()
    time.sleep(0.2)
    # Enough records (verbose, with headers) to fill the socket buffers and the 1 MiB queue many times.
    client = connect(proxy.port)
    reader = Reader(client)
    started = time.monotonic()
    for _ in range(2500):
        client.sendall(f"GET {site.url('/ok')} HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\nX-Pad: {'p' * 400}\r\n\r\n".encode())
        assert read_response(reader).status == 200
    elapsed = time.monotonic() - started
    client.close()
    # Every exchange was served and logged while the consumer read nothing.
    proxy.summaries(2500, timeout=20, where=lambda r: r["kind"] == "http")
    # Now it reads: the records it lost are announced by a dropped event with their count.
    stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    curl(proxy, site.url("/ok"))
    stalled.wait_for(lambda s: any(f["event"] == "dropped" for f in s.events), timeout=30,
                     message="a dropped event")
    [notice] = [f for f in stalled.events if f["event"] == "dropped"][:1]
    assert json.loads(notice["data"])["dropped"] > 0
    stalled.close()
    assert elapsed < 60


def test_exchanges_lists_the_ring_newest_first(make_proxy, site):
    proxy = make_proxy({"ui": {"ring_size": 50}})
    for path in ["/ok"] * 5 + ["/fail"] * 2:
        curl(proxy, site.url(path))
    wait_until(lambda: len(proxy.summaries(where=lambda r: r["kind"] == "http")) == 7)
    time.sleep(0.1)
    status, page = get_json(proxy.port, "/exchanges?limit=3")
    assert status == 200
    records = page["exchanges"]
    assert [r["status"] for r in records] == [503, 503, 200]
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs, reverse=True)
    status, older = get_json(proxy.port, f"/exchanges?limit=100&before={seqs[-1]}&filter=kind%3Ahttp")
    assert [r["status"] for r in older["exchanges"]] == [200] * 4
    status, failed = get_json(proxy.port, "/exchanges?filter=" + urllib.parse.quote("status:503"))
    assert len(failed["exchanges"]) == 2
    assert get_json(proxy.port, "/exchanges?limit=0")[0] == 400
    assert get_json(proxy.port, "/exchanges?before=x")[0] == 400
    assert get_json(proxy.port, "/exchanges/999999")[0] == 404
    assert get_json(proxy.port, "/exchanges/abc")[0] == 404
    resp, _ = raw_exchange(proxy.port, b"DELETE /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert resp.status == 405

    # The ring keeps the last ring_size records only.
    for _ in range(60):
        curl(proxy, site.url("/ok"))
    wait_until(lambda: len(proxy.summaries(where=lambda r: r["kind"] == "http")) == 67)
    time.sleep(0.1)
    status, page = get_json(proxy.port, "/exchanges?limit=1000")
    assert len(page["exchanges"]) <= 50
    assert get_json(proxy.port, f"/exchanges/{records[-1]['id']}")[0] == 404


def test_heartbeats_keep_an_idle_stream_open_and_shutdown_ends_it(make_proxy):
    proxy = make_proxy({"ui": {"heartbeat": 0.2}})
    stream = EventStream(proxy.port)
    stream.wait_for(lambda s: s.comments.count("heartbeat") >= 2, message="two heartbeats")
    started = time.monotonic()
    proxy.send_signal(signal.SIGTERM)
    assert proxy.wait_exit(10) == 0
    assert time.monotonic() - started < 5
    with pytest.raises((EOFError, ConnectionResetError)):
        stream.wait_for(lambda s: False, timeout=5)
    stream.close()


def test_the_status_page_tells_and_ui_off_removes_it(make_proxy):
    proxy = make_proxy()
    stream = EventStream(proxy.port)
    stream.read_head()
    time.sleep(0.2)
    page, _ = raw_exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"live: GET /events (Server-Sent Events, 1 open, 0 records dropped), GET /exchanges" in page.body
    stream.close()

    off = make_proxy({"ui": {"enabled": False}})
    resp, _ = raw_exchange(off.port, b"GET /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert_error_response(resp, 400, "not_a_proxy_request")
    page, _ = raw_exchange(off.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"live:" not in page.body


def test_clients_that_leave_at_once_or_reset_are_let_go(make_proxy, site):
    proxy = make_proxy()
    # Gone before (or while) the subscription is registered: nothing may stay behind.
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", proxy.port))
        s.sendall(b"GET /events?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        s.close()
    # A client that resets in the middle of a stream.
    stream = EventStream(proxy.port)
    stream.read_head()
    time.sleep(0.2)
    stream.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    stream.close()
    curl(proxy, site.url("/ok"))

    def no_streams_left():
        page, _ = raw_exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return b"live: GET /events (Server-Sent Events, 0 open, 0 records dropped)" in page.body

    wait_until(no_streams_left, message="every stream let go, nothing counted as dropped")
    # Each stream is logged once, as an admin exchange that ended.
    records = proxy.summaries(51, where=lambda r: r["url"].endswith("/events") or "/events?" in r["url"])
    assert all(r["kind"] == "admin" and r["status"] == 200 for r in records)
    # Nothing left lifecycle events switched on, and the proxy still serves.
    assert curl(proxy, site.url("/ok")).status == 200
    rec = proxy.summaries(where=lambda r: r["kind"] == "http")[-1]
    # The ring is a monitor of its own: it may take the record a moment after the log wrote it.
    wait_until(lambda: get_json(proxy.port, f"/exchanges/{rec['id']}")[0] == 200, message="the exchange in the ring")
    status, detail = get_json(proxy.port, f"/exchanges/{rec['id']}")
    assert status == 200 and detail["events"] == []


def test_head_of_the_event_stream_is_the_head_alone(make_proxy):
    proxy = make_proxy()
    sock = connect(proxy.port)
    sock.sendall(b"HEAD /events HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    reader = Reader(sock)
    head = read_response(reader, "HEAD")
    assert head.status == 200 and head.header("Content-Type") == "text/event-stream; charset=utf-8"
    assert head.body == b"" and head.header("Connection") is None
    # No stream was started: the connection goes on to the next request.
    assert read_response(reader).body == b"ok\n"
    sock.close()
    page, _ = raw_exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"(Server-Sent Events, 0 open," in page.body


def capturing(path) -> dict:
    return {"capture": {"path": str(path), "rules": [{"hosts": ["127.0.0.1"], "max_body_bytes": 8 << 20}]}}


def test_captured_bodies_are_served_raw_or_decoded(make_proxy, site, tmp_path):
    import gzip
    import os
    document = json.dumps({"items": list(range(2000))}).encode()
    site.route("/json", (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, gzip.compress(document)))
    big = os.urandom(3 << 20)
    site.route("/big", (200, {"Content-Type": "image/png"}, big))
    site.route("/page", (200, {"Content-Type": "text/html"}, b"<script>alert(1)</script>"))
    proxy = make_proxy(capturing(tmp_path / "cap"))
    curl(proxy, site.url("/json"))
    curl(proxy, site.url("/big"))
    curl(proxy, site.url("/page"))
    upload = curl(proxy, site.url("/ok"), "--data-binary", "name=value", "-H", "Content-Type: application/x-www-form-urlencoded")
    assert upload.status == 200
    recs = {r["url"].rsplit("/", 1)[1]: r for r in proxy.summaries(4, where=lambda r: r["kind"] == "http")}

    def fetch(path: str):
        resp, _ = raw_exchange(proxy.port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return resp

    raw = fetch(f"/exchanges/{recs['json']['id']}/body/response")
    assert raw.status == 200 and gzip.decompress(raw.body) == document
    assert raw.header("Content-Type") == "application/octet-stream"
    assert raw.header("X-Lookout-Content-Encoding") == "gzip"
    assert raw.header("Content-Length") == str(len(raw.body))
    decoded = fetch(f"/exchanges/{recs['json']['id']}/body/response?decoded=1")
    assert decoded.status == 200 and decoded.body == document
    assert decoded.header("Content-Type") == "application/json"
    # 3 MiB streamed from the file in pieces, whole and exact.
    image = fetch(f"/exchanges/{recs['big']['id']}/body/response")
    assert image.body == big and image.header("Content-Type") == "image/png"
    assert image.header("X-Content-Type-Options") == "nosniff"
    # A captured page never runs as the admin origin's own.
    page = fetch(f"/exchanges/{recs['page']['id']}/body/response")
    assert page.header("Content-Security-Policy") == "sandbox; default-src 'none'"
    request = fetch(f"/exchanges/{recs['ok']['id']}/body/request")
    assert request.body == b"name=value" and request.header("Content-Type") == "application/x-www-form-urlencoded"
    # What is not there is a clear 404, a vanished file a 410.
    missing = fetch(f"/exchanges/{recs['big']['id']}/body/request")
    assert missing.status == 404 and "no captured request body" in json.loads(missing.body)["error"]
    assert fetch("/exchanges/999999/body/response").status == 404
    assert fetch(f"/exchanges/{recs['ok']['id']}/body/trailers").status == 404
    os.unlink(recs["page"]["capture"]["response"])
    gone = fetch(f"/exchanges/{recs['page']['id']}/body/response")
    assert gone.status == 410 and "gone" in json.loads(gone.body)["error"]
    # A HEAD gets the length and leaves the connection open.
    sock = connect(proxy.port)
    sock.sendall(f"HEAD /exchanges/{recs['big']['id']}/body/response HTTP/1.1\r\nHost: x\r\n\r\n"
                 "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    reader = Reader(sock)
    head = read_response(reader, "HEAD")
    assert head.header("Content-Length") == str(len(big)) and head.body == b""
    assert read_response(reader).body == b"ok\n"
    sock.close()
    # Each body fetched is an admin record.
    bodies = proxy.summaries(10, where=lambda r: r["kind"] == "admin" and "/body/" in r["url"])
    assert sorted(r["status"] for r in bodies) == [200] * 6 + [404, 404, 404, 410]


def test_watchers_with_the_same_filter_share_its_verdict_and_others_keep_theirs(make_proxy, site):
    proxy = make_proxy()
    query = lambda text: "?" + urllib.parse.urlencode({"filter": text})  # noqa: E731
    same = [EventStream(proxy.port, query("status:5xx")) for _ in range(3)]
    other = EventStream(proxy.port, query("status:200"))
    everything = EventStream(proxy.port)
    for stream in [*same, other, everything]:
        stream.read_head()
    wait_until(lambda: b"5 open" in raw_exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0].body,
               message="five streams registered")
    for path in ("/fail", "/ok", "/fail", "/ok", "/ok"):
        curl(proxy, site.url(path))
    for stream in same:
        stream.wait_for(lambda s: len(s.records("exchange")) == 2, message="the two failures")
    other.wait_for(lambda s: len([r for r in s.records("exchange") if r["kind"] == "http"]) == 3,
                   message="the three successes")
    everything.wait_for(lambda s: len([r for r in s.records("exchange") if r["kind"] == "http"]) == 5)
    time.sleep(0.3)
    for stream in same:
        stream._parse()
        assert [r["status"] for r in stream.records("exchange")] == [503, 503]
    other._parse()
    assert [r["status"] for r in other.records("exchange") if r["kind"] == "http"] == [200, 200, 200]

    # One watcher of the shared filter leaves: the others of its audience keep receiving.
    same[0].close()
    wait_until(lambda: b"4 open" in raw_exchange(proxy.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0].body,
               message="the watcher removed")
    curl(proxy, site.url("/fail"))
    for stream in same[1:]:
        stream.wait_for(lambda s: len(s.records("exchange")) == 3, message="the third failure")
    for stream in [*same[1:], other, everything]:
        stream.close()


def test_bodies_that_cannot_be_decoded_say_why(make_proxy, site, tmp_path):
    site.route("/zstd", (200, {"Content-Type": "text/plain", "Content-Encoding": "zstd"}, b"\x28\xb5\x2f\xfd-not-really"))
    site.route("/broken", (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, b"\x1f\x8bnot gzip at all"))
    proxy = make_proxy(capturing(tmp_path / "cap"))
    curl(proxy, site.url("/zstd"))
    curl(proxy, site.url("/broken"))
    recs = {r["url"].rsplit("/", 1)[1]: r for r in proxy.summaries(2, where=lambda r: r["kind"] == "http")}

    def fetch(path: str):
        resp, _ = raw_exchange(proxy.port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return resp

    unknown = fetch(f"/exchanges/{recs['zstd']['id']}/body/response?decoded=1")
    assert unknown.status == 415 and "zstd" in json.loads(unknown.body)["error"]
    corrupt = fetch(f"/exchanges/{recs['broken']['id']}/body/response?decoded=1")
    assert corrupt.status == 422 and "does not decode" in json.loads(corrupt.body)["error"]
    # The bytes as received are still there for whoever wants them.
    raw = fetch(f"/exchanges/{recs['broken']['id']}/body/response")
    assert raw.status == 200 and raw.body == b"\x1f\x8bnot gzip at all"
    statuses = [r["status"] for r in proxy.summaries(3, where=lambda r: r["kind"] == "admin" and "/body/" in r["url"])]
    assert sorted(statuses) == [200, 415, 422]
