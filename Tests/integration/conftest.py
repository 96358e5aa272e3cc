"""Fixtures and client helpers for Lookout's end-to-end tests.

* ``lookout_bin``  -- the binary: $LOOKOUT_BIN, else <repo>/.build/debug/lookout (tests that need
  it are skipped when the default path does not exist; a wrong $LOOKOUT_BIN is an error).
* ``make_proxy(config=None, verbose_events=False, args=())`` -- starts
  ``lookout run --config F --listen 127.0.0.1:0 --log LOG`` with a temp YAML config (deep-merged
  overrides) and returns a ``Proxy``; on teardown it is stopped with SIGTERM and must exit 0
  (or ``proxy.expected_exit``), and every log line must be JSON with "v":1.
* ``proxy`` -- ``make_proxy()`` with the default config.
* origins: ``origin`` (HTTP), ``tls_origin`` + ``origin_cert``, ``raw_origin(name)`` factory.
* clients: ``curl``, ``curl_sha256``, ``py_request``, ``urllib_request``, ``raw_exchange`` and
  the ``Reader``/``read_response`` pair for hand-made bytes.

Everything stays on 127.0.0.1. Proxy environment variables are removed (and NO_PROXY set empty)
for this process and every child, so the machine's environment cannot interfere.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import origins  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / ".build" / "debug" / "lookout"

_PROXY_VARS = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
               "ftp_proxy", "FTP_PROXY", "socks_proxy", "SOCKS_PROXY", "no_proxy", "NO_PROXY",
               "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"]
for _v in _PROXY_VARS:
    os.environ.pop(_v, None)
os.environ["NO_PROXY"] = ""
os.environ["no_proxy"] = ""

TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
TIMING_KEYS = ("dns", "connect", "tls", "send", "wait", "receive", "total")
HTTP_BYTES_KEYS = ("request_headers", "request_body", "response_headers", "response_body")
LISTEN_RE = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


def client_env() -> dict:
    env = dict(os.environ)
    for v in _PROXY_VARS:
        env.pop(v, None)
    env["NO_PROXY"] = ""
    env["no_proxy"] = ""
    return env


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.02, message: str = ""):
    """Poll ``predicate`` until it returns a truthy value (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}")
        time.sleep(interval)


def is_number(x) -> bool:
    return type(x) in (int, float)


# MARK: - YAML config

def _scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid YAML double-quoted scalar
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    if isinstance(v, dict):  # flow style, e.g. trust rules inside a list
        return "{" + ", ".join(f"{json.dumps(k)}: {_scalar(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {v!r} as YAML")


def to_yaml(obj: dict, indent: int = 0) -> str:
    out = []
    pad = "  " * indent
    for k, v in obj.items():
        if isinstance(v, dict):
            if v:
                out.append(f"{pad}{k}:")
                out.append(to_yaml(v, indent + 1).rstrip("\n"))
            else:
                out.append(f"{pad}{k}: {{}}")
        else:
            out.append(f"{pad}{k}: {_scalar(v)}")
    return "\n".join(out) + "\n"


def deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


# MARK: - the proxy process

class Proxy:
    """One running ``lookout run``."""

    def __init__(self, binary: Path, workdir: Path, config: dict, verbose_events: bool,
                 args=(), listen=("127.0.0.1:0",), log_to_stdout: bool = False):
        self.binary = binary
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = deep_merge({
            "state_dir": str(workdir / "state"),
            "timeouts": {"shutdown_grace": 5},
        }, config)
        self.config_path = workdir / "lookout.yaml"
        self.config_path.write_text(to_yaml(self.config))
        self.stdout_path = workdir / "stdout.txt"
        self.log_to_stdout = log_to_stdout
        self.log_path = self.stdout_path if log_to_stdout else workdir / "lookout.log"
        self.listen = list(listen)
        self.verbose_events = verbose_events
        self.extra_args = list(args)
        self.expected_exit = 0
        self.port: int | None = None       # the first listener's port
        self.ports: list[int] = []         # every "listening on 127.0.0.1:PORT" seen
        self.proc: subprocess.Popen | None = None
        self._stderr_lines: list[str] = []
        self._listening = threading.Event()
        self._stderr_done = threading.Event()
        self.returncode: int | None = None
        self.extra_env: dict = {}

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def argv(self) -> list[str]:
        argv = [str(self.binary), "run", "--config", str(self.config_path)]
        for listen in self.listen:
            argv += ["--listen", listen]
        argv += ["--log", "-" if self.log_to_stdout else str(self.log_path)]
        if self.verbose_events:
            argv.append("--verbose-events")
        return argv + self.extra_args

    def start(self, timeout: float = 20.0) -> "Proxy":
        self._stdout = open(self.stdout_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._stdout,
                                     stderr=subprocess.PIPE, env={**client_env(), **self.extra_env}, cwd=self.workdir)
        threading.Thread(target=self._read_stderr, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() >= deadline:
                self._stderr_done.wait(2)
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
                self.returncode = self.proc.returncode
                raise AssertionError(
                    f"lookout did not report 'listening on 127.0.0.1:PORT' within {timeout}s "
                    f"(exit {self.proc.returncode}); stderr:\n{self.stderr}")
        return self

    def _read_stderr(self):
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self._stderr_lines.append(line)
            for m in LISTEN_RE.finditer(line):
                self.ports.append(int(m.group(1)))
                if self.port is None:
                    self.port = int(m.group(1))
                    self._listening.set()
        self._stderr_done.set()

    @property
    def stderr(self) -> str:
        return "".join(self._stderr_lines)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig: int):
        assert self.proc is not None
        if sig in (signal.SIGTERM, signal.SIGINT):
            self._terminating = True
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.returncode = self.proc.wait()
            self.expected_exit = self.returncode  # reported here, not again at teardown
            raise AssertionError(f"lookout did not exit within {timeout}s; stderr:\n{self.stderr}")
        self._stderr_done.wait(2)
        return self.returncode

    def stop(self, sig: int = signal.SIGTERM, timeout: float | None = None) -> int:
        """Signal (SIGTERM by default, unless a test already sent one: a second one means
        "exit now") and wait; return the exit code."""
        if self.running() and not getattr(self, "_terminating", False):
            self.send_signal(sig)
        if timeout is None:
            timeout = float(self.config.get("timeouts", {}).get("shutdown_grace", 10)) + 10
        return self.wait_exit(timeout)

    def finish(self):
        """Teardown checks: exit code, then the log file's integrity."""
        try:
            if self.proc is None:
                return
            if self.running() or self.returncode is None:
                rc = self.stop()
            else:
                rc = self.returncode
            assert rc == self.expected_exit, (
                f"lookout exited {rc}, expected {self.expected_exit}; stderr:\n{self.stderr}")
            self.check_log_file()
        finally:
            if hasattr(self, "_stdout"):
                self._stdout.close()

    # -- the log -----------------------------------------------------------------------

    def check_log_file(self, path: Path | None = None):
        """Every line is a JSON object with "v": 1; the file ends with a newline (no torn line)."""
        path = path or self.log_path
        if not path.exists():
            return
        data = path.read_bytes()
        if not data:
            return
        assert data.endswith(b"\n"), f"{path}: last line is torn: {data[-200:]!r}"
        for n, line in enumerate(data.split(b"\n")[:-1], 1):
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise AssertionError(f"{path}:{n}: not JSON ({e}): {line[:300]!r}")
            assert isinstance(rec, dict), f"{path}:{n}: not an object: {line[:300]!r}"
            assert rec.get("v") == 1 and type(rec.get("v")) is int, f"{path}:{n}: v != 1: {rec}"

    def read_log(self, path: Path | None = None) -> list[dict]:
        """All complete lines of the log as parsed records (invalid JSON is an error)."""
        path = path or self.log_path
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in data.split(b"\n")[:-1]:  # a last line without "\n" is still being written
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise AssertionError(f"log line is not JSON ({e}): {line[:300]!r}")
        return out

    def log_records(self, expected: int | None = None, where=None, timeout: float = 5.0,
                    path: Path | None = None) -> list[dict]:
        """Records (optionally filtered by ``where``); with ``expected``, poll until at least that
        many match, failing after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            recs = [r for r in self.read_log(path) if where is None or where(r)]
            if expected is None or len(recs) >= expected:
                return recs
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"wanted {expected} matching log records within {timeout}s, have {len(recs)}:"
                    f"\n{json.dumps(recs, indent=1)[:4000]}\nall records:\n"
                    f"{json.dumps(self.read_log(path), indent=1)[:4000]}\nstderr:\n{self.stderr[-3000:]}")
            time.sleep(0.03)

    def summaries(self, expected: int | None = None, timeout: float = 5.0, where=None,
                  **match) -> list[dict]:
        """Summary ("exchange") records whose top-level fields equal ``match`` (and ``where``)."""
        def pred(r):
            return (r.get("event") == "exchange" and all(r.get(k) == v for k, v in match.items())
                    and (where is None or where(r)))
        return self.log_records(expected, pred, timeout)

    def only_summary(self, timeout: float = 5.0, settle: float = 0.2, where=None, **match) -> dict:
        """Wait for a summary record (matching ``match``/``where``) and check it stays the only one."""
        self.summaries(1, timeout, where, **match)
        time.sleep(settle)
        recs = self.summaries(where=where, **match)
        assert len(recs) == 1, f"expected exactly one summary record, got:\n{json.dumps(recs, indent=1)}"
        return recs[0]


# MARK: - raw sockets

class Reader:
    """Buffered reads from a socket against one deadline."""

    def __init__(self, sock: socket.socket, timeout: float = 15.0):
        self.sock = sock
        self.buf = b""
        self.deadline = time.monotonic() + timeout
        self.eof = False
        self.reset = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"read timed out; buffered {self.buf[:300]!r}")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(262144)
        except socket.timeout:
            raise TimeoutError(f"read timed out; buffered {self.buf[:300]!r}") from None
        except ConnectionResetError:
            self.reset = True
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def read_until(self, delim: bytes, limit: int = 1 << 20) -> bytes | None:
        """Bytes up to and including ``delim``; None if EOF came first."""
        while True:
            i = self.buf.find(delim)
            if i >= 0:
                out, self.buf = self.buf[:i + len(delim)], self.buf[i + len(delim):]
                return out
            if len(self.buf) > limit:
                raise AssertionError(f"no {delim!r} within {limit} bytes")
            if not self._fill():
                return None

    def read_exact(self, n: int) -> bytes:
        """Up to ``n`` bytes; fewer only at EOF."""
        while len(self.buf) < n and self._fill():
            pass
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_to_eof(self) -> bytes:
        while self._fill():
            pass
        out, self.buf = self.buf, b""
        return out

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the peer closes (EOF/RST) within ``timeout`` with no further bytes."""
        self.deadline = time.monotonic() + timeout
        try:
            while self._fill():
                pass
        except TimeoutError:
            return False
        return not self.buf


@dataclass
class Response:
    status: int
    reason: str
    version: str
    headers: list
    body: bytes = b""
    interim: list = field(default_factory=list)   # [(status, headers)] for 1xx
    trailers: list = field(default_factory=list)
    complete: bool = True                          # False: body framing not satisfied (truncated)
    framing: str = "none"                          # none | length | chunked | close
    head_bytes: bytes = b""

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def header_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


def _parse_head(head: bytes):
    lines = head[:-4].split(b"\r\n")
    m = re.match(rb"^(HTTP/\d\.\d) (\d{3})(?: (.*))?$", lines[0])
    if not m:
        raise AssertionError(f"bad status line from proxy: {lines[0]!r}")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        assert sep, f"bad header line from proxy: {line!r}"
        headers.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))
    return m.group(1).decode(), int(m.group(2)), (m.group(3) or b"").decode("latin-1"), headers


def read_response(reader: Reader, method: str = "GET") -> Response:
    """Read one response (skipping and recording 1xx interim responses)."""
    interim = []
    while True:
        head = reader.read_until(b"\r\n\r\n")
        if head is None:
            raise EOFError(f"connection closed before a response head (reset={reader.reset}); "
                           f"got {reader.buf[:300]!r}")
        version, status, reason, headers = _parse_head(head)
        if 100 <= status < 200 and status != 101:
            interim.append((status, headers))
            continue
        break
    resp = Response(status, reason, version, headers, interim=interim, head_bytes=head)
    te = resp.header("Transfer-Encoding")
    cl = resp.header("Content-Length")
    if method == "HEAD" or status in (204, 304) or status < 200:
        resp.framing = "none"
    elif te is not None and te.lower().replace(" ", "").endswith("chunked"):
        resp.framing = "chunked"
        body = bytearray()
        while True:
            line = reader.read_until(b"\r\n")
            if line is None:
                resp.complete = False
                break
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:
                    t = reader.read_until(b"\r\n")
                    if t is None:
                        resp.complete = False
                        break
                    if t == b"\r\n":
                        break
                    resp.trailers.append(t[:-2].decode("latin-1"))
                break
            data = reader.read_exact(size)
            body += data
            if len(data) < size or reader.read_exact(2) != b"\r\n":
                resp.complete = False
                break
        resp.body = bytes(body)
    elif cl is not None:
        resp.framing = "length"
        n = int(cl)
        resp.body = reader.read_exact(n)
        resp.complete = len(resp.body) == n
    else:
        # Also a Transfer-Encoding without chunked last (RFC 9112 §6.3 rule 4).
        resp.framing = "close"
        resp.body = reader.read_to_eof()
        resp.complete = not reader.reset
    return resp


def rss_kib(pid: int) -> int:
    """VmRSS of process ``pid`` in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_slowly_to_end(sock: socket.socket, start_after: float = 1.0, timeout: float = 30.0) -> tuple[bytes, bool]:
    """Reads like a slow client (a small receive window, small reads, short pauses, starting
    late), so the proxy has to queue what it relays. Returns (bytes, whether it ended in a reset)."""
    time.sleep(start_after)
    sock.settimeout(timeout)
    chunks = []
    while True:
        try:
            data = sock.recv(16384)
        except ConnectionResetError:
            return b"".join(chunks), True
        if not data:
            return b"".join(chunks), False
        chunks.append(data)
        time.sleep(0.0005)


def small_window_connect(port: int, timeout: float = 10.0) -> socket.socket:
    """A client connection with a small receive buffer (set before connecting, so the window
    stays small)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def send_all(sock: socket.socket, data: bytes) -> bool:
    """sendall that tolerates the peer closing early (it may answer before reading it all)."""
    try:
        sock.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on right now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw_exchange(port: int, data: bytes, method: str | None = None,
                 timeout: float = 15.0) -> tuple[Response, Reader]:
    """Send ``data`` on a new connection, read one response; returns (response, reader)."""
    if method is None:
        method = data.split(b" ", 1)[0].decode("latin-1")
    s = connect(port, timeout)
    send_all(s, data)
    reader = Reader(s, timeout)
    try:
        resp = read_response(reader, method)
    except BaseException:
        s.close()
        raise
    return resp, reader


def request_bytes(method: str, target: str, headers=(), body: bytes = b"",
                  version: str = "HTTP/1.1", host: str | None = None) -> bytes:
    """Build a request; ``host`` defaults to the authority of an absolute-form target."""
    lines = [f"{method} {target} {version}"]
    if host is None:
        m = re.match(r"^[a-z]+://([^/]+)", target)
        host = m.group(1) if m else None
    if host is not None and host != "":
        lines.append(f"Host: {host}")
    for k, v in headers:
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# MARK: - curl and Python clients

@dataclass
class CurlResult:
    rc: int
    status: int
    blocks: list          # [(status_line, [(name, value)])] in order, incl. CONNECT and 1xx
    body: bytes
    stderr: str
    write_out: str

    @property
    def headers(self) -> list:
        return self.blocks[-1][1] if self.blocks else []

    @property
    def is_http2(self) -> bool:
        """The final response came over HTTP/2 (curl's status line reads "HTTP/2 200")."""
        return bool(self.blocks) and self.blocks[-1][0].startswith("HTTP/2")

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


def _parse_curl_headers(data: bytes) -> list:
    blocks = []
    for raw in re.split(rb"\r?\n\r?\n", data):
        if not raw.strip():
            continue
        lines = raw.split(b"\n")
        lines = [ln.rstrip(b"\r") for ln in lines]
        if lines[0].startswith(b"HTTP/"):
            blocks.append((lines[0].decode("latin-1"), []))
            rest = lines[1:]
        else:  # trailers: attach to the last response
            rest = lines
        for ln in rest:
            k, _, v = ln.partition(b":")
            if blocks:
                blocks[-1][1].append((k.decode("latin-1"), v.strip().decode("latin-1")))
    return blocks


def curl(proxy: Proxy, url: str, *args: str, timeout: float = 120.0) -> CurlResult:
    """``curl -sS -x http://127.0.0.1:PORT ARGS URL``; body and headers captured."""
    with tempfile.TemporaryDirectory() as d:
        hdr, out = Path(d) / "h", Path(d) / "b"
        cmd = ["curl", "-q", "-sS", "-x", proxy.url, "-D", str(hdr), "-o", str(out),
               "-w", "%{http_code}", *args, url]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=client_env())
        blocks = _parse_curl_headers(hdr.read_bytes()) if hdr.exists() else []
        body = out.read_bytes() if out.exists() else b""
    wo = p.stdout.decode(errors="replace")
    status = int(wo[-3:]) if re.search(r"\d{3}$", wo) else 0
    return CurlResult(p.returncode, status, blocks, body, p.stderr.decode(errors="replace"), wo)


def curl_sha256(proxy: Proxy, url: str, *args: str, timeout: float = 300.0):
    """Stream curl's output through sha256 without holding it: (rc, nbytes, hexdigest, blocks)."""
    with tempfile.TemporaryDirectory() as d:
        hdr = Path(d) / "h"
        cmd = ["curl", "-q", "-sS", "-x", proxy.url, "-D", str(hdr), "-o", "-", *args, url]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=client_env())
        h = hashlib.sha256()
        n = 0
        deadline = time.monotonic() + timeout
        while True:
            chunk = p.stdout.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
            n += len(chunk)
            if time.monotonic() > deadline:
                p.kill()
                raise AssertionError("curl took too long")
        err = p.stderr.read().decode(errors="replace")
        rc = p.wait(30)
        blocks = _parse_curl_headers(hdr.read_bytes()) if hdr.exists() else []
    return rc, n, h.hexdigest(), blocks, err


def py_request(proxy: Proxy, method: str, url: str, body: bytes | None = None,
               headers: dict | None = None, timeout: float = 30.0):
    """One request through the proxy with http.client (absolute-form); (status, headers, body)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=timeout)
    try:
        conn.request(method, url, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, r.getheaders(), data
    finally:
        conn.close()


def urllib_request(proxy: Proxy, url: str, data: bytes | None = None, method: str | None = None,
                   headers: dict | None = None, timeout: float = 30.0):
    """urllib with an explicit ProxyHandler; (status, headers, body) also for 4xx/5xx."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


# MARK: - assertions shared by the test modules

def assert_envelope(rec: dict):
    assert rec.get("v") == 1 and type(rec["v"]) is int, rec
    assert isinstance(rec.get("ts"), str) and TS_RE.match(rec["ts"]), f"bad ts: {rec.get('ts')!r}"
    assert isinstance(rec.get("event"), str), rec


def assert_error_response(resp, status: int, code: str, keep_alive: bool = False):
    """The contract's error response: status, X-Lookout-Error, text/plain, Connection: close,
    body "lookout: CODE: message\\n". Works for Response and CurlResult."""
    body = resp.body
    assert resp.status == status, f"status {resp.status} != {status}; body {body[:300]!r}"
    assert resp.header("X-Lookout-Error") == code, \
        f"X-Lookout-Error {resp.header('X-Lookout-Error')!r} != {code!r}"
    assert resp.header("Content-Type") == "text/plain; charset=utf-8", resp.header("Content-Type")
    if getattr(resp, "is_http2", False):
        # RFC 9113 §8.2.2: no connection-specific fields on HTTP/2; the stream ends, not the connection.
        assert resp.header("Connection") is None, f"Connection: {resp.header('Connection')!r} on HTTP/2"
    elif not keep_alive:
        assert (resp.header("Connection") or "").lower() == "close", \
            f"Connection: {resp.header('Connection')!r}"
    text = body.decode("utf-8")
    assert re.fullmatch(rf"lookout: {re.escape(code)}: [^\n]+\n", text), f"body {text!r}"


def assert_error_summary(rec: dict, status: int | None, code: str, *, kind: str | None = None,
                         method: str | None = None, url: str | None = None, required: bool = True):
    """A failed exchange's summary. kind/method/url must equal the given values; with
    ``required=False`` they are only checked when the record has them, non-empty (e.g. when the
    request line itself could not be read)."""
    assert_envelope(rec)
    assert rec["event"] == "exchange", rec
    if status is None:
        assert "status" not in rec, rec
    else:
        assert rec.get("status") == status and type(rec["status"]) is int, rec
    err = rec.get("error")
    assert isinstance(err, dict), f"no error object: {rec}"
    assert err.get("code") == code, rec
    assert isinstance(err.get("message"), str) and err["message"], rec
    for key, want in (("kind", kind), ("method", method), ("url", url)):
        if want is not None and (required or rec.get(key) not in (None, "")):
            assert rec.get(key) == want, f"{key}: {rec.get(key)!r} != {want!r} in {rec}"
    assert type(rec.get("id")) is int and type(rec.get("conn")) is int, rec


def assert_timings(t: dict):
    assert isinstance(t, dict), t
    for k in TIMING_KEYS:
        assert k in t, f"timings_ms lacks {k}: {t}"
        assert is_number(t[k]), f"timings_ms.{k} is not a number: {t}"
        assert t[k] == -1 or t[k] >= 0, f"timings_ms.{k} negative: {t}"
    assert t["total"] >= 0, t


def assert_http_summary(rec: dict, *, method: str, url: str, status: int,
                        response_body: int | None = None, request_body: int | None = None,
                        reused: bool | None = None, upstream: str | None = None):
    """A successful plain-HTTP summary record, every field the contract fixes."""
    assert_envelope(rec)
    assert rec["event"] == "exchange"
    assert "error" not in rec, rec
    assert type(rec.get("id")) is int and type(rec.get("conn")) is int, rec
    assert re.fullmatch(r"127\.0\.0\.1:\d+", rec.get("client", "")), rec
    assert rec.get("kind") == "http", rec
    assert rec.get("method") == method, rec
    assert rec.get("url") == url, rec
    assert rec.get("http_version") == "HTTP/1.1", rec
    assert rec.get("status") == status and type(rec["status"]) is int, rec
    up = rec.get("upstream")
    assert isinstance(up, dict), rec
    if upstream is not None:
        assert up.get("address") == upstream, rec
    assert up.get("protocol") == "http/1.1", rec
    assert type(up.get("reused")) is bool, rec
    if reused is not None:
        assert up["reused"] is reused, rec
    assert_timings(rec.get("timings_ms"))
    if up["reused"]:
        assert rec["timings_ms"]["dns"] == -1 and rec["timings_ms"]["connect"] == -1, rec
    else:
        assert rec["timings_ms"]["connect"] >= 0, rec
    assert rec["timings_ms"]["tls"] == -1, rec  # plain http upstream
    b = rec.get("bytes")
    assert isinstance(b, dict), rec
    for k in HTTP_BYTES_KEYS:
        assert type(b.get(k)) is int and b[k] >= 0, f"bytes.{k}: {rec}"
    assert b["request_headers"] > 0 and b["response_headers"] > 0, rec
    if response_body is not None:
        assert b["response_body"] == response_body, rec
    if request_body is not None:
        assert b["request_body"] == request_body, rec
    assert type(rec.get("attempts")) is int and rec["attempts"] >= 1, rec
    assert rec.get("redirects") == 0 and type(rec["redirects"]) is int, rec


# MARK: - fixtures

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes several seconds")


@pytest.fixture(scope="session")
def lookout_bin() -> Path:
    env = os.environ.get("LOOKOUT_BIN")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            pytest.fail(f"$LOOKOUT_BIN={env} is not an executable file")
        return p
    if not (DEFAULT_BIN.is_file() and os.access(DEFAULT_BIN, os.X_OK)):
        pytest.skip(f"lookout is not built ({DEFAULT_BIN} missing; run `swift build`)")
    return DEFAULT_BIN


@pytest.fixture
def make_proxy(lookout_bin, tmp_path):
    made: list[Proxy] = []

    def make(config: dict | None = None, *, verbose_events: bool = False, args=(),
             listen=("127.0.0.1:0",), log_to_stdout: bool = False, start: bool = True, env=None) -> Proxy:
        p = Proxy(lookout_bin, tmp_path / f"proxy{len(made)}", config or {}, verbose_events, args,
                  listen=listen, log_to_stdout=log_to_stdout)
        p.extra_env = env or {}
        made.append(p)
        return p.start() if start else p

    yield make
    problems = []
    for p in made:
        try:
            p.finish()
        except AssertionError as e:
            problems.append(f"proxy {p.workdir.name}: {e}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def proxy(make_proxy) -> Proxy:
    return make_proxy()


@pytest.fixture(scope="session")
def origin():
    with origins.HTTPOrigin() as o:
        yield o


@pytest.fixture(scope="session")
def origin_cert(tmp_path_factory):
    return origins.generate_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    """The test PKI of tls_pki: root, intermediate and the leaves the TLS suites need."""
    from tls_pki import PKI
    return PKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def tls_origin(origin_cert):
    with origins.HTTPOrigin(tls=origin_cert) as o:
        yield o


@pytest.fixture
def raw_origin():
    """``raw_origin("reset_mid_body")`` -> a started RawOrigin, stopped after the test."""
    started = []

    def make(name: str) -> origins.RawOrigin:
        o = origins.RawOrigin(origins.BEHAVIORS[name]).start()
        started.append(o)
        return o

    yield make
    for o in started:
        o.stop()
