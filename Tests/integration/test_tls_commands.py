"""`lookout ca init|export` and `lookout pin`, checked against the openssl CLI."""

import os
import re
import stat
import subprocess

import pytest

import origins
from tls_pki import spki_pin


def run(lookout_bin, *args, timeout=30):
    return subprocess.run([str(lookout_bin), *args], capture_output=True, timeout=timeout)


def pins_in(output: bytes) -> list[str]:
    return re.findall(r"^    pin:\s+(sha256/\S+)$", output.decode(), flags=re.M)


def test_pin_cert_agrees_with_openssl(lookout_bin, pki):
    for leaf in (pki.good, pki.self_signed):
        done = run(lookout_bin, "pin", "--cert", str(leaf.cert))
        assert done.returncode == 0, done.stderr
        assert pins_in(done.stdout) == [leaf.pin], done.stdout.decode()
        assert leaf.pin == spki_pin(leaf.cert)
        assert f'pins: ["{leaf.pin}"]' in done.stdout.decode()


def test_pin_cert_reads_bundles_and_der(lookout_bin, pki, tmp_path):
    done = run(lookout_bin, "pin", "--cert", str(pki.good.fullchain))
    assert pins_in(done.stdout) == [pki.good.pin, pki.intermediate.pin], done.stdout.decode()
    assert "holds 2 certificates" in done.stdout.decode()
    der = tmp_path / "leaf.der"
    subprocess.run(["openssl", "x509", "-in", str(pki.good.cert), "-outform", "der", "-out", str(der)], check=True)
    done = run(lookout_bin, "pin", "--cert", str(der))
    assert pins_in(done.stdout) == [pki.good.pin], done.stdout.decode()


def test_pin_cert_refuses_a_file_that_is_not_a_certificate(lookout_bin, tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("hello\n")
    done = run(lookout_bin, "pin", "--cert", str(junk))
    assert done.returncode == 1
    assert "junk.pem" in done.stderr.decode() and b"Fatal error" not in done.stderr


def test_pin_host_prints_the_presented_chain(lookout_bin, pki):
    with origins.HTTPOrigin(tls=pki.good.tls) as origin:
        done = run(lookout_bin, "pin", f"localhost:{origin.port}")
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode()
        assert pins_in(done.stdout) == [pki.good.pin, pki.intermediate.pin], text
        assert "subject:  CN=localhost" in text and "issuer:   CN=Lookout Test Intermediate" in text, text
        assert "names:    DNS:localhost, IP:127.0.0.1" in text, text
        assert "not verified" in text
        # An IP literal works too (no SNI is sent for it).
        done = run(lookout_bin, "pin", f"127.0.0.1:{origin.port}")
        assert pins_in(done.stdout) == [pki.good.pin, pki.intermediate.pin], done.stdout.decode()


def test_pin_host_failures_are_clear(lookout_bin):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run(lookout_bin, "pin", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert "Connection refused" in done.stderr.decode(), done.stderr
    done = run(lookout_bin, "pin", "::1:443")
    assert done.returncode != 0 and b"brackets" in done.stderr, done.stderr
    done = run(lookout_bin, "pin")
    assert done.returncode != 0 and b"either HOST[:PORT] or --cert FILE" in done.stderr, done.stderr


def test_pin_host_against_a_server_that_does_not_speak_tls(lookout_bin):
    with origins.HTTPOrigin() as origin:
        done = run(lookout_bin, "pin", f"127.0.0.1:{origin.port}", "--timeout", "5")
        assert done.returncode == 1
        assert "TLS handshake with 127.0.0.1" in done.stderr.decode(), done.stderr


def test_ca_init_creates_once_and_export_matches(lookout_bin, tmp_path):
    state = tmp_path / "state"
    done = run(lookout_bin, "ca", "export", "--state-dir", str(state))
    assert done.returncode == 1 and b"lookout ca init" in done.stderr, done.stderr
    assert not state.exists(), "export must not create a CA"

    done = run(lookout_bin, "ca", "init", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    assert f"created the Lookout CA: {state}/ca.pem" in done.stdout.decode()
    assert stat.S_IMODE(os.stat(state / "ca-key.pem").st_mode) == 0o600
    before = ((state / "ca.pem").read_bytes(), (state / "ca-key.pem").read_bytes())
    done = run(lookout_bin, "ca", "init", "--state-dir", str(state))
    assert "already exists" in done.stdout.decode()
    assert ((state / "ca.pem").read_bytes(), (state / "ca-key.pem").read_bytes()) == before

    pem = run(lookout_bin, "ca", "export", "--state-dir", str(state))
    assert pem.returncode == 0 and pem.stdout == before[0]
    subject = subprocess.run(["openssl", "x509", "-noout", "-subject"], input=pem.stdout, capture_output=True)
    assert b"Lookout Local CA" in subject.stdout, subject
    der = run(lookout_bin, "ca", "export", "--state-dir", str(state), "--der")
    parsed = subprocess.run(["openssl", "x509", "-inform", "der", "-outform", "pem"], input=der.stdout, capture_output=True)
    assert parsed.returncode == 0 and parsed.stdout == pem.stdout
    out = tmp_path / "ca.der"
    done = run(lookout_bin, "ca", "export", "--state-dir", str(state), "--der", "--output", str(out))
    assert done.returncode == 0 and out.read_bytes() == der.stdout


def test_ca_init_takes_state_dir_from_the_config(lookout_bin, tmp_path):
    state = tmp_path / "from-config"
    config = tmp_path / "lookout.yaml"
    config.write_text(f'state_dir: "{state}"\n')
    done = run(lookout_bin, "ca", "init", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert (state / "ca.pem").is_file() and (state / "ca-key.pem").is_file()
