"""An HTTP/2 origin for tests (the `h2` package over sockets, one thread per connection), on
127.0.0.1 and a port the kernel picks: TLS with ALPN `h2` (``tls=(cert, key)``) or cleartext h2
with prior knowledge. It records what arrived — connections, streams, header sections, PINGs —
and can misbehave on purpose: refuse or reset streams, go away, answer slowly.

Routes (by ``:path``):

* ``/fixed/N``       N pattern bytes with ``content-length``
* ``/nolength/N``    N pattern bytes without ``content-length``
* ``/echo``          JSON: the request's header section (pseudo-fields too), body length and sha256,
                     trailers
* ``/trailers``      ``hello`` then a trailer section with ``grpc-status: 0``
* ``/status/N``      status N, empty body (END_STREAM on HEADERS)
* ``/informational`` a 103 Early Hints, then 200
* ``/refuse-once/T`` RST_STREAM REFUSED_STREAM the first time T is asked for, then 200
* ``/reset``         a response head, 10 bytes, then RST_STREAM INTERNAL_ERROR
* ``/goaway``        200, then GOAWAY NO_ERROR naming this stream as the last
* ``/badlength``     ``content-length: 10`` and 5 bytes of body (malformed, RFC 9113 §8.1.1)
* ``/stall``         a response head, 10 of its 100 bytes, then nothing
* ``/bigheaders``    a response head with a 2,000-byte field
* ``/slow/S``        the response head after S seconds
* ``/drip/N``        N bytes of body, 1 KiB every 20 ms
* ``/resumable/N``   N pattern bytes with ``etag: "r1"``; without ``range``, a third of them and
                     then RST_STREAM INTERNAL_ERROR; ``range: bytes=K-`` is answered 206 from K
"""

from __future__ import annotations

import hashlib
import json
import select
import socket
import ssl
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from origins import HOST, iter_pattern


class _Stream:
    def __init__(self, stream_id: int):
        self.id = stream_id
        self.headers: list[tuple[str, str]] = []
        self.body = hashlib.sha256()
        self.body_len = 0
        self.trailers: list[tuple[str, str]] = []
        self.ended = False
        # What is still to be sent: body pieces, then trailers (or END_STREAM).
        self.pending = bytearray()
        self.source = None  # an iterator of further body pieces
        self.out_trailers = None
        self.finish = False
        self.drip = None  # (bytes left, next time)

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None


class H2Origin:
    def __init__(self, tls: tuple | None = None, max_concurrent_streams: int = 100, http1: bool = False,
                 silent: bool = False, freeze: bool = False):
        """``http1``: also take HTTP/1.1 (ALPN ``http/1.1`` or none), where it answers
        ``Upgrade: websocket`` with 101 and then echoes bytes, and anything else with ``http1``.
        ``silent``: negotiate h2, then send nothing at all (no SETTINGS, RFC 9113 §3.4).
        ``freeze``: once the first connection's first response is out, it neither reads nor writes
        again (PINGs go unanswered); later connections behave."""
        self.silent = silent
        self.freeze = freeze
        self.tls_context = None
        self.http1 = http1
        if tls is not None:
            self.tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls_context.load_cert_chain(str(tls[0]), str(tls[1]))
            self.tls_context.set_alpn_protocols(["h2", "http/1.1"] if http1 else ["h2"])
        self.scheme = "https" if tls else "http"
        self.max_concurrent_streams = max_concurrent_streams
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((HOST, 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.connections = 0
        self.requests: list[dict] = []  # {"conn", "stream", "headers", "body_len", "trailers"}
        self.pings = 0
        self.goaways_received = 0
        self.max_open_streams = 0
        self.http1_connections = 0
        self.sent: dict[tuple[int, int], int] = {}  # (connection, stream) -> body bytes sent
        self._refused: set[str] = set()
        self._stopping = False
        self._threads: list[threading.Thread] = []

    def url(self, path: str, host: str = "localhost") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def start(self) -> "H2Origin":
        thread = threading.Thread(target=self._accept_loop, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self):
        self._stopping = True
        try:
            self.listener.close()
        except OSError:
            pass

    def _accept_loop(self):
        while not self._stopping:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._serve, args=(sock, number), daemon=True).start()

    # MARK: - one connection

    def _serve(self, sock: socket.socket, number: int):
        try:
            if self.tls_context is not None:
                sock = self.tls_context.wrap_socket(sock, server_side=True)
                if sock.selected_alpn_protocol() != "h2":
                    with self.lock:
                        self.http1_connections += 1
                    if self.http1:
                        self._serve_http1(sock)
                    sock.close()
                    return
            if self.silent:
                while sock.recv(65536):
                    pass
                return
            config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8", validate_inbound_headers=True)
            conn = h2.connection.H2Connection(config=config)
            conn.local_settings = h2.settings.Settings(client=False, initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_concurrent_streams,
            })
            conn.initiate_connection()
            sock.sendall(conn.data_to_send())
            streams: dict[int, _Stream] = {}
            timed: list[tuple[float, int]] = []  # (when, stream id) for delayed responses
            closing_at = None
            while not self._stopping:
                now = time.monotonic()
                wait = 0.05
                if sock.pending() if hasattr(sock, "pending") else False:
                    wait = 0
                readable, _, _ = select.select([sock], [], [], wait)
                if readable or (hasattr(sock, "pending") and sock.pending()):
                    try:
                        data = sock.recv(65536)
                    except (ssl.SSLWantReadError, BlockingIOError):
                        data = None
                    if data == b"":
                        break
                    if data:
                        for event in conn.receive_data(data):
                            self._handle(conn, event, streams, timed, number)
                for when, stream_id in list(timed):
                    if when <= now:
                        timed.remove((when, stream_id))
                        if stream_id in streams:
                            self._respond(conn, streams[stream_id], streams, timed, now)
                self._pump(conn, streams, now)
                out = conn.data_to_send()
                if out:
                    sock.sendall(out)
                if self.freeze and number == 1 and self.requests and not streams:
                    while not self._stopping:
                        time.sleep(0.1)
                if conn.state_machine.state == h2.connection.ConnectionState.CLOSED and closing_at is None:
                    closing_at = now + 0.5
                if closing_at is not None and now >= closing_at:
                    break
        except (OSError, h2.exceptions.ProtocolError, ssl.SSLError):
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def _serve_http1(self, sock):
        head = b""
        while b"\r\n\r\n" not in head:
            piece = sock.recv(4096)
            if not piece:
                return
            head += piece
        if b"upgrade: websocket" in head.lower():
            sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
            while True:
                piece = sock.recv(4096)
                if not piece:
                    return
                sock.sendall(piece)
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhttp1")

    def _handle(self, conn, event, streams, timed, number):
        if isinstance(event, h2.events.RequestReceived):
            stream = _Stream(event.stream_id)
            stream.headers = list(event.headers)
            streams[event.stream_id] = stream
            with self.lock:
                open_now = sum(1 for s in streams.values() if not s.finish)
                self.max_open_streams = max(self.max_open_streams, open_now)
            stream.connection = number
            if event.stream_ended is not None:
                self._request_done(conn, stream, streams, timed)
        elif isinstance(event, h2.events.DataReceived):
            stream = streams.get(event.stream_id)
            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if stream is not None:
                stream.body.update(event.data)
                stream.body_len += len(event.data)
            if event.stream_ended is not None and stream is not None:
                self._request_done(conn, stream, streams, timed)
        elif isinstance(event, h2.events.TrailersReceived):
            stream = streams.get(event.stream_id)
            if stream is not None:
                stream.trailers = list(event.headers)
                if event.stream_ended is not None:
                    self._request_done(conn, stream, streams, timed)
        elif isinstance(event, h2.events.StreamEnded):
            pass
        elif isinstance(event, h2.events.PingReceived):
            with self.lock:
                self.pings += 1
        elif isinstance(event, h2.events.ConnectionTerminated):
            with self.lock:
                self.goaways_received += 1
        elif isinstance(event, h2.events.StreamReset):
            streams.pop(event.stream_id, None)

    def _request_done(self, conn, stream: _Stream, streams, timed):
        stream.ended = True
        with self.lock:
            self.requests.append({"conn": stream.connection, "stream": stream.id, "headers": stream.headers,
                                  "body_len": stream.body_len, "body_sha256": stream.body.hexdigest(),
                                  "trailers": stream.trailers})
        path = stream.header(":path") or "/"
        if path.startswith("/slow/"):
            timed.append((time.monotonic() + float(path.split("?")[0].split("/")[2]), stream.id))
            return
        self._respond(conn, stream, streams, timed, time.monotonic())

    def _respond(self, conn, stream: _Stream, streams, timed, now):
        path = stream.header(":path") or "/"
        parts = path.split("?")[0].split("/")
        sid = stream.id
        if path.startswith("/fixed/"):
            n = int(parts[2])
            conn.send_headers(sid, [(":status", "200"), ("content-length", str(n)), ("content-type", "application/octet-stream")])
            stream.source = iter_pattern(n)
            stream.finish = True
        elif path.startswith("/nolength/"):
            conn.send_headers(sid, [(":status", "200")])
            stream.source = iter_pattern(int(parts[2]))
            stream.finish = True
        elif path.startswith("/drip/"):
            conn.send_headers(sid, [(":status", "200"), ("content-length", parts[2])])
            stream.drip = (int(parts[2]), now)
        elif path == "/echo":
            body = json.dumps({"headers": stream.headers, "body_len": stream.body_len,
                               "body_sha256": stream.body.hexdigest(), "trailers": stream.trailers,
                               "stream": sid}).encode()
            conn.send_headers(sid, [(":status", "200"), ("content-type", "application/json"),
                                    ("content-length", str(len(body)))])
            stream.pending += body
            stream.finish = True
        elif path == "/trailers":
            conn.send_headers(sid, [(":status", "200"), ("content-type", "application/grpc")])
            stream.pending += b"hello"
            stream.out_trailers = [("grpc-status", "0"), ("grpc-message", "fine")]
            stream.finish = True
        elif path.startswith("/status/"):
            conn.send_headers(sid, [(":status", parts[2])], end_stream=True)
            streams.pop(sid, None)
        elif path == "/informational":
            conn.send_headers(sid, [(":status", "103"), ("link", "</style.css>; rel=preload")])
            conn.send_headers(sid, [(":status", "200"), ("content-length", "2")])
            stream.pending += b"ok"
            stream.finish = True
        elif path.startswith("/refuse-once/"):
            with self.lock:
                first = path not in self._refused
                self._refused.add(path)
            if first:
                conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
                streams.pop(sid, None)
            else:
                conn.send_headers(sid, [(":status", "200"), ("content-length", "6")])
                stream.pending += b"served"
                stream.finish = True
        elif path.startswith("/resumable/"):
            n = int(parts[2])
            asked = stream.header("range")
            if asked:
                start = int(asked.removeprefix("bytes=").rstrip("-"))
                conn.send_headers(sid, [(":status", "206"), ("etag", '"r1"'), ("content-length", str(n - start)),
                                        ("content-range", f"bytes {start}-{n - 1}/{n}")])
                stream.source = iter_pattern(n - start, start)
                stream.finish = True
            else:
                conn.send_headers(sid, [(":status", "200"), ("etag", '"r1"'), ("content-length", str(n))])
                conn.send_data(sid, b"".join(iter_pattern(min(n // 3, 16000))))
                conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                streams.pop(sid, None)
        elif path == "/reset":
            conn.send_headers(sid, [(":status", "200"), ("content-length", "100")])
            conn.send_data(sid, b"0123456789")
            conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
            streams.pop(sid, None)
        elif path == "/goaway":
            conn.send_headers(sid, [(":status", "200"), ("content-length", "4")])
            conn.send_data(sid, b"gone", end_stream=True)
            streams.pop(sid, None)
            conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR, last_stream_id=sid)
        elif path == "/badlength":
            conn.send_headers(sid, [(":status", "200"), ("content-length", "10")])
            conn.send_data(sid, b"short", end_stream=True)
            streams.pop(sid, None)
        elif path == "/stall":
            conn.send_headers(sid, [(":status", "200"), ("content-length", "100")])
            conn.send_data(sid, b"0123456789")
            streams.pop(sid, None)
        elif path == "/bigheaders":
            conn.send_headers(sid, [(":status", "200"), ("x-big", "b" * 2000), ("content-length", "0")], end_stream=True)
            streams.pop(sid, None)
        elif path.startswith("/slow/"):
            conn.send_headers(sid, [(":status", "200"), ("content-length", "4")])
            stream.pending += b"late"
            stream.finish = True
        else:
            conn.send_headers(sid, [(":status", "404"), ("content-length", "0")], end_stream=True)
            streams.pop(sid, None)

    def _pump(self, conn, streams, now):
        """Sends what the windows allow, for every stream with something to send."""
        for sid, stream in list(streams.items()):
            if stream.drip is not None:
                left, when = stream.drip
                if when <= now and left > 0:
                    n = min(1024, left)
                    stream.pending += bytes(n)
                    stream.drip = (left - n, now + 0.02)
                if stream.drip[0] == 0 and not stream.pending:
                    stream.drip = None
                    stream.finish = True
            while True:
                if not stream.pending and stream.source is not None:
                    piece = next(stream.source, None)
                    if piece is None:
                        stream.source = None
                    else:
                        stream.pending += piece
                if not stream.pending:
                    break
                try:
                    window = conn.local_flow_control_window(sid)
                except h2.exceptions.StreamClosedError:
                    streams.pop(sid, None)
                    break
                n = min(window, len(stream.pending), conn.max_outbound_frame_size)
                if n <= 0:
                    break
                conn.send_data(sid, bytes(stream.pending[:n]))
                del stream.pending[:n]
                with self.lock:
                    key = (stream.connection, sid)
                    self.sent[key] = self.sent.get(key, 0) + n
            if sid in streams and stream.finish and not stream.pending and stream.source is None and stream.drip is None:
                try:
                    if stream.out_trailers:
                        conn.send_headers(sid, stream.out_trailers, end_stream=True)
                    else:
                        conn.end_stream(sid)
                except h2.exceptions.StreamClosedError:
                    pass
                streams.pop(sid, None)
