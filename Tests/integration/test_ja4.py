"""JA4 fingerprints of the ClientHellos Lookout sees: read from a blind tunnel's first record as it
passes, and from an intercepted connection before its handshake. curl, Python's ssl and headless
Chromium; each client's JA4 is the same both ways, and equals what an independent implementation
here computes from the ClientHello the origin received."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import ssl
import struct
import subprocess
import threading

from conftest import client_env, curl, wait_until
from test_tls_intercept import ca_file, good_origin, intercepting  # noqa: F401 - the module's origin fixture

JA4_SHAPE = re.compile(r"^t1[0-3][di]\d{4}[0-9a-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$")


def ja4_of(record: bytes) -> str:
    """FoxIO's JA4 (technical_details/JA4.md), written from the document, for a whole first record."""
    grease = lambda v: (v & 0x0F0F) == 0x0A0A and (v >> 8) == (v & 0xFF)  # noqa: E731
    body = record[5:]
    assert body[0] == 1
    hello = body[4:4 + int.from_bytes(body[1:4], "big")]
    at = 2 + 32
    at += 1 + hello[at]
    suites_length = int.from_bytes(hello[at:at + 2], "big")
    suites = [int.from_bytes(hello[at + 2 + i:at + 4 + i], "big") for i in range(0, suites_length, 2)]
    at += 2 + suites_length
    at += 1 + hello[at]
    extensions, alpn, versions, signatures = [], [], [], []
    end = at + 2 + int.from_bytes(hello[at:at + 2], "big")
    at += 2
    while at < end:
        kind, length = struct.unpack(">HH", hello[at:at + 4])
        data = hello[at + 4:at + 4 + length]
        extensions.append(kind)
        if kind == 0x10:
            alpn.append(data[3:3 + data[2]].decode())
        elif kind == 0x2B:
            versions = [int.from_bytes(data[1 + i:3 + i], "big") for i in range(0, data[0], 2)]
        elif kind == 0x0D:
            signatures = [int.from_bytes(data[2 + i:4 + i], "big") for i in range(0, int.from_bytes(data[:2], "big"), 2)]
        at += 4 + length
    suites = [s for s in suites if not grease(s)]
    extensions = [e for e in extensions if not grease(e)]
    version = max([v for v in versions if not grease(v)] or [int.from_bytes(hello[:2], "big")])
    a = "t" + {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10"}[version] + ("d" if 0 in extensions else "i")
    a += f"{min(len(suites), 99):02d}{min(len(extensions), 99):02d}" + (alpn[0][0] + alpn[0][-1] if alpn else "00")
    short = lambda text: hashlib.sha256(text.encode()).hexdigest()[:12]  # noqa: E731
    b = short(",".join(sorted(f"{s:04x}" for s in suites)))
    c_text = ",".join(sorted(f"{e:04x}" for e in extensions if e not in (0, 0x10)))
    sig = [f"{s:04x}" for s in signatures if not grease(s)]
    c = short(c_text + ("_" + ",".join(sig) if sig else ""))
    return f"{a}_{b}_{c}"


class HelloCatcher:
    """A TCP origin that keeps the first TLS record each connection sends, then closes."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.records: list[bytes] = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                conn.settimeout(5)
                while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.records.append(data[:5 + int.from_bytes(data[3:5], "big")])


def python_client(proxy_port: int, port: int, cafile: str | None):
    """Python's ssl through CONNECT: one request, or just the handshake attempt."""
    sock = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
    sock.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    context = ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    try:
        tls = context.wrap_socket(sock, server_hostname="localhost")
        tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        tls.recv(65536)
        tls.close()
    except (ssl.SSLError, OSError):
        sock.close()


def test_a_blind_tunnels_first_record_gives_the_clients_ja4(make_proxy):
    catcher = HelloCatcher()
    proxy = make_proxy({"connect": {"allowed_ports": [catcher.port]}})
    curl(proxy, f"https://localhost:{catcher.port}/", "--max-time", "5")
    python_client(proxy.port, catcher.port, None)
    records = proxy.summaries(2, kind="tunnel")
    wait_until(lambda: len(catcher.records) == 2, timeout=5)
    fingerprints = [r["tls"]["client_ja4"] for r in records]
    assert fingerprints == [ja4_of(record) for record in catcher.records], (fingerprints, catcher.records)
    assert all(JA4_SHAPE.match(f) for f in fingerprints) and fingerprints[0] != fingerprints[1], "curl is not Python"
    assert fingerprints[0].startswith("t13d") and fingerprints[0][8:10] == "h2", "curl offers h2 and names localhost"
    from test_log_command import lookout_log
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--filter", f"ja4:{fingerprints[0][:10]}*", "--format", "jsonl")
    assert rc == 0 and [json.loads(line)["tls"]["client_ja4"] for line in out.splitlines()] == [fingerprints[0]]


def test_the_same_client_gives_the_same_ja4_blind_and_intercepted(make_proxy, pki, good_origin):
    blind = make_proxy({"connect": {"allowed_ports": [good_origin.port]},
                        "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]}})
    curl(blind, good_origin.url("/fixed/10"), "--cacert", str(pki.root.cert))
    python_client(blind.port, good_origin.port, str(pki.root.cert))
    intercepting_proxy = make_proxy(intercepting(pki, good_origin))
    result = curl(intercepting_proxy, good_origin.url("/fixed/10"), "--cacert", ca_file(intercepting_proxy))
    assert result.rc == 0
    python_client(intercepting_proxy.port, good_origin.port, ca_file(intercepting_proxy))
    tunnelled = [r["tls"]["client_ja4"] for r in blind.summaries(2, kind="tunnel")]
    records = intercepting_proxy.summaries(2, kind="intercepted")
    intercepted = [r["tls"]["client_ja4"] for r in records]
    assert tunnelled == intercepted, (tunnelled, intercepted)
    # The origin's ServerHello, fingerprinted on Lookout's own upstream TLS (JA4S).
    for record in records:
        tls = record["upstream"]["tls"]
        assert re.match(r"^t1[23]\d{2}[0-9a-z]{2}_[0-9a-f]{4}_[0-9a-f]{12}$", tls["ja4s"]), tls
        assert tls["ja4s"].startswith("t13" if tls["version"] == "TLSv1.3" else "t12")
        assert tls["ja4s"][5:7] == (tls.get("alpn", "00")[0] + tls.get("alpn", "00")[-1] if tls.get("alpn") else "00")


def test_chromiums_ja4_through_a_blind_tunnel(make_proxy, tmp_path):
    import pytest
    pytest.importorskip("selenium")
    from browser import start_chromium
    catcher = HelloCatcher()
    proxy = make_proxy({"connect": {"allowed_ports": [catcher.port]}, "access": {"allow_hosts": ["localhost"]}})
    browser = start_chromium(tmp_path / "downloads", proxy_port=proxy.port)
    try:
        browser.set_page_load_timeout(10)
        try:
            browser.get(f"https://localhost:{catcher.port}/")
        except Exception:
            pass  # the catcher closes after the ClientHello: the page fails, the fingerprint is taken
    finally:
        browser.quit()
    record = proxy.summaries(1, kind="tunnel", where=lambda r: r.get("url") == f"localhost:{catcher.port}")[0]
    wait_until(lambda: catcher.records, timeout=5)
    assert record["tls"]["client_ja4"] == ja4_of(catcher.records[0])
    assert re.match(r"^t13d\d{4}h2_", record["tls"]["client_ja4"]), record["tls"]
