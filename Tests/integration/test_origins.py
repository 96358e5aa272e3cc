"""Self-tests of the test origins and client helpers, without Lookout.

If one of these fails, the suite's tooling is wrong, not the proxy. A tiny Python forward proxy
(``_FakeProxy``) stands in for Lookout to check the curl/urllib/http.client helpers and CONNECT.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import select
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

import origins
from conftest import (Reader, client_env, connect, curl, curl_sha256, py_request, raw_exchange,
                      read_response, request_bytes, send_all, to_yaml, urllib_request,
                      _parse_curl_headers)


# MARK: - pattern

def test_pattern_is_deterministic_and_hash_is_incremental():
    assert origins.pattern(5) == bytes([0, 1, 2, 3, 4])
    assert origins.pattern(3, offset=250) == bytes([250, 0, 1])
    for n in (0, 1, 250, 251, 65536, 65537, 200_003):
        whole = bytes(i % 251 for i in range(n))
        assert origins.pattern(n) == whole
        assert origins.expected_sha256(n) == hashlib.sha256(whole).hexdigest()
    pieces = list(origins.iter_pattern(200_000))
    assert max(len(p) for p in pieces) == 64 * 1024 and sum(map(len, pieces)) == 200_000


def test_chunk_sizes_are_several_and_sum_up():
    for n in (1, 7, 1000, 100_000):
        sizes = origins.chunk_sizes(n)
        assert sum(sizes) == n and all(s > 0 for s in sizes)
    assert len(origins.chunk_sizes(1000)) >= 3


# MARK: - the well-behaved origin

def _get(origin, path, method="GET", body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", origin.port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    return r, r.read(), c


def test_fixed_and_head(origin):
    r, body, c = _get(origin, "/fixed/1000")
    assert r.status == 200 and body == origins.pattern(1000)
    assert r.getheader("Content-Length") == "1000"
    # keep-alive: HEAD on the same connection, no body, same length
    c.request("HEAD", "/head")
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Length") == "1000" and r.read() == b""
    c.request("GET", "/head")
    r = c.getresponse()
    assert r.read() == origins.pattern(1000)
    c.close()


def test_chunked_has_several_chunks_and_trailer(origin):
    s = connect(origin.port)
    s.sendall(b"GET /chunked/1000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    raw = Reader(s).read_to_eof()
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head and b"Content-Length" not in head
    assert rest.count(b"\r\n") >= 2 * 4  # >= 3 data chunks + terminator
    s = connect(origin.port)
    s.sendall(b"GET /chunked/1000 HTTP/1.1\r\nHost: x\r\n\r\n")
    resp = read_response(Reader(s))
    assert resp.framing == "chunked" and resp.complete
    assert resp.body == origins.pattern(1000)
    assert resp.trailers == [f"X-Checksum: {origins.expected_sha256(1000)}"]


def test_close_delimited_is_http10_without_length(origin):
    s = connect(origin.port)
    s.sendall(b"GET /close/5000 HTTP/1.1\r\nHost: x\r\n\r\n")
    resp = read_response(Reader(s))
    assert resp.version == "HTTP/1.0" and resp.framing == "close"
    assert resp.header("Content-Length") is None and resp.header("Transfer-Encoding") is None
    assert resp.body == origins.pattern(5000) and resp.complete


def test_slow_streams_pieces_over_time(origin):
    s = connect(origin.port)
    t0 = time.monotonic()
    s.sendall(b"GET /slow?pieces=3&interval=0.4 HTTP/1.1\r\nHost: x\r\n\r\n")
    r = Reader(s)
    assert r.read_until(b"\r\n\r\n") is not None
    assert r.read_until(b"slow piece 0\n") is not None
    first = time.monotonic() - t0
    s.settimeout(5)
    rest = r.read_until(b"0\r\n\r\n")
    total = time.monotonic() - t0
    assert first < 0.3 and total >= 0.75, (first, total)
    assert b"slow piece 2\n" in rest
    assert origins.slow_body(3) == b"slow piece 0\nslow piece 1\nslow piece 2\n"


def test_huge_streams_exact_length_and_hash(origin):
    n = 10 * 1024 * 1024 + 17
    c = http.client.HTTPConnection("127.0.0.1", origin.port, timeout=30)
    c.request("GET", f"/huge/{n}")
    r = c.getresponse()
    assert r.getheader("Content-Length") == str(n)
    h, got = hashlib.sha256(), 0
    while True:
        d = r.read(1 << 20)
        if not d:
            break
        h.update(d)
        got += len(d)
    assert got == n and h.hexdigest() == origins.expected_sha256(n)


def test_echo_reports_request(origin):
    body = b"x" * 12345
    r, data, _ = _get(origin, "/echo?a=1", method="POST", body=body,
                      headers={"X-One": "1", "Content-Type": "application/x-test"})
    info = json.loads(data)
    assert info["method"] == "POST" and info["target"] == "/echo?a=1" and info["version"] == "HTTP/1.1"
    assert ["X-One", "1"] in info["headers"]
    assert info["body_length"] == 12345 and info["body_framing"] == "length"
    assert info["body_sha256"] == hashlib.sha256(body).hexdigest()


def test_echo_decodes_chunked_upload_with_trailers_and_duplicates(origin):
    raw = (b"PUT /echo HTTP/1.1\r\nHost: x\r\nX-Dup: a\r\nX-Dup: b\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Tr: yes\r\n\r\n")
    resp, _ = raw_exchange(origin.port, raw)
    info = json.loads(resp.body)
    assert info["body_length"] == 11 and info["body_framing"] == "chunked"
    assert info["body_sha256"] == hashlib.sha256(b"hello world").hexdigest()
    assert info["trailers"] == ["X-Tr: yes"]
    assert [h for h in info["headers"] if h[0] == "X-Dup"] == [["X-Dup", "a"], ["X-Dup", "b"]]


def test_status_204_304_and_103(origin):
    for code in (404, 500, 418):
        r, body, _ = _get(origin, f"/status/{code}")
        assert r.status == code and body == f"status {code}\n".encode()
    resp, _ = raw_exchange(origin.port, b"GET /204 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert resp.status == 204 and resp.body == b"" and resp.header("Content-Length") is None
    resp, _ = raw_exchange(origin.port, b"GET /304 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert resp.status == 304 and resp.header("ETag") == '"v1"' and resp.body == b""
    resp, _ = raw_exchange(origin.port, b"GET /103 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert [s for s, _ in resp.interim] == [103] and resp.status == 200 and resp.body == b"hello"
    r, body, _ = _get(origin, "/set-cookie")
    assert r.getheader("Set-Cookie").startswith("sid=SETCOOKIE-SECRET-0xC0FFEE")


def test_expect_100_continue(origin):
    s = connect(origin.port)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
    r = Reader(s, 5)
    assert r.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 100")
    s.sendall(b"abcd")
    resp = read_response(r)
    assert resp.status == 200 and json.loads(resp.body)["body_length"] == 4


# MARK: - misbehaving origins

def _send_request(o):
    s = connect(o.port)
    s.sendall(b"GET /x HTTP/1.1\r\nHost: " + o.authority.encode() + b"\r\n\r\n")
    return s, Reader(s, 10)


def test_reset_mid_body(raw_origin):
    o = raw_origin("reset_mid_body")
    s, r = _send_request(o)
    resp = read_response(r)
    assert resp.status == 200 and resp.header("Content-Length") == "100000"
    assert not resp.complete and r.reset
    assert resp.body == origins.pattern(10_000)
    assert o.wait_received(1)[0].startswith(b"GET /x HTTP/1.1\r\n")


def test_garbage_head(raw_origin):
    s, r = _send_request(raw_origin("garbage_head"))
    assert r.read_to_eof() == b"HELLO\r\n\r\n"


def test_never_answers(raw_origin):
    o = raw_origin("never_answers")
    s, r = _send_request(o)
    assert o.wait_received(1)[0].startswith(b"GET /x ")
    r.deadline = time.monotonic() + 1.0
    with pytest.raises(TimeoutError):
        r.read_until(b"\r\n")
    assert r.buf == b""


def test_close_without_response(raw_origin):
    o = raw_origin("close_without_response")
    s, r = _send_request(o)
    assert r.read_to_eof() == b"" and not r.reset
    assert o.wait_received(1)


def test_conflicting_framing(raw_origin):
    s, r = _send_request(raw_origin("conflicting_framing"))
    head = r.read_until(b"\r\n\r\n")
    assert b"Content-Length: 5\r\n" in head and b"Transfer-Encoding: chunked\r\n" in head


def test_stall_mid_body(raw_origin):
    s, r = _send_request(raw_origin("stall_mid_body"))
    resp_head = r.read_until(b"\r\n\r\n")
    assert b"Content-Length: 1000" in resp_head
    assert r.read_exact(100) == origins.pattern(100)
    r.deadline = time.monotonic() + 1.0
    with pytest.raises(TimeoutError):
        r.read_exact(1)


def test_sink_then_reply_and_greet_then_sink(raw_origin):
    o = raw_origin("sink_then_reply")
    s = connect(o.port)
    s.sendall(b"a" * 1000)
    s.shutdown(socket.SHUT_WR)
    assert Reader(s).read_to_eof() == b"received 1000 %s\n" % hashlib.sha256(b"a" * 1000).hexdigest().encode()

    o = raw_origin("greet_then_sink")
    s = connect(o.port)
    r = Reader(s)
    assert r.read_to_eof() == origins.GREETING  # origin half-closed
    s.sendall(b"after the origin's FIN")
    s.shutdown(socket.SHUT_WR)
    assert o.wait_received(1) == [b"after the origin's FIN"]


def test_blackhole_connect_times_out():
    b = origins.BlackholeOrigin()
    try:
        t0 = time.monotonic()
        with pytest.raises((socket.timeout, TimeoutError)):
            socket.create_connection(("127.0.0.1", b.port), timeout=0.7)
        assert time.monotonic() - t0 >= 0.6
    finally:
        b.stop()


def test_unused_port_refuses():
    s, port = origins.unused_port()
    try:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2)
    finally:
        s.close()


# MARK: - TLS origin

def test_tls_origin_with_python_and_curl(tls_origin, origin_cert):
    ctx = ssl.create_default_context(cafile=str(origin_cert[0]))
    c = http.client.HTTPSConnection("127.0.0.1", tls_origin.port, context=ctx, timeout=10)
    c.request("GET", "/fixed/300")
    r = c.getresponse()
    assert r.status == 200 and r.read() == origins.pattern(300)
    p = subprocess.run(["curl", "-q", "-sS", "--cacert", str(origin_cert[0]),
                        tls_origin.url("/fixed/100")], capture_output=True, env=client_env(), timeout=20)
    assert p.returncode == 0, p.stderr
    assert p.stdout == origins.pattern(100)


# MARK: - helpers, against a stand-in forward proxy

class _FakeProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_CONNECT(self):
        host, port = self.path.rsplit(":", 1)
        up = socket.create_connection((host, int(port)), timeout=10)
        self.wfile.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        self.close_connection = True
        socks = [self.connection, up]
        open_ = {self.connection: True, up: True}
        while any(open_.values()):
            readable, _, _ = select.select([s for s in socks if open_[s]], [], [], 10)
            if not readable:
                break
            for s in readable:
                other = up if s is self.connection else self.connection
                data = s.recv(65536)
                if data:
                    other.sendall(data)
                else:
                    open_[s] = False
                    try:
                        other.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
        up.close()

    def _forward(self):
        u = urlsplit(self.path)
        body = None
        if self.headers.get("Content-Length"):
            body = self.rfile.read(int(self.headers["Content-Length"]))
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
        c.request(self.command, u.path + (f"?{u.query}" if u.query else ""), body=body, headers=hdrs)
        r = c.getresponse()
        self.send_response(r.status)
        length = r.getheader("Content-Length")
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(k, v)
        if length is not None:
            self.send_header("Content-Length", length)
            self.end_headers()
            while d := r.read(65536):
                self.wfile.write(d)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while d := r.read(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
            self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_HEAD = _forward


class _FakeProxy:
    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeProxyHandler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake_proxy():
    p = _FakeProxy()
    yield p
    p.stop()


def test_curl_helper_through_stand_in(fake_proxy, origin):
    r = curl(fake_proxy, origin.url("/fixed/777"))
    assert r.rc == 0 and r.status == 200 and r.body == origins.pattern(777)
    assert r.header("content-length") == "777"
    r = curl(fake_proxy, origin.url("/echo"), "--data-binary", "abc")
    assert json.loads(r.body)["body_length"] == 3
    r = curl(fake_proxy, origin.url("/status/404"))
    assert r.rc == 0 and r.status == 404


def test_curl_sha256_streams(fake_proxy, origin):
    n = 5 * 1024 * 1024
    rc, got, digest, blocks, err = curl_sha256(fake_proxy, origin.url(f"/huge/{n}"))
    assert rc == 0, err
    assert got == n and digest == origins.expected_sha256(n)
    assert blocks[-1][0].startswith("HTTP/1.1 200")


def test_python_clients_through_stand_in(fake_proxy, origin):
    status, headers, body = py_request(fake_proxy, "GET", origin.url("/fixed/10"))
    assert status == 200 and body == origins.pattern(10)
    status, headers, body = urllib_request(fake_proxy, origin.url("/echo"), data=b"12345")
    assert status == 200 and json.loads(body)["method"] == "POST"
    status, headers, body = urllib_request(fake_proxy, origin.url("/status/503"))
    assert status == 503


def test_connect_through_stand_in(fake_proxy, tls_origin, origin_cert):
    r = curl(fake_proxy, tls_origin.url("/fixed/2000"), "-p", "--cacert", str(origin_cert[0]))
    assert r.rc == 0, r.stderr
    assert r.body == origins.pattern(2000)
    assert r.blocks[0][0].startswith("HTTP/1.1 200") and len(r.blocks) == 2


def test_raw_exchange_and_request_bytes(origin):
    data = request_bytes("GET", origin.url("/fixed/3"), headers=[("X-A", "b")])
    assert data == (f"GET {origin.url('/fixed/3')} HTTP/1.1\r\nHost: {origin.authority}\r\n"
                    f"X-A: b\r\n\r\n").encode()
    resp, reader = raw_exchange(origin.port, b"GET /fixed/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert resp.body == bytes([0, 1, 2]) and reader.closed_by_peer(2)
    s = connect(origin.port)
    assert send_all(s, b"GET /fixed/1 HTTP/1.1\r\nHost: x\r\n\r\n")
    r = Reader(s, 5)
    assert read_response(r).body == b"\x00"
    assert not r.closed_by_peer(0.2)  # keep-alive: still open


def test_curl_header_block_parsing():
    data = (b"HTTP/1.1 200 Connection Established\r\n\r\n"
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nA: 1\r\nTransfer-Encoding: chunked\r\n\r\nX-Trailer: t\r\n\r\n")
    blocks = _parse_curl_headers(data)
    assert [b[0] for b in blocks] == ["HTTP/1.1 200 Connection Established", "HTTP/1.1 100 Continue",
                                      "HTTP/1.1 200 OK"]
    assert blocks[2][1] == [("A", "1"), ("Transfer-Encoding", "chunked"), ("X-Trailer", "t")]


def test_yaml_writer_round_trips():
    yaml = pytest.importorskip("yaml")
    cfg = {"listen": ["127.0.0.1:0"], "max_connections": 2,
           "timeouts": {"client_header": 1, "upstream_first_byte": 0.5},
           "connect": {"allowed_ports": [443, 8443]},
           "log": {"verbose": True, "path": "/tmp/a b\"c.log"}, "empty": {}}
    assert yaml.safe_load(to_yaml(cfg)) == cfg
