"""Upstream client certificates (trust.rules[i].client_certificate / client_key) against a real
`openssl s_server -Verify 1` on 127.0.0.1: accepted, refused (a certificate its CA did not sign,
none at all), intercepted, and the checks `lookout config check` makes."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import assert_error_response, curl, free_port, raw_exchange, request_bytes


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def mtls_pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("mtls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", str(d / "ca-key.pem"), "-out", str(d / "ca.pem"), "-days", "2",
            "-subj", "/CN=Lookout Test Client CA")
    openssl("req", *ec, "-keyout", str(d / "client-key.pem"), "-out", str(d / "client.csr"), "-subj", "/CN=lookout-client")
    openssl("x509", "-req", "-in", str(d / "client.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca-key.pem"),
            "-CAcreateserial", "-out", str(d / "client.pem"), "-days", "2")
    openssl("req", "-x509", *ec, "-keyout", str(d / "stranger-key.pem"), "-out", str(d / "stranger.pem"), "-days", "2",
            "-subj", "/CN=stranger")
    openssl("req", "-x509", *ec, "-keyout", str(d / "server-key.pem"), "-out", str(d / "server.pem"), "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
    for key in d.glob("*key.pem"):
        key.chmod(0o600)
    return d


@pytest.fixture
def mtls_server(mtls_pki):
    """openssl s_server asking for (and requiring) a client certificate signed by the test CA."""
    port = free_port()
    proc = subprocess.Popen(
        ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", str(mtls_pki / "server.pem"),
         "-key", str(mtls_pki / "server-key.pem"), "-Verify", "1", "-CAfile", str(mtls_pki / "ca.pem"),
         "-verify_return_error", "-www", "-quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield port
    proc.kill()
    proc.wait(5)


def mtls_config(pki: Path, certificate="client.pem", key="client-key.pem", **extra):
    rule = {"hosts": ["127.0.0.1"], "ca_files": [str(pki / "server.pem")]}
    if certificate:
        rule.update({"client_certificate": str(pki / certificate), "client_key": str(pki / key)})
    return {"trust": {"rules": [rule]}, **extra}


def get(proxy, port):
    return raw_exchange(proxy.port, request_bytes("GET", f"https://127.0.0.1:{port}/", [("Connection", "close")]))[0]


def test_the_certificate_is_sent_when_the_origin_asks(make_proxy, mtls_pki, mtls_server):
    proxy = make_proxy(mtls_config(mtls_pki))
    resp = get(proxy, mtls_server)
    assert resp.status == 200, resp.body[:300]
    tls = proxy.only_summary()["upstream"]["tls"]
    assert tls["client_certificate"]["subject"] == "CN=lookout-client", tls
    fingerprint = subprocess.run(["openssl", "x509", "-in", str(mtls_pki / "client.pem"), "-noout", "-fingerprint",
                                  "-sha256"], capture_output=True, text=True, check=True).stdout.strip().split("=", 1)[1]
    assert tls["client_certificate"]["sha256"] == fingerprint, tls


def test_a_certificate_the_origin_refuses_is_a_handshake_failure(make_proxy, mtls_pki, mtls_server):
    proxy = make_proxy(mtls_config(mtls_pki, "stranger.pem", "stranger-key.pem"))
    resp = get(proxy, mtls_server)
    assert_error_response(resp, 502, "upstream_tls_handshake_failed")
    assert "alert unknown ca" in resp.body.decode(), resp.body
    rec = proxy.only_summary()
    assert rec["error"]["code"] == "upstream_tls_handshake_failed"


def test_no_certificate_for_an_origin_that_requires_one(make_proxy, mtls_pki, mtls_server):
    proxy = make_proxy(mtls_config(mtls_pki, certificate=None))
    resp = get(proxy, mtls_server)
    assert_error_response(resp, 502, "upstream_tls_handshake_failed")
    assert "certificate required" in resp.body.decode(), resp.body
    assert proxy.only_summary()["upstream"]["tls"]["client_certificate"] is None  # asked for, none sent


def test_intercepted_exchanges_send_it_too(make_proxy, mtls_pki, mtls_server):
    proxy = make_proxy(mtls_config(mtls_pki, interception={"hosts": ["127.0.0.1"]},
                                   connect={"allowed_ports": [mtls_server]}))
    r = curl(proxy, f"https://127.0.0.1:{mtls_server}/", "--cacert", str(proxy.workdir / "state" / "ca.pem"))
    assert r.status == 200, r
    tls = proxy.only_summary(kind="intercepted")["upstream"]["tls"]
    assert tls["client_certificate"]["subject"] == "CN=lookout-client", tls


def config_check(lookout_bin, path):
    return subprocess.run([str(lookout_bin), "config", "check", str(path)], capture_output=True, text=True, timeout=20)


def test_config_check_verifies_the_pair(lookout_bin, mtls_pki, tmp_path):
    f = tmp_path / "c.yaml"
    rule = '  rules:\n    - hosts: ["mtls.example.com"]\n'
    f.write_text("trust:\n" + rule + f'      client_certificate: "{mtls_pki / "client.pem"}"\n'
                 f'      client_key: "{mtls_pki / "stranger-key.pem"}"\n')
    p = config_check(lookout_bin, f)
    assert p.returncode == 1 and f"{f}:5:" in p.stderr and "does not belong to the certificate" in p.stderr, p.stderr
    f.write_text("trust:\n" + rule + f'      client_certificate: "{mtls_pki / "client.pem"}"\n')
    p = config_check(lookout_bin, f)
    assert p.returncode == 1 and "client_certificate and client_key go together" in p.stderr, p.stderr
    open_key = tmp_path / "open-key.pem"
    open_key.write_bytes((mtls_pki / "client-key.pem").read_bytes())
    open_key.chmod(0o644)
    f.write_text("trust:\n" + rule + f'      client_certificate: "{mtls_pki / "client.pem"}"\n'
                 f'      client_key: "{open_key}"\n')
    p = config_check(lookout_bin, f)
    assert p.returncode == 0, p.stderr
    assert "warning" in p.stderr and "chmod 600" in p.stderr, p.stderr
