"""Test origins for Lookout's end-to-end suite.

Everything listens on 127.0.0.1, on a port the kernel picks (bind to port 0),
serves from background threads, and can be stopped.

* ``HTTPOrigin``   -- a well-behaved HTTP/1.1 server (optionally TLS) with the
  routes listed on ``OriginHandler``.
* ``RawOrigin``    -- a raw-socket server whose per-connection behaviour is one of
  the misbehaving functions below (reset mid-body, garbage head, silence, ...).
* ``BlackholeOrigin`` -- a listener whose accept queue is full, so new TCP
  connections to it are never established (connect timeouts).

The body pattern is deterministic: byte ``i`` of every generated body is
``i % 251``, so a client can check any length by sha256 computed incrementally
(``expected_sha256``) without anyone holding the whole body in memory.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import socket
import ssl
import struct
import subprocess
import termios
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

HOST = "127.0.0.1"
PIECE = 64 * 1024
_PERIOD = 251  # prime, so the pattern does not line up with power-of-two pieces
_BIG = bytes(i % _PERIOD for i in range(PIECE + _PERIOD))


# MARK: - deterministic bodies

def iter_pattern(total: int, offset: int = 0, piece: int = PIECE):
    """Yield the pattern bytes [offset, offset+total) in pieces of at most ``piece`` bytes."""
    end = offset + total
    while offset < end:
        n = min(piece, PIECE, end - offset)
        start = offset % _PERIOD
        yield _BIG[start:start + n]
        offset += n


def pattern(length: int, offset: int = 0) -> bytes:
    """The pattern bytes [offset, offset+length) as one bytes object (small lengths only)."""
    return b"".join(iter_pattern(length, offset))


@functools.lru_cache(maxsize=None)
def expected_sha256(length: int) -> str:
    """sha256 hex digest of the first ``length`` pattern bytes, computed incrementally."""
    h = hashlib.sha256()
    for piece in iter_pattern(length):
        h.update(piece)
    return h.hexdigest()


def chunk_sizes(total: int) -> list[int]:
    """How /chunked/N splits N bytes: several chunks of unequal size (never a zero-size one)."""
    if total <= 0:
        return []
    sizes = []
    left = total
    step = max(1, total // 5)
    # first chunk odd-sized, then ~20 % pieces, then the rest
    first = max(1, min(left, step // 2 + 1))
    sizes.append(first)
    left -= first
    while left > 0:
        n = min(left, step)
        sizes.append(n)
        left -= n
    return sizes


# MARK: - TLS material

def generate_cert(directory: Path) -> tuple[Path, Path]:
    """Create a self-signed P-256 certificate for 127.0.0.1/localhost; return (cert, key)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "origin-cert.pem", directory / "origin-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


# MARK: - the well-behaved origin

class OriginHandler(BaseHTTPRequestHandler):
    """Routes (any method unless noted; HEAD answers the GET headers without a body):

    /fixed/N          N pattern bytes, Content-Length
    /chunked/N        N pattern bytes, chunked in several chunks, trailer X-Checksum: sha256
    /close/N          N pattern bytes, HTTP/1.0 response without length, close-delimited
    /slow?pieces=P&interval=S   chunked, P pieces b"slow piece i\\n", S seconds apart (4, 0.75)
    /huge/N           N pattern bytes written in 64 KiB pieces with Content-Length (streamed)
    /echo[...]        JSON: method, target, version, headers [[name, value]...], body_length,
                      body_sha256, body_framing ("none"|"length"|"chunked"), trailers; with
                      ?body=1 also body (its first MiB, as latin-1 text)
    /status/CODE      that status, body b"status CODE\\n" (none for 1xx/204/304)
    /head             like /fixed/1000 (HEAD support check)
    /204              204 No Content
    /304              304 Not Modified with ETag
    /103              a 103 Early Hints interim response, then 200 "hello"
    /hop              200 with hop-by-hop response headers (Connection: X-Hop-Header,
                      X-Hop-Header, Keep-Alive), an end-to-end X-End: kept, Via: 1.0 upstream-cache
    /set-cookie       200 with Set-Cookie: sid=SETCOOKIE-SECRET-0xC0FFEE
    Expect: 100-continue is answered with "100 Continue" (http.server does this).
    """

    protocol_version = "HTTP/1.1"
    server_version = "LookoutTestOrigin/1"
    timeout = 60

    # silence the default stderr logging
    def log_message(self, format, *args):  # noqa: A002
        pass

    def setup(self):
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()

    def handle(self):
        try:
            super().handle()
        except (OSError, ValueError, ssl.SSLError):
            self.close_connection = True

    # every method goes through the same router
    def do_GET(self):
        self._route(head=False)

    def do_HEAD(self):
        self._route(head=True)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    # -- request bodies --------------------------------------------------------------

    def _read_body(self) -> dict:
        h = hashlib.sha256()
        kept = bytearray()
        total = 0
        trailers: list[str] = []
        te = self.headers.get("Transfer-Encoding")
        cl = self.headers.get("Content-Length")
        if te is not None and "chunked" in te.lower():
            framing = "chunked"
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionError("EOF in chunked body")
                size = int(line.split(b";", 1)[0].strip(), 16)
                if size == 0:
                    break
                left = size
                while left:
                    data = self.rfile.read(min(left, PIECE))
                    if not data:
                        raise ConnectionError("EOF in chunk")
                    h.update(data)
                    if len(kept) < 1 << 20:
                        kept += data
                    left -= len(data)
                    total += len(data)
                if self.rfile.read(2) != b"\r\n":
                    raise ValueError("missing CRLF after chunk")
            while True:
                line = self.rfile.readline(65537)
                if line in (b"\r\n", b"\n", b""):
                    break
                trailers.append(line.decode("latin-1").rstrip("\r\n"))
        elif cl is not None:
            framing = "length"
            left = int(cl)
            while left:
                data = self.rfile.read(min(left, PIECE))
                if not data:
                    raise ConnectionError("EOF in body")
                h.update(data)
                if len(kept) < 1 << 20:
                    kept += data
                left -= len(data)
                total += len(data)
        else:
            framing = "none"
        return {"body_length": total, "body_sha256": h.hexdigest(),
                "body_framing": framing, "trailers": trailers, "kept": bytes(kept)}

    # -- responses -------------------------------------------------------------------

    def _simple(self, code: int, body: bytes = b"", headers=(), head: bool = False,
                content_type: str | None = "application/octet-stream", length: int | None = None):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if code >= 200 and code not in (204, 304):
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def _route(self, head: bool):
        body_info = self._read_body()
        kept = body_info.pop("kept")
        target = self.path
        parts = urlsplit(target)
        path = parts.path
        query = parse_qs(parts.query)
        seg = path.strip("/").split("/")
        self.server.requests.append((self.command, target, self.headers.items()))
        try:
            if seg[0] == "fixed" and len(seg) == 2:
                n = int(seg[1])
                self._simple(200, pattern(n), head=head)
            elif seg[0] == "head":
                self._simple(200, pattern(1000), head=head)
            elif seg[0] == "chunked" and len(seg) == 2:
                self._chunked(int(seg[1]), head)
            elif seg[0] == "close" and len(seg) == 2:
                self._close_delimited(int(seg[1]), head)
            elif seg[0] == "slow":
                pieces = int(query.get("pieces", ["4"])[0])
                interval = float(query.get("interval", ["0.75"])[0])
                self._slow(pieces, interval, head)
            elif seg[0] == "huge" and len(seg) == 2:
                self._huge(int(seg[1]), head)
            elif seg[0] == "echo":
                info = {
                    "method": self.command,
                    "target": target,
                    "version": self.request_version,
                    "headers": [[k, v] for k, v in self.headers.items()],
                    **body_info,
                }
                if "body" in query:
                    # The first MiB of the body, for tests that check what arrived.
                    info["body"] = kept.decode("latin-1")
                payload = json.dumps(info).encode()
                self._simple(200, payload, head=head, content_type="application/json")
            elif seg[0] == "status" and len(seg) == 2:
                code = int(seg[1])
                body = b"" if code < 200 or code in (204, 304) else f"status {code}\n".encode()
                self._simple(code, body, head=head, content_type="text/plain")
            elif seg[0] == "204":
                self._simple(204)
            elif seg[0] == "304":
                self._simple(304, headers=[("ETag", '"v1"')])
            elif seg[0] == "103":
                self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
                self.wfile.flush()
                time.sleep(0.05)
                self._simple(200, b"hello", head=head, content_type="text/plain")
            elif seg[0] == "hop":
                self._simple(200, b"hop\n", head=head, content_type="text/plain", headers=[
                    ("Connection", "X-Hop-Header"), ("X-Hop-Header", "must-not-reach-client"),
                    ("Keep-Alive", "timeout=5, max=100"), ("X-End", "kept"),
                    ("Via", "1.0 upstream-cache")])
            elif seg[0] == "set-cookie":
                self._simple(200, b"ok\n", head=head, content_type="text/plain",
                             headers=[("Set-Cookie", "sid=SETCOOKIE-SECRET-0xC0FFEE; Path=/")])
            else:
                self._simple(404, b"no such route\n", head=head, content_type="text/plain")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunked(self, n: int, head: bool):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Trailer", "X-Checksum")
        self.end_headers()
        if head:
            return
        offset = 0
        for size in chunk_sizes(n):
            data = pattern(size, offset)
            offset += size
            self.wfile.write(b"%x\r\n" % size + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\nX-Checksum: " + expected_sha256(n).encode() + b"\r\n\r\n")

    def _close_delimited(self, n: int, head: bool):
        self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
        if not head:
            for piece in iter_pattern(n):
                self.wfile.write(piece)
        self.close_connection = True

    def _slow(self, pieces: int, interval: float, head: bool):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if head:
            return
        for i in range(pieces):
            if i:
                time.sleep(interval)
            data = b"slow piece %d\n" % i
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _huge(self, n: int, head: bool):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if head:
            return
        for piece in iter_pattern(n):
            self.wfile.write(piece)


def slow_body(pieces: int = 4) -> bytes:
    """The body /slow?pieces=P sends."""
    return b"".join(b"slow piece %d\n" % i for i in range(pieces))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, handler, tls_context: ssl.SSLContext | None):
        self.tls_context = tls_context
        self.requests: list = []
        super().__init__((HOST, 0), handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.tls_context is not None:
            sock = self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        pass  # clients (and the proxy under test) may hang up at any point


class HTTPOrigin:
    """The well-behaved origin. ``tls=(cert, key)`` makes it an HTTPS origin."""

    def __init__(self, tls: tuple[Path, Path] | None = None):
        ctx = None
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
        self.scheme = "https" if tls else "http"
        self.server = _Server(OriginHandler, ctx)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def authority(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def requests(self) -> list:
        """(method, target, header items) for every request received, in order."""
        return self.server.requests

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://{self.authority}{path}"

    def start(self) -> "HTTPOrigin":
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# MARK: - raw-socket misbehaving origins

def read_head(conn: socket.socket, timeout: float = 10.0) -> bytes:
    """Read until the end of a request head (or EOF / timeout); return what was read."""
    conn.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, OSError):
        pass
    return data


def _hard_close(conn: socket.socket):
    """Close with SO_LINGER 0: the kernel sends RST instead of FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _wait_for_peer_close(conn: socket.socket, origin: "RawOrigin", limit: float = 120.0):
    """Keep the connection open, reading and discarding, until the peer closes or we stop."""
    conn.settimeout(0.1)
    deadline = time.monotonic() + limit
    while not origin.stopped.is_set() and time.monotonic() < deadline:
        try:
            if not conn.recv(65536):
                return
        except socket.timeout:
            continue
        except OSError:
            return


RESET_DECLARED = 100_000
RESET_SENT = 10_000


def behave_reset_mid_body(conn, origin):
    """Head with Content-Length 100000, 10000 body bytes, then RST."""
    origin.record(read_head(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                 b"Content-Length: %d\r\n\r\n" % RESET_DECLARED + pattern(RESET_SENT))
    time.sleep(0.3)  # let the proxy forward the head before the reset arrives
    _hard_close(conn)


# A reset after more than the proxy queues for a slow client: bytes already relayed must all
# arrive, and the client must still see the reset.
RESET_BULK_SENT = 4 << 20
RESET_BULK_DECLARED = 8 << 20


def send_all_then_reset(conn, data: bytes, limit: float = 30.0):
    """Sends ``data``, waits until the peer's kernel has acknowledged all of it (an RST would
    discard what is still in our send queue), then resets the connection."""
    conn.sendall(data)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        unacknowledged = struct.unpack("i", fcntl.ioctl(conn.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
        if unacknowledged == 0:
            break
        time.sleep(0.01)
    _hard_close(conn)


def behave_reset_after_bulk(conn, origin):
    """Head with Content-Length RESET_BULK_DECLARED, RESET_BULK_SENT body bytes, then RST."""
    origin.record(read_head(conn))
    send_all_then_reset(conn, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % RESET_BULK_DECLARED
                         + pattern(RESET_BULK_SENT))


# More than a small client window holds, less than Lookout queues for one client before it stops
# reading the origin: all of it reaches Lookout before the reset.
RESET_QUEUED_SENT = 192 << 10


def behave_reset_after_queued(conn, origin):
    """Head with Content-Length RESET_BULK_DECLARED, RESET_QUEUED_SENT body bytes, then RST."""
    origin.record(read_head(conn))
    send_all_then_reset(conn, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % RESET_BULK_DECLARED
                        + pattern(RESET_QUEUED_SENT))


def behave_tunnel_bulk_then_reset(conn, origin):
    """A tunnel's far end: RESET_BULK_SENT bytes straight away, then RST."""
    send_all_then_reset(conn, pattern(RESET_BULK_SENT))


def behave_garbage_head(conn, origin):
    """Answers "HELLO\\r\\n\\r\\n" instead of a status line, then closes."""
    origin.record(read_head(conn))
    conn.sendall(b"HELLO\r\n\r\n")
    time.sleep(0.1)
    conn.close()


def behave_unrequested_switch(conn, origin):
    """Answers 101 Switching Protocols although no upgrade was asked for, then talks non-HTTP
    and keeps the connection open."""
    origin.record(read_head(conn))
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello")
    _wait_for_peer_close(conn, origin)
    conn.close()


WS_GREETING = b"\x81\x05hello"
WS_FLOOD_MIB = 24
WS_PARTIAL = b"\x81\x07partial"


def behave_websocket_echo(conn, origin):
    """A WebSocket-style origin: answers an Upgrade request with 101 plus a first frame in the
    same send, then echoes every byte until the peer half-closes, then closes. Without an
    Upgrade it answers 426 (and keeps the connection for another request)."""
    while True:
        head = read_head(conn)
        if not head:
            conn.close()
            return
        origin.record(head)
        fields: dict[bytes, list[bytes]] = {}
        for line in head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            fields.setdefault(name.strip().lower(), []).append(value.strip().lower())
        asks = b"websocket" in fields.get(b"upgrade", []) and any(
            b"upgrade" in v for v in fields.get(b"connection", []))
        if not asks:
            conn.sendall(b"HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\nno")
            continue
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n" + WS_GREETING)
        if head.split(b" ", 2)[1].endswith(b"/reset"):
            # A few bytes of the new protocol, then a reset (RST, not FIN).
            conn.sendall(WS_PARTIAL)
            time.sleep(0.2)
            _hard_close(conn)
            return
        if head.split(b" ", 2)[1].endswith(b"/flood"):
            # Server-to-client flood, then close: for slow readers behind the relay.
            chunk = pattern(1 << 20)
            for _ in range(WS_FLOOD_MIB):
                conn.sendall(chunk)
            conn.close()
            return
        # Whatever came behind the head in the same read is already the new protocol.
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            conn.sendall(rest)
        conn.settimeout(30)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        conn.close()
        return


def behave_one_per_connection(conn, origin):
    """Answers the first request of a keep-alive connection without announcing a close, then
    reads the next request and closes without answering: what a proxy sees when it reuses a
    pooled connection the origin has just dropped."""
    origin.record(read_head(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
    second = read_head(conn)
    if second:
        origin.record(second)
    conn.close()


def behave_never_answers(conn, origin):
    """Accepts, reads the request, never says anything."""
    origin.record(read_head(conn))
    _wait_for_peer_close(conn, origin)
    conn.close()


def behave_close_without_response(conn, origin):
    """Reads the request head, then closes (FIN) without a response."""
    origin.record(read_head(conn))
    conn.close()


CONFLICT_BODY = b"hello"


def behave_conflicting_framing(conn, origin):
    """A response with both Content-Length and Transfer-Encoding: chunked."""
    origin.record(read_head(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"5\r\nhello\r\n0\r\n\r\n")
    _wait_for_peer_close(conn, origin, limit=10)
    conn.close()


STALL_DECLARED = 1000
STALL_SENT = 100


def behave_stall_mid_body(conn, origin):
    """Head with Content-Length 1000, 100 body bytes, then silence (idle timeout mid-body)."""
    origin.record(read_head(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % STALL_DECLARED
                 + pattern(STALL_SENT))
    _wait_for_peer_close(conn, origin)
    conn.close()


def behave_sink_then_reply(conn, origin):
    """Tunnel peer: read until EOF (the client's half-close), then answer
    b"received N SHA256\\n" and close."""
    conn.settimeout(30)
    h = hashlib.sha256()
    n = 0
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            h.update(data)
            n += len(data)
        origin.record(b"%d" % n)
        conn.sendall(b"received %d %s\n" % (n, h.hexdigest().encode()))
    except OSError:
        pass
    conn.close()


GREETING = b"hello from origin\n"


def behave_greet_then_sink(conn, origin):
    """Tunnel peer: send a greeting, half-close (SHUT_WR), then read until EOF and record
    everything received."""
    conn.settimeout(30)
    data = b""
    try:
        conn.sendall(GREETING)
        conn.shutdown(socket.SHUT_WR)
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    origin.record(data)
    conn.close()


class RawOrigin:
    """A listener that runs ``behavior(conn, origin)`` on its own thread per connection.

    ``received`` holds what each behaviour chose to record (usually the request head), in order
    of recording; ``accepted`` counts connections.
    """

    def __init__(self, behavior, tls: tuple[Path, Path] | None = None):
        self.behavior = behavior
        self.tls_context = None
        if tls is not None:
            self.tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls_context.load_cert_chain(str(tls[0]), str(tls[1]))
        self.name = behavior.__name__.removeprefix("behave_")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.accepted = 0
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)

    @property
    def authority(self) -> str:
        return f"{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"http://{self.authority}{path}"

    def record(self, data: bytes):
        with self._cond:
            self.received.append(data)
            self._cond.notify_all()

    def wait_received(self, count: int, timeout: float = 10.0) -> list[bytes]:
        """Wait until at least ``count`` records exist; return them all."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{self.name}: {len(self.received)} records, wanted {count}")
                self._cond.wait(left)
            return list(self.received)

    def _accept_loop(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                self.accepted += 1
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn):
        try:
            if self.tls_context is not None:
                conn = self.tls_context.wrap_socket(conn, server_side=True)
            self.behavior(conn, self)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def start(self) -> "RawOrigin":
        self._thread.start()
        return self

    def stop(self):
        self.stopped.set()
        self.sock.close()
        self._thread.join(2)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


BEHAVIORS = {
    "reset_mid_body": behave_reset_mid_body,
    "reset_after_bulk": behave_reset_after_bulk,
    "reset_after_queued": behave_reset_after_queued,
    "tunnel_bulk_then_reset": behave_tunnel_bulk_then_reset,
    "garbage_head": behave_garbage_head,
    "unrequested_switch": behave_unrequested_switch,
    "websocket_echo": behave_websocket_echo,
    "one_per_connection": behave_one_per_connection,
    "never_answers": behave_never_answers,
    "close_without_response": behave_close_without_response,
    "conflicting_framing": behave_conflicting_framing,
    "stall_mid_body": behave_stall_mid_body,
    "sink_then_reply": behave_sink_then_reply,
    "greet_then_sink": behave_greet_then_sink,
}


class BlackholeOrigin:
    """A listening socket (backlog 0) that never accepts, with its accept queue filled by our
    own connections, so the kernel drops further SYNs: connects to it time out."""

    def __init__(self, fillers: int = 3):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((HOST, 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self._fillers: list[socket.socket] = []
        for _ in range(fillers):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect((HOST, self.port))
            except (BlockingIOError, InterruptedError):
                pass
            self._fillers.append(s)
        time.sleep(0.05)  # let the handshakes that can complete, complete

    @property
    def authority(self) -> str:
        return f"{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"http://{self.authority}{path}"

    def stop(self):
        for s in self._fillers:
            s.close()
        self.sock.close()


def unused_port() -> tuple[socket.socket, int]:
    """A port that is bound but not listening: connecting to it is refused. Keep the returned
    socket open for as long as the port must stay refused."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((HOST, 0))
    return s, s.getsockname()[1]



# MARK: - Origins shaped for one suite, all on RawOrigin's accept loop


def behave_echo(conn, origin):
    """Echoes whatever arrives until the peer half-closes (a tunnel's far end)."""
    while data := conn.recv(65536):
        conn.sendall(data)


def behave_partial_then_reset(conn, origin):
    """Answers one request with a head promising 1 MB, sends 100 kB of it, then resets."""
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100_000)
    time.sleep(0.3)
    # With TLS, wrap_socket took over the raw descriptor: reset through the TLS socket.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def reply_and_hold(reply: bytes | None):
    """A behaviour that reads the client's first flight, answers ``reply`` (or nothing) and keeps
    the connection open until the origin stops (a peer that is not the server it should be)."""
    def behave_reply_and_hold(conn, origin):
        if reply is not None:
            conn.recv(65536)
            conn.sendall(reply)
        origin.stopped.wait()
    return behave_reply_and_hold


class HeldOrigin(RawOrigin):
    """Takes each request and holds it: with ``head_first``, after a response head announcing more
    body than it sends. ``release`` lets the held requests be answered; ``closed_by_proxy`` is set
    when the proxy closes a connection it holds."""

    def __init__(self, head_first: bool = False):
        super().__init__(self._hold)
        self.head_first = head_first
        self.closed_by_proxy = threading.Event()
        self.release = threading.Event()
        self.start()

    @property
    def requests(self) -> int:
        return len(self.received)

    def url(self, path: str = "/held") -> str:
        return super().url(path)

    def _hold(self, conn, origin):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        self.record(data)
        if self.head_first:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nContent-Type: text/plain\r\n\r\n" + b"x" * 1000)
        conn.settimeout(0.1)
        while not self.release.is_set() and not self.stopped.is_set():
            try:
                if conn.recv(65536) == b"":
                    self.closed_by_proxy.set()
                    return
            except socket.timeout:
                continue
            except OSError:
                self.closed_by_proxy.set()
                return
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        except OSError:
            pass

    def close(self):
        self.release.set()
        self.stop()


class ConnectRelay(RawOrigin):
    """127.0.0.1:PORT → `CONNECT host:port` through the proxy → bytes both ways: for clients (such
    as h2spec) that can only connect straight to a TLS server."""

    def __init__(self, proxy_port: int, host: str, port: int):
        super().__init__(self._relay)
        self.target = (proxy_port, host, port)
        self.start()

    def _relay(self, client, origin):
        from h2_client import connect_through  # h2_client imports the test helpers, not the origins
        try:
            upstream = connect_through(*self.target)
        except OSError:
            return

        def pipe(src, dst):
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)
        upstream.close()

    def close(self):
        self.stop()


def bulk_exchange(size: int):
    """A behaviour for a tunnel's far end: reads everything the client sends until its FIN,
    hashing it, while sending ``size`` pattern bytes; then sends the SHA-256 hex of what it read."""
    def behave_bulk_exchange(conn, origin):
        digest = hashlib.sha256()

        def read_all():
            while data := conn.recv(1 << 16):
                digest.update(data)

        reader = threading.Thread(target=read_all)
        reader.start()
        for piece in iter_pattern(size):
            conn.sendall(piece)
        reader.join()
        conn.sendall(digest.hexdigest().encode())
    return behave_bulk_exchange


# The scripted HTTP/1.1 origin and the HTTP/2 origin live beside this file; every suite takes its
# origins from this package.
from origins.scripted import ScriptedOrigin, echo  # noqa: E402
from origins.h2 import H2Origin  # noqa: E402
