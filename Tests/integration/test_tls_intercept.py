"""TLS interception end to end: curl and Python clients CONNECT through Lookout, which
terminates their TLS with leaves from its local CA and forwards each request inside over its
own TLS connection to Python `ssl` origins (certificates from tls_pki)."""

import http.client
import json
import os
import ssl
import stat
import time

import pytest

import origins
from conftest import assert_error_response, assert_error_summary, connect, curl, curl_sha256, read_response, \
    Reader, request_bytes, send_all
from origins import RawOrigin, behave_partial_then_reset

WRONG_PIN = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


@pytest.fixture(scope="module")
def good_origin(pki):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    yield origin
    origin.stop()


def intercepting(pki, origin, hosts=("**",), **extra) -> dict:
    config = {
        "connect": {"allowed_ports": [origin.port]},
        "interception": {"hosts": list(hosts)},
        "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key].update(value)
        else:
            config[key] = value
    return config


def ca_file(proxy) -> str:
    return str(proxy.workdir / "state" / "ca.pem")


def test_curl_through_interception_is_logged_like_plain_http(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    first = f"https://localhost:{good_origin.port}/fixed/100"
    second = f"https://localhost:{good_origin.port}/echo"
    # curl puts the URL argument last: it fetches `second`, then `first`, over one connection.
    result = curl(proxy, first, "--cacert", ca_file(proxy), second)
    assert result.rc == 0, result.stderr
    recs = proxy.summaries(2, kind="intercepted")
    assert [r["url"] for r in recs] == [second, first], recs
    assert recs[0]["conn"] == recs[1]["conn"], "both requests went through one tunnel"
    for rec in recs:
        assert rec["method"] == "GET" and rec["status"] == 200, rec
        assert rec["upstream"]["tls"]["trust"]["result"] == "passed", rec
        assert rec["upstream"]["tls"]["sni"] == "localhost", rec
    assert recs[1]["bytes"]["response_body"] == 100, recs[1]
    assert f'["Host", "localhost:{good_origin.port}"]'.encode() in result.body, result.body  # /echo


def test_the_ca_is_created_in_the_state_dir_with_a_private_key(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    state = proxy.workdir / "state"
    assert stat.S_IMODE(os.stat(state / "ca-key.pem").st_mode) == 0o600
    assert (state / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert "created the Lookout CA" in proxy.stderr, proxy.stderr
    again = make_proxy(intercepting(pki, good_origin, state_dir=str(state)))
    assert "loaded the Lookout CA" in again.stderr, again.stderr


def test_python_https_through_interception(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    context = ssl.create_default_context(cafile=ca_file(proxy))
    conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context, timeout=15)
    conn.set_tunnel("localhost", good_origin.port)
    try:
        for path in ("/fixed/7", "/fixed/9"):
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.status == 200 and response.read() == origins.pattern(int(path.rsplit("/", 1)[1]))
    finally:
        conn.close()
    recs = proxy.summaries(2, kind="intercepted")
    assert [r["url"].rsplit("/", 1)[1] for r in recs] == ["7", "9"], recs


def test_an_ip_target_gets_a_leaf_for_the_ip(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    url = f"https://127.0.0.1:{good_origin.port}/fixed/5"
    result = curl(proxy, url, "--cacert", ca_file(proxy))
    assert result.rc == 0 and result.status == 200, result.stderr
    assert proxy.only_summary(kind="intercepted")["url"] == url


def test_a_client_that_does_not_trust_the_ca_is_logged_and_others_go_on(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    url = f"https://localhost:{good_origin.port}/fixed/5"
    refused = curl(proxy, url)
    assert refused.rc == 60, (refused.rc, refused.stderr)
    rec = proxy.only_summary(kind="intercepted")
    assert_error_summary(rec, 200, "client_tls_handshake_failed", method="CONNECT", url=f"localhost:{good_origin.port}")
    assert "unknown CA" in rec["error"]["message"], rec
    accepted = curl(proxy, url, "--cacert", ca_file(proxy))
    assert accepted.rc == 0 and accepted.status == 200, accepted.stderr
    proxy.summaries(1, kind="intercepted", url=url)


def connect_tunnel(proxy, origin):
    sock = connect(proxy.port)
    send_all(sock, request_bytes("CONNECT", f"localhost:{origin.port}", host=f"localhost:{origin.port}"))
    reader = Reader(sock)
    head = reader.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock, reader


def test_garbage_instead_of_a_client_hello(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin), verbose_events=True)
    sock, reader = connect_tunnel(proxy, good_origin)
    send_all(sock, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert reader.closed_by_peer(), "the proxy closes a tunnel whose client does not speak TLS"
    sock.close()
    rec = proxy.only_summary(kind="intercepted")
    assert_error_summary(rec, 200, "client_tls_handshake_failed", method="CONNECT")
    failed = proxy.log_records(1, lambda r: r["event"] == "connection.didFailClientTLSHandshake")[0]
    assert failed["conn"] == rec["conn"], failed


def test_a_client_that_stalls_mid_handshake_times_out(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, timeouts={"tls_handshake": 0.5, "shutdown_grace": 5}))
    sock, reader = connect_tunnel(proxy, good_origin)
    send_all(sock, bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]))  # the first bytes of a ClientHello
    started = time.monotonic()
    assert reader.closed_by_peer(timeout=5)
    assert time.monotonic() - started < 4
    sock.close()
    rec = proxy.only_summary(kind="intercepted")
    assert_error_summary(rec, 200, "client_tls_handshake_timed_out", method="CONNECT")


def test_hosts_not_intercepted_stay_blind_tunnels(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, hosts=["other.example"]))
    url = f"https://localhost:{good_origin.port}/fixed/5"
    result = curl(proxy, url, "--cacert", str(pki.root.cert))
    assert result.rc == 0 and result.status == 200, result.stderr
    rec = proxy.only_summary()
    assert rec["kind"] == "tunnel", rec


def pinned(pki, origin, pins, **trust) -> dict:
    rule = {"name": "pinned", "hosts": ["localhost"], "pins": pins}
    return {"trust": {"rules": [rule], **trust}}


def test_a_pinned_host_cannot_be_tunnelled_blind(make_proxy, pki, good_origin):
    config = intercepting(pki, good_origin, hosts=[])
    config["trust"].update(pinned(pki, good_origin, [pki.good.pin])["trust"])
    proxy = make_proxy(config)
    sock = connect(proxy.port)
    send_all(sock, request_bytes("CONNECT", f"localhost:{good_origin.port}", host=f"localhost:{good_origin.port}"))
    response = read_response(Reader(sock), "CONNECT")
    sock.close()
    assert_error_response(response, 403, "pinning_requires_interception")
    assert b"pinned" in response.body
    assert_error_summary(proxy.only_summary(), 403, "pinning_requires_interception", method="CONNECT")


def test_pinning_without_interception_can_be_allowed(make_proxy, pki, good_origin):
    config = intercepting(pki, good_origin, hosts=[])
    config["trust"].update(pinned(pki, good_origin, [pki.good.pin], pinning_without_interception="allow")["trust"])
    proxy = make_proxy(config)
    result = curl(proxy, f"https://localhost:{good_origin.port}/fixed/5", "--cacert", str(pki.root.cert))
    assert result.rc == 0 and result.status == 200, result.stderr
    assert proxy.only_summary()["kind"] == "tunnel"


def test_an_intercepted_pin_mismatch_is_a_502_inside_the_tunnel(make_proxy, pki, good_origin):
    config = intercepting(pki, good_origin)
    config["trust"].update(pinned(pki, good_origin, [WRONG_PIN])["trust"])
    proxy = make_proxy(config)
    url = f"https://localhost:{good_origin.port}/fixed/5"
    result = curl(proxy, url, "--cacert", ca_file(proxy))
    assert result.rc == 0, result.stderr
    assert_error_response(result, 502, "server_trust_evaluation_failed")
    assert b"pin_mismatch" in result.body
    rec = proxy.only_summary(kind="intercepted")
    assert_error_summary(rec, 502, "server_trust_evaluation_failed", url=url)
    assert rec["upstream"]["tls"]["trust"]["presented_pins"][0] == pki.good.pin, rec


def test_interception_honours_the_minimum_version(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin, tls={"minimum_version": "1.3"}))
    result = curl(proxy, f"https://localhost:{good_origin.port}/fixed/5", "--cacert", ca_file(proxy), "--tls-max", "1.2")
    assert result.rc != 0
    rec = proxy.only_summary(kind="intercepted")
    assert_error_summary(rec, 200, "client_tls_handshake_failed", method="CONNECT")
    assert "unsupported protocol" in rec["error"]["message"], rec


# MARK: - data integrity

def test_large_bodies_cross_interception_intact(make_proxy, pki, good_origin, tmp_path):
    proxy = make_proxy(intercepting(pki, good_origin))
    size = 64 << 20
    rc, count, digest, blocks, err = curl_sha256(proxy, f"https://localhost:{good_origin.port}/huge/{size}",
                                                 "--cacert", ca_file(proxy))
    assert rc == 0, err
    assert count == size and digest == origins.expected_sha256(size)
    upload = tmp_path / "upload.bin"
    with open(upload, "wb") as f:
        for piece in origins.iter_pattern(8 << 20):
            f.write(piece)
    result = curl(proxy, f"https://localhost:{good_origin.port}/echo", "--cacert", ca_file(proxy),
                  "--data-binary", f"@{upload}", "-H", "Content-Type: application/octet-stream")
    assert result.rc == 0 and result.status == 200, result.stderr
    echoed = json.loads(result.body)
    assert echoed["body_length"] == 8 << 20 and echoed["body_sha256"] == origins.expected_sha256(8 << 20), echoed
    recs = proxy.summaries(2, kind="intercepted")
    assert [r["bytes"]["response_body"] for r in recs][0] == size, recs
    assert recs[1]["bytes"]["request_body"] == 8 << 20, recs[1]


def test_an_upstream_reset_mid_body_fails_the_intercepted_client(make_proxy, pki):
    origin = RawOrigin(behave_partial_then_reset, tls=pki.good.tls).start()
    try:
        proxy = make_proxy(intercepting(pki, origin, timeouts={"upstream_idle": 5, "shutdown_grace": 5}))
        url = f"https://localhost:{origin.port}/big"
        result = curl(proxy, url, "--cacert", ca_file(proxy))
        # Partial file / receive failure; over HTTP/2 (curl's default here) the stream's reset (92).
        assert result.rc in (18, 56, 92), (result.rc, result.stderr)
        assert len(result.body) < 1_000_000
        rec = proxy.only_summary(kind="intercepted")
        assert_error_summary(rec, 200, "upstream_closed", url=url)
    finally:
        origin.stop()


def test_websocket_inside_interception_is_relayed(make_proxy, pki):
    """wss:// through an intercepted CONNECT: the switch happens inside both TLS connections and
    the bytes after the 101 are relayed and counted like a plain-HTTP switch."""
    origin = origins.RawOrigin(origins.BEHAVIORS["websocket_echo"], tls=pki.good.tls).start()
    try:
        proxy = make_proxy(intercepting(pki, origin))
        raw = connect(proxy.port)
        authority = f"localhost:{origin.port}"
        raw.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        assert Reader(raw, 10).read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200")
        context = ssl.create_default_context(cafile=ca_file(proxy))
        tls = context.wrap_socket(raw, server_hostname="localhost")
        tls.sendall(f"GET /chat HTTP/1.1\r\nHost: {authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        reader = Reader(tls, 15)
        resp = read_response(reader)
        assert resp.status == 101 and resp.header("Upgrade").lower() == "websocket", resp.head
        assert reader.read_exact(len(origins.WS_GREETING)) == origins.WS_GREETING
        payload = os.urandom(200_000)
        got = bytearray()
        for i in range(0, len(payload), 20_000):
            tls.sendall(payload[i:i + 20_000])
            got += reader.read_exact(20_000)
        assert bytes(got) == payload
        tls.close()
        rec = proxy.only_summary(kind="intercepted")
        assert rec["method"] == "GET" and rec["url"] == f"https://{authority}/chat", rec
        assert rec["status"] == 101 and rec["upgrade"] == "websocket", rec
        assert rec["upstream"]["tls"]["trust"]["result"] == "passed", rec
        assert rec["bytes"]["client_to_upstream"] == len(payload), rec
        assert rec["bytes"]["upstream_to_client"] == len(payload) + len(origins.WS_GREETING), rec
        head = origin.wait_received(1)[0].lower()
        assert b"\r\nupgrade: websocket\r\n" in head and b"\r\nconnection: upgrade\r\n" in head, head
    finally:
        origin.stop()
