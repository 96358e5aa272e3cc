"""SOCKS5 in (RFC 1928, RFC 1929): a `mode: socks5` listener, driven by curl, httpx with socksio,
PySocks and Chromium. What is inside the stream is handled as after a CONNECT: plain HTTP
recorded as exchanges, TLS intercepted by SNI or relayed blind. Each bad handshake gets its
reply or close and a record with its code."""

from __future__ import annotations

import socket
import struct
import subprocess

import pytest

from conftest import client_env
from test_tls_intercept import ca_file, good_origin, intercepting  # noqa: F401 - the module's origin fixture


def socks_proxy(make_proxy, config=None, users=None):
    config = dict(config or {})
    config["listen"] = ["127.0.0.1:0", {"address": "127.0.0.1:0", "mode": "socks5"}]
    if users:
        config["auth"] = {"users": users}
    proxy = make_proxy(config, listen=())
    proxy.socks_port = proxy.ports[1] if len(proxy.ports) > 1 else None
    deadline = __import__("time").monotonic() + 5
    while proxy.socks_port is None and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.02)
        proxy.socks_port = proxy.ports[1] if len(proxy.ports) > 1 else None
    return proxy


def curl(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in client_env().items() if "proxy" not in k.lower()}
    return subprocess.run(["curl", "-sS", *args], capture_output=True, text=True, timeout=60, env=env)


def test_curl_socks5_hostname_and_socks5_are_recorded_as_exchanges(make_proxy, origin):
    proxy = socks_proxy(make_proxy)
    named = curl("--socks5-hostname", f"127.0.0.1:{proxy.socks_port}", f"http://localhost:{origin.port}/fixed/10",
                 "-o", "/dev/null", "-w", "%{http_code}")
    by_address = curl("--socks5", f"127.0.0.1:{proxy.socks_port}", f"http://127.0.0.1:{origin.port}/fixed/11",
                      "-o", "/dev/null", "-w", "%{http_code}")
    assert named.stdout == "200" and by_address.stdout == "200", named.stderr + by_address.stderr
    records = proxy.summaries(2)
    assert {r["url"] for r in records} == {f"http://localhost:{origin.port}/fixed/10",
                                           f"http://127.0.0.1:{origin.port}/fixed/11"}
    assert {r["original_destination"] for r in records} == {f"localhost:{origin.port}", f"127.0.0.1:{origin.port}"}
    assert all(r["kind"] == "http" and r["capture"] == "socks5" and r["status"] == 200 for r in records)


def test_https_through_socks_is_intercepted_by_sni_or_relayed_blind(make_proxy, pki, good_origin):  # noqa: F811
    proxy = socks_proxy(make_proxy, intercepting(pki, good_origin, hosts=["localhost"]))
    url = good_origin.url("/fixed/30").replace("127.0.0.1", "localhost")
    intercepted = curl("--socks5-hostname", f"127.0.0.1:{proxy.socks_port}", "--cacert", ca_file(proxy), url,
                       "-o", "/dev/null", "-w", "%{http_code}")
    assert intercepted.stdout == "200", intercepted.stderr
    record = proxy.summaries(1, kind="intercepted")[0]
    assert record["url"] == url and record["capture"] == "socks5" and record["tls"]["client_ja4"]
    # 127.0.0.1 is not in interception.hosts: the origin's own certificate comes through.
    blind = curl("--socks5", f"127.0.0.1:{proxy.socks_port}", "--cacert", str(pki.root.cert),
                 good_origin.url("/fixed/31"), "-o", "/dev/null", "-w", "%{http_code}")
    assert blind.stdout == "200", blind.stderr
    tunnel = proxy.summaries(1, kind="tunnel")[0]
    assert tunnel["capture"] == "socks5" and tunnel["url"] == f"127.0.0.1:{good_origin.port}"
    assert tunnel["bytes"]["upstream_to_client"] > 1000


def test_httpx_and_pysocks_with_credentials(make_proxy, origin):
    proxy = socks_proxy(make_proxy, users=["alice:s3cret"])
    before = len(origin.requests)
    import httpx
    import socks
    with httpx.Client(proxy=f"socks5://alice:s3cret@127.0.0.1:{proxy.socks_port}", trust_env=False) as client:
        assert client.get(f"http://127.0.0.1:{origin.port}/fixed/4").content == bytes(range(4))
    s = socks.socksocket()
    s.set_proxy(socks.SOCKS5, "127.0.0.1", proxy.socks_port, rdns=True, username="alice", password="s3cret")
    s.settimeout(10)
    s.connect(("localhost", origin.port))
    s.sendall(b"GET /fixed/3 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(bytes(range(3)))
    assert len(proxy.summaries(2, where=lambda r: r.get("capture") == "socks5" and r["status"] == 200)) == 2
    # Wrong credentials: RFC 1929 status 1, then the close; recorded.
    with pytest.raises(httpx.ProxyError):
        with httpx.Client(proxy=f"socks5://alice:wrong@127.0.0.1:{proxy.socks_port}", trust_env=False) as client:
            client.get(f"http://127.0.0.1:{origin.port}/fixed/4")
    refused = proxy.summaries(1, where=lambda r: (r.get("error") or {}).get("code") == "socks_authentication_failed")[0]
    assert refused["capture"] == "socks5" and refused["kind"] == "tunnel"
    assert len(origin.requests) == before + 2  # nothing of the refused one was forwarded


def handshake(port: int, data: bytes, expect: int, timeout: float = 5) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while len(out) < expect and (chunk := s.recv(64)):
            out += chunk
        s.settimeout(2)
        rest = s.recv(64)  # the server closes after a refusal
    except (ConnectionResetError, socket.timeout):
        rest = b"<open>"
    s.close()
    return out + rest


def test_bad_socks_input_gets_its_reply_and_record(make_proxy, origin):
    proxy = socks_proxy(make_proxy)
    port = proxy.socks_port
    before = len(origin.requests)
    # Only username/password offered, and this listener asks for none: "no acceptable methods".
    assert handshake(port, b"\x05\x01\x02", 2) == b"\x05\xff"
    # BIND (2) and UDP ASSOCIATE (3): reply 07, command not supported.
    target = socket.inet_aton("127.0.0.1") + struct.pack("!H", origin.port)
    for command in (2, 3):
        assert handshake(port, b"\x05\x01\x00" + bytes([5, command, 0, 1]) + target, 12)[:4] == b"\x05\x00\x05\x07"
    # A request cut short, then the end of the stream.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"\x05\x01\x00\x05\x01\x00\x01\x7f")
    assert s.recv(2) == b"\x05\x00"
    s.shutdown(socket.SHUT_WR)
    assert s.recv(64) == b""
    s.close()
    # Not SOCKS5 at all (an HTTP request): closed without a reply.
    assert handshake(port, b"GET / HTTP/1.1\r\n\r\n", 1) == b""
    codes = [r["error"]["code"] for r in proxy.summaries(5, where=lambda r: r.get("error"))]
    assert sorted(codes) == sorted(["socks_no_acceptable_method", "socks_command_not_supported",
                                    "socks_command_not_supported", "socks_malformed_request", "socks_malformed_request"])
    assert len(origin.requests) == before  # nothing of them was forwarded
    # An IPv6 destination is read (and refused here as unreachable, not as malformed).
    reply = handshake(port, b"\x05\x01\x00\x05\x01\x00\x04" + socket.inet_pton(socket.AF_INET6, "::1")
                      + struct.pack("!H", origin.port) + b"GET /fixed/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 12)
    assert reply[:4] == b"\x05\x00\x05\x00"


def test_chromium_loads_a_page_through_the_socks_listener(make_proxy, origin, tmp_path):
    from browser import start_chromium
    proxy = socks_proxy(make_proxy)
    driver = start_chromium(tmp_path, proxy_port=proxy.socks_port, scheme="socks5")
    try:
        driver.get(f"http://localhost:{origin.port}/status/200")
        assert "status 200" in driver.page_source
    finally:
        driver.quit()
    record = proxy.summaries(1, where=lambda r: r.get("capture") == "socks5" and r["url"].endswith("/status/200"))[0]
    assert record["url"] == f"http://localhost:{origin.port}/status/200" and record["status"] == 200


def test_the_proxy_auto_config_names_the_socks_listener_as_the_fallback(make_proxy):
    proxy = socks_proxy(make_proxy)
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    script = opener.open(f"{proxy.url}/proxy.pac", timeout=10).read().decode()
    assert f'return "PROXY 127.0.0.1:{proxy.port}; SOCKS5 127.0.0.1:{proxy.socks_port}";' in script
