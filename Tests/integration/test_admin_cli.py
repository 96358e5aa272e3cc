"""The proxy's own endpoints (/ and /healthz) and the command line (--version, config check, run)."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from conftest import (Reader, assert_envelope, client_env, connect, curl, raw_exchange, read_response,
                      request_bytes, to_yaml)


def admin_get(proxy, path: str, extra=b""):
    data = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n".encode() + extra + b"\r\n"
    return raw_exchange(proxy.port, data)


def assert_admin_summary(rec, status, path):
    assert_envelope(rec)
    assert rec["event"] == "exchange" and rec.get("kind") == "admin", rec
    assert rec.get("method") == "GET" and rec.get("status") == status, rec
    assert isinstance(rec.get("url"), str) and rec["url"].endswith(path), rec
    assert type(rec.get("id")) is int and type(rec.get("conn")) is int, rec


def test_healthz(proxy):
    resp, reader = admin_get(proxy, "/healthz")
    assert resp.status == 200 and resp.body == b"ok\n"
    assert resp.header("X-Lookout-Error") is None
    assert_admin_summary(proxy.only_summary(), 200, "/healthz")
    assert "error" not in proxy.summaries()[0]


def test_healthz_keep_alive(proxy):
    s = connect(proxy.port)
    r = Reader(s, 10)
    for _ in range(3):
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
        assert read_response(r).body == b"ok\n"
    recs = proxy.summaries(3)
    assert len({x["conn"] for x in recs}) == 1 and len({x["id"] for x in recs}) == 3


def test_status_page(proxy):
    resp, _ = admin_get(proxy, "/")
    assert resp.status == 200
    assert (resp.header("Content-Type") or "").startswith("text/plain")
    text = resp.body.decode()
    assert "0.1.0" in text, text
    assert "uptime" in text.lower() and "connections" in text.lower() and "exchanges" in text.lower(), text
    assert_admin_summary(proxy.only_summary(), 200, "/")


def test_status_page_with_curl_direct(proxy):
    p = subprocess.run(["curl", "-q", "-sS", "-w", "\n%{http_code}", f"{proxy.url}/"],
                       capture_output=True, env=client_env(), timeout=20)
    assert p.returncode == 0 and p.stdout.endswith(b"\n200"), p
    assert b"0.1.0" in p.stdout


def test_version(lookout_bin):
    p = subprocess.run([str(lookout_bin), "--version"], capture_output=True, timeout=20)
    assert p.returncode == 0
    assert re.fullmatch(rb"lookout 0\.1\.0 \(OpenSSL 3\.\d+\.\d+, nghttp2 1\.52\.\d+\)\n", p.stdout), p.stdout


# MARK: - config check

FULL_CONFIG = """\
listen: ["127.0.0.1:8080", "[::1]:8080"]
state_dir: ~/.lookout
event_loops: 0
event_loop_spin_us: 50
max_connections: 4096
limits:
  max_request_line_bytes: 8192
  max_header_bytes: 65536
  max_header_count: 128
  max_request_body_bytes: 0
timeouts:
  client_header: 30
  client_idle: 60
  upstream_connect: 10
  upstream_first_byte: 60
  upstream_idle: 60.5
  shutdown_grace: 10
  tls_handshake: 10
  tunnel_idle: 3600
connect:
  allowed_ports: [443]
pool:
  max_idle_per_origin: 8
  idle_timeout: 30
dns:
  cache_ttl: 30
headers:
  via: true
  forwarded: false
  rules: []
log:
  path: "-"
  verbose: false
  reveal_secrets: false
  include_headers: false
  queue_limit: 65536
"""


def config_check(lookout_bin, path):
    return subprocess.run([str(lookout_bin), "config", "check", str(path)], capture_output=True,
                          text=True, timeout=20)


@pytest.mark.parametrize("text", [FULL_CONFIG, "", "# only a comment\n", "timeouts:\n  client_header: 0.5\n"],
                         ids=["every_key", "empty", "comment", "decimal"])
def test_config_check_ok(lookout_bin, tmp_path, text):
    f = tmp_path / "good.yaml"
    f.write_text(text)
    p = config_check(lookout_bin, f)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{f}: ok\n"


def test_config_check_unknown_nested_key(lookout_bin, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text('listen: ["127.0.0.1:0"]\ntimeouts:\n  client_header: 5\n  bogus: 3\n')
    p = config_check(lookout_bin, f)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert re.fullmatch(rf"{re.escape(str(f))}:4:\d+: timeouts\.bogus: unknown key", lines[0]), lines[0]


def test_config_check_unknown_top_level_key(lookout_bin, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("max_connections: 10\nbogus_top: 1\n")
    p = config_check(lookout_bin, f)
    assert p.returncode == 1
    assert re.fullmatch(rf"{re.escape(str(f))}:2:1: bogus_top: unknown key\n", p.stderr), p.stderr


def test_config_check_reports_every_error(lookout_bin, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("log:\n  verbose: true\n  nope: 1\nlimits:\n  also_nope: 2\n")
    p = config_check(lookout_bin, f)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 2, p.stderr
    assert lines[0].startswith(f"{f}:3:") and "log.nope" in lines[0], lines
    assert lines[1].startswith(f"{f}:5:") and "limits.also_nope" in lines[1], lines


def test_config_check_wrong_type(lookout_bin, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("max_connections: lots\n")
    p = config_check(lookout_bin, f)
    assert p.returncode == 1
    assert re.match(rf"{re.escape(str(f))}:1:\d+: max_connections: \S", p.stderr), p.stderr


def test_config_check_missing_file(lookout_bin, tmp_path):
    p = config_check(lookout_bin, tmp_path / "absent.yaml")
    assert p.returncode != 0
    assert "absent.yaml" in p.stderr


def test_run_refuses_a_bad_config(lookout_bin, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("timeouts:\n  bogus: 3\n")
    p = subprocess.run([str(lookout_bin), "run", "--config", str(f), "--listen", "127.0.0.1:0",
                        "--log", str(tmp_path / "log")], capture_output=True, text=True, timeout=20)
    assert p.returncode != 0
    assert "timeouts.bogus" in p.stderr


# MARK: - run options

def test_multiple_listeners(make_proxy, origin):
    p = make_proxy(args=["--listen", "127.0.0.1:0"])
    deadline = time.monotonic() + 5
    while len(p.ports) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(p.ports) == 2 and p.ports[0] != p.ports[1], p.stderr
    for port in p.ports:
        resp, _ = raw_exchange(port, request_bytes("GET", origin.url("/fixed/4")))
        assert resp.status == 200 and resp.body == b"\x00\x01\x02\x03"


def test_listen_from_config_file(make_proxy, origin):
    p = make_proxy({"listen": ["127.0.0.1:0"]}, listen=())
    resp, _ = raw_exchange(p.port, request_bytes("GET", origin.url("/fixed/4")))
    assert resp.status == 200


POLICY_CONFIG = """\
redirects:
  rules:
    - hosts: ["**.example.com"]
      follow: true
      max_hops: 5
      allow_downgrade: false
      allow_cross_host: true
      rewrite:
        - from: "http://old.example.com/"
          to: "https://new.example.com/"
retry:
  rules:
    - hosts: ["**"]
      limit: 2
      methods: [GET, HEAD, OPTIONS, PUT, DELETE]
      statuses: [502, 503, 504]
      errors: [upstream_connect_failed, upstream_connect_timeout, upstream_closed]
      backoff: {base: 0.2, multiplier: 2, max: 5, jitter: true}
      retry_after: true
      max_retry_after: 30
      replay_body_bytes: 10485760
"""


def test_config_check_redirect_and_retry_rules(lookout_bin, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(POLICY_CONFIG)
    p = config_check(lookout_bin, good)
    assert p.returncode == 0 and p.stdout == f"{good}: ok\n", p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(POLICY_CONFIG.replace("max_hops: 5", "max_hops: many")
                   .replace("statuses: [502, 503, 504]", "statuses: [502, 200]")
                   .replace("upstream_closed]", "upstream_gone]"))
    p = config_check(lookout_bin, bad)
    assert p.returncode == 1
    assert p.stderr.splitlines() == [
        f'{bad}:5:17: redirects.rules[0].max_hops: expected a whole number, got "many"',
        f"{bad}:16:23: retry.rules[0].statuses[1]: only 4xx and 5xx responses can be retried",
        f'{bad}:17:67: retry.rules[0].errors[2]: "upstream_gone" is not a retryable error code (one of '
        "upstream_dns_failed, upstream_connect_failed, upstream_connect_timeout, upstream_first_byte_timeout, "
        "upstream_idle_timeout, upstream_closed, upstream_malformed_response, upstream_tls_handshake_failed, "
        "upstream_tls_handshake_timed_out)",
    ], p.stderr
