"""An origin whose answers each test scripts per path, recording every request it receives.

``ScriptedOrigin().route("/a", (302, {"Location": "/b"}, b""), (200, {}, b"ok"))`` answers the first
request for /a with the 302 and every later one with the 200 (the last answer repeats). An answer
may also be a callable taking the ``Received`` request and returning ``(status, headers, body)``.
Bodies are read whole (Content-Length or chunked) and kept as their length, SHA-256 and first MiB.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Received:
    method: str
    target: bytes
    headers: list  # [(name, value)] as received
    body_length: int
    body_sha256: str
    at: float = field(default_factory=time.monotonic)
    # The first MiB of the body (an HTTP hook's call, for instance).
    body: bytes = b""

    def header(self, name: str):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def header_all(self, name: str) -> list:
        return [v for k, v in self.headers if k.lower() == name.lower()]


class ScriptedOrigin:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, tls=None):
        self.host = host
        self.scheme = "https" if tls else "http"
        self._ctx = None
        if tls:
            self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._ctx.load_cert_chain(str(tls[0]), str(tls[1]))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.routes: dict[str, list] = {}
        self.served: dict[str, int] = {}
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://{self.host}:{self.port}{path}"

    def route(self, path: str, *answers):
        with self.lock:
            self.routes[path] = list(answers)
            self.served[path] = 0
        return self

    def requests_for(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.target.split(b"?")[0] == path.encode()]

    def stop(self):
        self._stopped = True
        # close() alone leaves a socket that another thread is blocked in accept() on listening
        # in the kernel (the call holds it): a later connection to the port would still be served
        # by this stopped origin. shutdown() wakes the accept and stops the listening for good.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # MARK: serving

    def _accept_loop(self):
        while not self._stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        try:
            if self._ctx:
                conn = self._ctx.wrap_socket(conn, server_side=True)
            conn.settimeout(30)
            reader = conn.makefile("rb")
            while True:
                line = reader.readline()
                if not line:
                    return
                method, target, _version = line.rstrip(b"\r\n").split(b" ", 2)
                headers = []
                while True:
                    h = reader.readline().rstrip(b"\r\n")
                    if not h:
                        break
                    k, _, v = h.partition(b":")
                    headers.append((k.decode("latin-1"), v.strip().decode("latin-1")))
                digest = hashlib.sha256()
                kept = bytearray()
                length = 0
                names = {k.lower(): v for k, v in headers}
                if names.get("transfer-encoding", "").endswith("chunked"):
                    while True:
                        size = int(reader.readline().split(b";")[0], 16)
                        if size == 0:
                            while reader.readline().rstrip(b"\r\n"):
                                pass
                            break
                        data = reader.read(size)
                        digest.update(data)
                        if len(kept) < 1 << 20:
                            kept += data
                        length += len(data)
                        reader.readline()
                elif "content-length" in names:
                    remaining = int(names["content-length"].split(",")[0])
                    while remaining:
                        data = reader.read(min(remaining, 1 << 16))
                        if not data:
                            return
                        digest.update(data)
                        if len(kept) < 1 << 20:
                            kept += data
                        length += len(data)
                        remaining -= len(data)
                req = Received(method.decode(), target, headers, length, digest.hexdigest(), body=bytes(kept))
                path = target.split(b"?")[0].decode("utf-8", "replace")
                with self.lock:
                    self.received.append(req)
                    answers = self.routes.get(path) or [(404, {}, b"no route")]
                    index = min(self.served.get(path, 0), len(answers) - 1)
                    self.served[path] = self.served.get(path, 0) + 1
                    answer = answers[index]
                if callable(answer):
                    answer = answer(req)
                status, fields, body = answer
                fields = dict(fields)
                head = f"HTTP/1.1 {status} X\r\n"
                for k, v in fields.items():
                    head += f"{k}: {v}\r\n"
                if method != b"HEAD" or "Content-Length" not in fields:
                    head += f"Content-Length: {len(body)}\r\n"
                head += "\r\n"
                conn.sendall(head.encode("latin-1") + (b"" if method == b"HEAD" else body))
        except (OSError, ValueError, ssl.SSLError):
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass


def echo(req: Received):
    """Answers with what arrived: method, body length and SHA-256, and the credentials seen."""
    text = (f"method={req.method} length={req.body_length} sha256={req.body_sha256} "
            f"authorization={req.header('Authorization')} cookie={req.header('Cookie')} "
            f"content-type={req.header('Content-Type')}")
    return 200, {"Content-Type": "text/plain"}, text.encode()
