"""Proxy authentication (auth.users): 407 with a Basic challenge, per RFC 9110 §11.7."""
from __future__ import annotations

import base64

from conftest import assert_error_summary, curl, raw_exchange, request_bytes

USERS = {"auth": {"users": ["alice:s3cret"]}}


def basic(pair: str) -> str:
    return "Basic " + base64.b64encode(pair.encode()).decode()


def test_request_without_credentials_gets_407_with_a_challenge(make_proxy, origin):
    p = make_proxy(USERS)
    url = origin.url("/fixed/3")
    resp, _ = raw_exchange(p.port, request_bytes("GET", url))
    assert resp.status == 407
    assert resp.header("Proxy-Authenticate") == 'Basic realm="lookout", charset="UTF-8"'
    assert resp.header("X-Lookout-Error") == "proxy_authentication_required"
    assert_error_summary(p.only_summary(), 407, "proxy_authentication_required", kind="http", method="GET", url=url)


def test_wrong_password_is_refused(make_proxy, origin):
    p = make_proxy(USERS)
    url = origin.url("/fixed/3")
    resp, _ = raw_exchange(p.port, request_bytes("GET", url, [("Proxy-Authorization", basic("alice:nope"))]))
    assert resp.status == 407


def test_valid_credentials_pass_and_are_not_forwarded_or_logged(make_proxy, origin):
    p = make_proxy({**USERS, "log": {"include_headers": True}})
    r = curl(p, origin.url("/echo?auth=1"), "--proxy-user", "alice:s3cret")
    assert r.rc == 0 and r.status == 200
    assert b"Proxy-Authorization" not in r.body and b"s3cret" not in r.body, "credentials must stay hop-by-hop"
    p.summaries(1)
    p.stop()
    assert b"s3cret" not in p.log_path.read_bytes()
    assert basic("alice:s3cret").split()[1].encode() not in p.log_path.read_bytes()


def test_connect_requires_credentials_too(make_proxy):
    p = make_proxy({**USERS, "connect": {"allowed_ports": [443]}})
    resp, _ = raw_exchange(p.port, b"CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n", method="CONNECT")
    assert resp.status == 407
    assert_error_summary(p.only_summary(), 407, "proxy_authentication_required", kind="tunnel",
                         method="CONNECT", url="127.0.0.1:443")


def test_the_proxys_own_pages_stay_open(make_proxy):
    p = make_proxy(USERS)
    resp, _ = raw_exchange(p.port, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{p.port}\r\n\r\n".encode())
    assert resp.status == 200 and resp.body == b"ok\n"
