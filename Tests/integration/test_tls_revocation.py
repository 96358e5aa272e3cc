"""The revocation evaluator end to end: a test CA made with `openssl ca`, OCSP responses made
with `openssl ocsp`, a CRL made with `openssl ca -gencrl`, and `openssl s_server` origins that
staple (or don't) -- Lookout forwarding absolute-form https:// requests to them."""

import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import assert_error_response, assert_error_summary, free_port, raw_exchange, request_bytes
from tls_pki import CA

class RevocationPKI:
    """A root CA, a good leaf, a revoked leaf, OCSP responses for both, and the CA's CRL; and a
    second CA's (empty) CRL."""

    def __init__(self, folder: Path):
        self.ca = CA(folder / "root", "Lookout Revocation Test Root")
        self.good = self.ca.issue("good")
        self.revoked = self.ca.issue("revoked")
        self.ca.revoke(self.revoked)
        self.crl = self.ca.crl()
        self.good_ocsp = self.ca.ocsp_response(self.good, "good")
        self.revoked_ocsp = self.ca.ocsp_response(self.revoked, "revoked")
        self.other_crl = CA(folder / "other", "Another Root").crl()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """This module's own CA (it revokes certificates), in place of conftest's shared PKI."""
    return RevocationPKI(tmp_path_factory.mktemp("revocation"))


class SServer:
    """`openssl s_server -www` on 127.0.0.1, optionally stapling an OCSP response."""

    def __init__(self, leaf, staple: Path | None):
        self.port = free_port()
        argv = ["openssl", "s_server", "-accept", f"127.0.0.1:{self.port}", "-www", "-quiet",
                "-cert", str(leaf.cert), "-key", str(leaf.key)]
        if staple:
            argv += ["-status_file", str(staple)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"s_server did not start: {self.proc.stderr.read().decode()}")
                time.sleep(0.05)

    def close(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def s_server(pki):
    servers = []

    def start(leaf, staple: Path | None = None) -> SServer:
        servers.append(SServer(leaf, staple))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def revocation_proxy(make_proxy, pki, crl_files=()):
    rule = {"evaluators": ["default", "revocation"]}
    if crl_files:
        rule["crl_files"] = list(crl_files)
    return make_proxy({"trust": {"system_roots": False, "ca_files": [str(pki.ca.cert)], "default": rule}})


def fetch(proxy, port):
    url = f"https://localhost:{port}/"
    resp, reader = raw_exchange(proxy.port, request_bytes("GET", url, headers=[("Connection", "close")]))
    reader.sock.close() if hasattr(reader, "sock") else None
    return resp, url


def test_good_stapled_response_passes(make_proxy, pki, s_server):
    origin = s_server(pki.good, staple=pki.good_ocsp)
    proxy = revocation_proxy(make_proxy, pki)
    resp, url = fetch(proxy, origin.port)
    assert resp.status == 200, resp.body[:300]
    assert b"s_server" in resp.body  # the -www status page
    rec = proxy.only_summary(url=url)
    trust = rec["upstream"]["tls"]["trust"]
    assert trust["evaluator"] == "composite(default, revocation)"
    assert trust["result"] == "passed", trust


def test_revoked_stapled_response_is_refused(make_proxy, pki, s_server):
    origin = s_server(pki.revoked, staple=pki.revoked_ocsp)
    proxy = revocation_proxy(make_proxy, pki)
    resp, url = fetch(proxy, origin.port)
    assert_error_response(resp, 502, "server_trust_evaluation_failed")
    assert b"revoked: the stapled OCSP response says CN=localhost is revoked (keyCompromise)" in resp.body
    rec = proxy.only_summary(url=url)
    assert_error_summary(rec, 502, "server_trust_evaluation_failed", url=url)
    assert rec["error"]["message"].startswith("revoked: "), rec
    assert rec["upstream"]["tls"]["trust"]["reason"] == "revoked", rec


@pytest.mark.parametrize("staple, why", [
    (None, "the server stapled no OCSP response"),
    ("revoked_ocsp", "the stapled OCSP response does not cover CN=localhost"),  # another certificate's
])
def test_no_usable_answer_is_revocation_unavailable(make_proxy, pki, s_server, staple, why):
    origin = s_server(pki.good, staple=getattr(pki, staple) if staple else None)
    proxy = revocation_proxy(make_proxy, pki)
    resp, url = fetch(proxy, origin.port)
    assert_error_response(resp, 502, "server_trust_evaluation_failed")
    rec = proxy.only_summary(url=url)
    assert rec["upstream"]["tls"]["trust"]["reason"] == "revocation_unavailable", rec
    assert why in rec["error"]["message"], rec


def test_crl_answers_without_stapling(make_proxy, pki, s_server):
    proxy = revocation_proxy(make_proxy, pki, crl_files=[str(pki.crl)])
    good = s_server(pki.good)
    resp, url = fetch(proxy, good.port)
    assert resp.status == 200, resp.body[:300]
    assert proxy.only_summary(url=url)["upstream"]["tls"]["trust"]["result"] == "passed"
    revoked = s_server(pki.revoked)
    resp, url = fetch(proxy, revoked.port)
    assert_error_response(resp, 502, "server_trust_evaluation_failed")
    rec = proxy.only_summary(url=url)
    assert rec["upstream"]["tls"]["trust"]["reason"] == "revoked", rec
    assert "the CRL from CN=Lookout Revocation Test Root lists CN=localhost" in rec["error"]["message"], rec


def test_a_crl_from_another_issuer_is_no_answer(make_proxy, pki, s_server):
    proxy = revocation_proxy(make_proxy, pki, crl_files=[str(pki.other_crl)])
    origin = s_server(pki.good)
    resp, url = fetch(proxy, origin.port)
    assert_error_response(resp, 502, "server_trust_evaluation_failed")
    assert proxy.only_summary(url=url)["upstream"]["tls"]["trust"]["reason"] == "revocation_unavailable"


def test_crl_files_must_hold_crls(lookout_bin, pki, tmp_path):
    config = tmp_path / "lookout.yaml"
    config.write_text(
        "trust:\n  default:\n    evaluators: [default, revocation]\n"
        f"    crl_files: [\"{pki.ca.cert}\"]\n")
    done = subprocess.run([str(lookout_bin), "config", "check", str(config)], capture_output=True, text=True)
    assert done.returncode != 0
    assert f"{config}:4:17: trust.default.crl_files[0]: " in done.stderr, done.stderr
    assert "no certificate revocation list" in done.stderr, done.stderr
