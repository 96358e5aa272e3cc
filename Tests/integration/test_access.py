"""Access control (access.*): client ranges, destination host patterns, destination networks
checked on the addresses actually connected to (literal-IP spellings, IPv4-mapped IPv6, a followed
redirect), methods, and the refusal to start as an open proxy. Through the proxy with curl and raw
clients against scripted origins on 127.0.0.1."""

from __future__ import annotations

import subprocess

import pytest

from conftest import assert_error_response, assert_error_summary, curl, raw_exchange, request_bytes
from origins import ScriptedOrigin


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/", (200, {}, b"hello"))
        yield o


def test_a_client_outside_the_ranges_is_refused_even_for_connect_and_admin(make_proxy, site):
    proxy = make_proxy({"access": {"clients": ["10.0.0.0/8", "::1/128"]}})
    r = curl(proxy, site.url("/"))
    assert_error_response(r, 403, "client_not_allowed")
    resp, _ = raw_exchange(proxy.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 403, "client_not_allowed")
    resp, _ = raw_exchange(proxy.port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
    assert_error_response(resp, 403, "client_not_allowed")
    records = proxy.log_records(3, where=lambda e: e["event"] == "connection.wasRejected")
    assert {e["error"]["code"] for e in records} == {"client_not_allowed"}
    assert all(e["client"].startswith("127.0.0.1:") for e in records)
    assert site.received == []


def test_a_client_inside_the_ranges_is_served(make_proxy, site):
    proxy = make_proxy({"access": {"clients": ["loopback"]}})
    r = curl(proxy, site.url("/"))
    assert (r.status, r.body) == (200, b"hello"), r


def test_denied_and_unlisted_hosts_are_refused(make_proxy, site):
    proxy = make_proxy({"access": {"deny_hosts": ["localhost"]}})
    r = curl(proxy, f"http://localhost:{site.port}/")
    assert_error_response(r, 403, "destination_denied")
    assert "access.deny_hosts (localhost)" in r.body.decode()
    assert_error_summary(proxy.only_summary(), 403, "destination_denied")
    assert curl(proxy, site.url("/")).status == 200  # 127.0.0.1 is not denied

    allow = make_proxy({"access": {"allow_hosts": ["127.0.0.1"]}})
    r = curl(allow, f"http://localhost:{site.port}/")
    assert_error_response(r, 403, "destination_denied")
    assert "not in access.allow_hosts" in r.body.decode()
    resp, _ = raw_exchange(allow.port, request_bytes("CONNECT", f"localhost:{site.port}", host=f"localhost:{site.port}"))
    assert_error_response(resp, 403, "destination_denied")
    assert curl(allow, site.url("/")).status == 200
    assert [r.target for r in site.received] == [b"/", b"/"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0x7f000001", "2130706433", "[::ffff:127.0.0.1]", "127.1"])
def test_a_denied_network_is_refused_however_the_address_is_written(make_proxy, site, host):
    proxy = make_proxy({"access": {"deny_networks": ["loopback"]}})
    r = curl(proxy, f"http://{host}:{site.port}/")
    assert_error_response(r, 403, "destination_network_denied")
    assert "in loopback (access.deny_networks)" in r.body.decode(), r.body
    assert_error_summary(proxy.only_summary(), 403, "destination_network_denied")
    assert site.received == []


def test_a_connect_into_a_denied_network_is_refused(make_proxy, site):
    proxy = make_proxy({"access": {"deny_networks": ["127.0.0.0/8"]}, "connect": {"allowed_ports": [site.port]}})
    resp, _ = raw_exchange(proxy.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 403, "destination_network_denied")
    assert_error_summary(proxy.only_summary(), 403, "destination_network_denied", kind="tunnel")


def test_a_followed_redirect_into_a_denied_network_is_refused_at_that_hop(make_proxy, site):
    site.route("/away", (302, {"Location": f"http://127.0.0.2:{site.port}/inside"}, b""))
    proxy = make_proxy({"access": {"deny_networks": ["127.0.0.2/32"]},
                        "redirects": {"rules": [{"hosts": ["127.0.0.1", "127.0.0.2"], "follow": True}]}})
    r = curl(proxy, site.url("/away"))
    assert_error_response(r, 403, "destination_network_denied")
    rec = proxy.only_summary()
    assert_error_summary(rec, 403, "destination_network_denied")
    assert rec["attempts"] == 2 and rec["redirects"] == 1, rec
    assert [r.target for r in site.received] == [b"/away"]


def test_a_method_not_listed_gets_405_with_allow(make_proxy, site):
    proxy = make_proxy({"access": {"methods": ["GET", "HEAD"]}})
    r = curl(proxy, site.url("/"), "-X", "POST", "-d", "x")
    assert_error_response(r, 405, "method_not_allowed")
    assert r.header("Allow") == "GET, HEAD", r.headers
    resp, _ = raw_exchange(proxy.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 405, "method_not_allowed")
    assert curl(proxy, site.url("/")).status == 200
    assert [r.method for r in site.received] == ["GET"]


def test_refuses_to_start_as_an_open_proxy(lookout_bin, tmp_path):
    config = tmp_path / "open.yaml"
    config.write_text(f'listen: ["0.0.0.0:0"]\nstate_dir: "{tmp_path / "state"}"\n')
    check = subprocess.run([str(lookout_bin), "config", "check", str(config)], capture_output=True, text=True, timeout=20)
    assert check.returncode == 1
    assert f"{config}:1:" in check.stderr and "set access.clients" in check.stderr, check.stderr
    empty = tmp_path / "empty.yaml"
    empty.write_text(f'state_dir: "{tmp_path / "state"}"\n')
    run = subprocess.run([str(lookout_bin), "run", "--config", str(empty), "--listen", "0.0.0.0:0"],
                         capture_output=True, text=True, timeout=20)
    assert run.returncode != 0
    assert "open proxy" in run.stderr and "access.clients" in run.stderr, run.stderr
