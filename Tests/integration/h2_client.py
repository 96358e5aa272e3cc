"""A raw HTTP/2 client for tests (the `h2` package over a socket): CONNECT through Lookout, TLS
with ALPN h2 trusting Lookout's CA, then frames under the test's control — windows it does not
open, streams it resets, floods — which no ordinary client sends on purpose."""

import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

from conftest import connect


def connect_through(proxy_port: int, host: str, port: int, timeout: float = 10.0) -> socket.socket:
    """A socket on which Lookout answered `CONNECT host:port` with 200; nothing read past its head."""
    sock = connect(proxy_port, timeout=timeout)
    sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            raise ConnectionError(f"proxy closed during CONNECT: {head!r}")
        head += byte
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(f"CONNECT refused: {head!r}")
    return sock


class Response:
    def __init__(self):
        self.status = None
        self.headers = []
        self.informational = []
        self.body = bytearray()
        self.trailers = []
        self.ended = False
        self.reset = None  # the RST_STREAM error code, if the stream was reset

    def header(self, name: str):
        for k, v in self.headers:
            if k == name:
                return v
        return None


class H2Client:
    scheme = "https"

    def __init__(self, proxy_port: int, cafile: str, host: str = "localhost", port: int = 443,
                 authority: str | None = None, window: int | None = None, timeout: float = 15.0,
                 alpn=("h2",)):
        self.authority = authority or f"{host}:{port}"
        raw = connect_through(proxy_port, host, port, timeout)
        ctx = ssl.create_default_context(cafile=cafile)
        ctx.set_alpn_protocols(list(alpn))
        self.sock = ctx.wrap_socket(raw, server_hostname=host)
        self.sock.settimeout(timeout)
        self.alpn = self.sock.selected_alpn_protocol()
        # Outbound checks off: tests send what a broken client would (connection-specific fields…).
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_inbound_headers=False,
                                           validate_outbound_headers=False, normalize_outbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.flush()
        self.responses: dict[int, Response] = {}
        self.goaway = None  # (error_code, last_stream_id)
        self.closed = False
        self.remote_settings = {}
        self.auto_ack = True

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path: str, method: str = "GET", headers=(), body: bytes | None = None,
                end: bool = True) -> int:
        stream = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":scheme", self.scheme), (":authority", self.authority), (":path", path)]
        fields += list(headers)
        self.conn.send_headers(stream, fields, end_stream=end and body is None)
        self.responses[stream] = Response()
        if body is not None:
            self.send_body(stream, body, end=end)
        self.flush()
        return stream

    def send_body(self, stream: int, body: bytes, end: bool = True):
        """Sends `body` as the windows allow, reading meanwhile."""
        view = memoryview(body)
        while view:
            window = min(self.conn.local_flow_control_window(stream), self.conn.max_outbound_frame_size)
            if window <= 0:
                self.flush()
                self.read_once()
                continue
            self.conn.send_data(stream, bytes(view[:window]))
            view = view[window:]
            self.flush()
        if end:
            self.conn.end_stream(stream)
            self.flush()

    def read_once(self, timeout: float | None = None) -> bool:
        """Reads what arrives and handles its events; False once the connection ended."""
        if self.closed:
            return False
        if timeout is not None:
            self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return True
        except (ConnectionError, ssl.SSLError, OSError):
            self.closed = True
            return False
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(data):
            self.handle(event)
        self.flush()
        return True

    def handle(self, event):
        if isinstance(event, h2.events.ResponseReceived):
            self.responses[event.stream_id].status = int(dict(event.headers)[":status"])
            self.responses[event.stream_id].headers = [(k, v) for k, v in event.headers if not k.startswith(":")]
        elif isinstance(event, h2.events.InformationalResponseReceived):
            self.responses[event.stream_id].informational.append(event.headers)
        elif isinstance(event, h2.events.DataReceived):
            self.responses[event.stream_id].body += event.data
            if self.auto_ack:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            self.responses[event.stream_id].trailers = list(event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            self.responses[event.stream_id].ended = True
        elif isinstance(event, h2.events.StreamReset):
            if event.stream_id in self.responses:
                self.responses[event.stream_id].reset = event.error_code
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = (int(event.error_code), event.last_stream_id)
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            for code, change in event.changed_settings.items():
                self.remote_settings[int(code)] = change.new_value

    def wait(self, predicate, timeout: float = 15.0, message: str = ""):
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting: {message}")
            if not self.read_once(timeout=min(left, 1.0)) and not predicate():
                raise AssertionError(f"connection ended while waiting: {message}")

    def response(self, stream: int, timeout: float = 15.0) -> Response:
        r = self.responses[stream]
        self.wait(lambda: r.ended or r.reset is not None, timeout, f"stream {stream}")
        return r

    def wait_closed(self, timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.read_once(timeout=0.5):
                return True
        return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class H2CClient(H2Client):
    """A cleartext client that asks the proxy for `Upgrade: h2c` on its first request (RFC 7540
    §3.2): `upgraded` says whether the proxy answered 101; stream 1 is then that request's answer."""
    scheme = "http"

    def __init__(self, proxy_port: int, url: str, headers=(), timeout: float = 15.0):
        from urllib.parse import urlsplit
        self.authority = urlsplit(url).netloc
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_inbound_headers=False,
                                           validate_outbound_headers=False, normalize_outbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        settings = self.conn.initiate_upgrade_connection().decode()
        self.sock = connect(proxy_port, timeout=timeout)
        self.sock.settimeout(timeout)
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
        self.sock.sendall((f"GET {url} HTTP/1.1\r\nHost: {self.authority}\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                           f"Upgrade: h2c\r\nHTTP2-Settings: {settings}\r\n{extra}\r\n").encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            byte = self.sock.recv(1)
            if not byte:
                raise ConnectionError(f"proxy closed during the upgrade: {head!r}")
            head += byte
        self.upgrade_head = head
        self.upgraded = head.startswith(b"HTTP/1.1 101")
        self.responses = {1: Response()}
        self.goaway = None
        self.closed = False
        self.remote_settings = {}
        self.auto_ack = True
        if self.upgraded:
            self.flush()
