"""`Upgrade: h2c` (RFC 7540 §3.2) on the cleartext proxy port: Lookout answers 101 itself and the
connection goes on as HTTP/2, each stream an exchange of its own — routed, policed, recorded and
decoded as any other. curl's `--http2` and a raw `h2` client are the peers; requests that may not
upgrade stay HTTP/1.1, and malformed streams are reset with PROTOCOL_ERROR and recorded."""

from __future__ import annotations

import base64
import json
import re
import subprocess

import pytest

from conftest import client_env, curl, raw_exchange, request_bytes
from h2_client import H2CClient
from test_messages_streams import SSE, Delivery, ScriptedStream, assert_timing

PROTOCOL_ERROR = 1


def curl_versions(proxy, *urls: str) -> tuple[list[str], bytes]:
    """curl --http2 through the proxy: the HTTP version of each answer, and the bodies."""
    p = subprocess.run(["curl", "-q", "-sS", "--http2", "-x", proxy.url, "-w", "~~%{http_version}~~", *urls],
                       capture_output=True, timeout=60, env=client_env())
    assert p.returncode == 0, p.stderr
    out = p.stdout
    return [v.decode() for v in re.findall(rb"~~([0-9.]+)~~", out)], out


def test_curl_upgrades_and_every_request_goes_over_http2(proxy, origin):
    versions, out = curl_versions(proxy, origin.url("/echo"), origin.url("/echo?second"), origin.url("/status/404"))
    assert versions == ["2", "2", "2"], out
    first = json.loads(out.split(b"~~2~~")[0])
    names = {name.lower() for name, _ in first["headers"]}
    assert not names & {"upgrade", "http2-settings", "connection", "proxy-connection"}, first["headers"]
    records = sorted(proxy.summaries(3), key=lambda r: r["stream_id"])
    assert [r["stream_id"] for r in records] == [1, 3, 5] and len({r["conn"] for r in records}) == 1, records
    assert [r["status"] for r in records] == [200, 200, 404]
    assert all(r["http_version"] == "HTTP/2" and r["kind"] == "http" for r in records), records
    assert records[0]["upgrade"] == "h2c" and "upgrade" not in records[1], records
    assert records[1]["url"] == origin.url("/echo?second")


def test_streams_name_their_origin_in_either_form(proxy, origin):
    client = H2CClient(proxy.port, origin.url("/echo?upgraded"))
    try:
        assert client.upgraded, client.upgrade_head
        assert client.response(1).status == 200
        origin_form = client.request("/echo?origin-form")
        absolute = client.request(origin.url("/echo?absolute"))
        assert client.response(origin_form).status == 200 and client.response(absolute).status == 200
        assert json.loads(client.responses[absolute].body)["target"] == "/echo?absolute"
    finally:
        client.close()
    urls = {r["url"] for r in proxy.summaries(3)}
    assert urls == {origin.url("/echo?upgraded"), origin.url("/echo?origin-form"), origin.url("/echo?absolute")}


@pytest.mark.parametrize("fields, body, reason", [
    ([("connection", "keep-alive")], None, "connection-specific field connection"),
    ([("X-Upper", "1")], None, "invalid field name"),
    ([("te", "gzip")], None, "connection-specific field te"),
    ([("content-length", "10")], b"short", "5 bytes of DATA for a content-length of 10"),
    ([("content-length", "2")], b"longer", "more DATA than its content-length"),
    ([("x-a", " padded")], None, "whitespace around its value"),
])
def test_malformed_streams_are_reset_and_recorded(proxy, origin, fields, body, reason):
    client = H2CClient(proxy.port, origin.url("/echo"))
    try:
        assert client.upgraded and client.response(1).status == 200
        bad = client.request("/echo?bad", method="POST" if body else "GET", headers=fields, body=body)
        assert client.response(bad).reset == PROTOCOL_ERROR
        good = client.request("/echo?after")
        assert client.response(good).status == 200, "the connection goes on"
    finally:
        client.close()
    refused = proxy.summaries(1, where=lambda r: r.get("error"))[0]
    assert refused["error"]["code"] == "malformed_request" and reason in refused["error"]["message"], refused
    assert refused["stream_id"] == bad and refused["http_version"] == "HTTP/2"


def test_pseudo_field_after_a_regular_one_is_malformed(proxy, origin):
    client = H2CClient(proxy.port, origin.url("/echo"))
    try:
        assert client.upgraded and client.response(1).status == 200
        stream = client.conn.get_next_available_stream_id()
        client.conn.send_headers(stream, [(":method", "GET"), ("x-first", "1"), (":scheme", "http"),
                                          (":authority", client.authority), (":path", "/echo")], end_stream=True)
        client.responses[stream] = type(client.responses[1])()
        client.flush()
        assert client.response(stream).reset == PROTOCOL_ERROR
    finally:
        client.close()
    refused = proxy.summaries(1, where=lambda r: r.get("error"))[0]
    assert "after a regular field" in refused["error"]["message"], refused


def test_every_stream_is_authenticated_and_checked(make_proxy, origin):
    proxy = make_proxy({"auth": {"users": ["alice:s3cret"]}, "access": {"deny_hosts": ["denied.invalid"]}})
    token = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    client = H2CClient(proxy.port, origin.url("/echo"), headers=[("Proxy-Authorization", token)])
    try:
        assert client.upgraded and client.response(1).status == 200
        missing = client.request("/echo?no-credentials")
        assert client.response(missing).status == 407
        allowed = client.request("/echo?credentials", headers=[("proxy-authorization", token)])
        assert client.response(allowed).status == 200
        denied = client.request("http://denied.invalid/", headers=[("proxy-authorization", token)])
        assert client.response(denied).status == 403
        scheme = client.request("ftp://127.0.0.1/file", headers=[("proxy-authorization", token)])
        assert client.response(scheme).status == 400
    finally:
        client.close()
    codes = {r["stream_id"]: r.get("error", {}).get("code") for r in proxy.summaries(5)}
    assert codes == {1: None, missing: "proxy_authentication_required", allowed: None,
                     denied: "destination_denied", scheme: "unsupported_scheme"}, codes
    urls = {r["stream_id"]: r["url"] for r in proxy.summaries(5)}
    assert urls[missing] == origin.url("/echo?no-credentials") and urls[denied] == "http://denied.invalid/", urls


def without_upgrade_headers(echo: bytes) -> bool:
    """Neither `Upgrade` nor a `HTTP2-Settings` that `Connection` named reached the origin."""
    names = {name.lower() for name, _ in json.loads(echo)["headers"]}
    return "upgrade" not in names and ("http2-settings" not in names or "connection" not in names)


@pytest.mark.parametrize("config, headers, body", [
    ({"http2": {"client": False}}, {}, b""),
    ({}, {"HTTP2-Settings": "not base64!"}, b""),
    ({}, {"HTTP2-Settings": "AAMAAA"}, b""),  # 4 bytes: not a SETTINGS payload (6 per setting)
    ({}, {"HTTP2-Settings": "AAIAAAAC"}, b""),  # SETTINGS_ENABLE_PUSH 2: nghttp2 refuses the values
    ({}, {"Connection": "Upgrade"}, b""),  # HTTP2-Settings not named as a connection option
    ({}, {}, b"a body"),
])
def test_requests_that_may_not_upgrade_stay_http1(make_proxy, origin, config, headers, body):
    proxy = make_proxy(config)
    fields = {"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA",
              **headers}
    if body:
        fields["Content-Length"] = str(len(body))
    resp, reader = raw_exchange(proxy.port, request_bytes("POST" if body else "GET", origin.url("/echo"), list(fields.items()),
                                                  body))
    reader.sock.close()
    assert resp.status == 200 and without_upgrade_headers(resp.body), resp.body
    record = proxy.only_summary()
    assert record["http_version"] == "HTTP/1.1" and "upgrade" not in record, record


def test_over_tls_interception_h2c_is_not_offered(make_proxy, origin):
    """An https URL through the proxy is a CONNECT, never an upgrade; plain curl without --http2
    sends no Upgrade at all: both stay what they were."""
    proxy = make_proxy({})
    r = curl(proxy, origin.url("/echo"))
    assert r.rc == 0 and r.status == 200 and not r.is_http2


def test_an_event_stream_on_an_upgraded_connection_is_decoded(make_proxy):
    stream_origin = ScriptedStream("text/event-stream", SSE)
    proxy = make_proxy({}, verbose_events=True)
    try:
        delivery = Delivery(proxy, stream_origin.url("/stream"), "--http2", "-w", "~~%{http_version}~~")
    finally:
        stream_origin.stop()
    assert delivery.rc == 0 and delivery.body == b"".join(SSE) + b"~~2~~", delivery.body
    record = proxy.only_summary(kind="http")
    assert record["upgrade"] == "h2c" and record["stream_id"] == 1
    assert record["messages"]["protocol"] == "sse"
    assert_timing(record["messages"], stream_origin, delivery, 5)
