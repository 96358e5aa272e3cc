"""The last RFC gaps, end to end with real clients: a response whose Transfer-Encoding does not end
in chunked runs until the origin closes (RFC 9112 §6.3 rule 4) and is relayed with its codings;
`CDN-Cache-Control` (RFC 9213) governs Lookout's own cache unless a rule turns it off."""

from __future__ import annotations

import gzip
import time

import pytest

from conftest import curl, raw_exchange, request_bytes
from origins import RawOrigin, ScriptedOrigin, read_head


def coded_until_close(conn, origin):
    """A gzip transfer-coded body with no chunked and no length: it ends when the connection does."""
    origin.record(read_head(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Type: text/plain\r\n\r\n")
    body = gzip.compress(b"coded until close " * 500)
    for i in range(0, len(body), 1000):
        conn.sendall(body[i:i + 1000])
        time.sleep(0.005)
    conn.close()


@pytest.fixture
def coded_origin():
    o = RawOrigin(coded_until_close).start()
    yield o
    o.stop()


@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_unknown_transfer_coding_is_read_until_close_and_relayed(make_proxy, coded_origin, version):
    proxy = make_proxy({"cache": {"enabled": True}}, verbose_events=True)
    resp, reader = raw_exchange(proxy.port, request_bytes("GET", coded_origin.url("/z"), version=version))
    reader.sock.close()
    assert resp.status == 200 and resp.complete and resp.framing == "close"
    assert gzip.decompress(resp.body) == b"coded until close " * 500
    # The codings go on to an HTTP/1.1 client, which may decode them; an HTTP/1.0 one cannot take the field.
    assert resp.header("Transfer-Encoding") == ("gzip" if version == "HTTP/1.1" else None)
    assert resp.header("Connection") == "close"
    summary = proxy.only_summary()
    assert summary["status"] == 200 and "error" not in summary, summary
    # Stored without its Transfer-Encoding, the body would be served as something else.
    [decision] = proxy.log_records(1, where=lambda e: e["event"] == "task.willCacheResponse")
    assert decision["stored"] is False and decision["reason"] == "transfer_coding", decision


def test_curl_decodes_the_relayed_transfer_coding(make_proxy, coded_origin):
    proxy = make_proxy()
    r = curl(proxy, coded_origin.url("/z"))
    assert r.rc == 0 and r.status == 200 and r.body == b"coded until close " * 500, r.stderr


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        yield o


def test_cdn_cache_control_governs_the_cache(make_proxy, site):
    site.route("/long", (200, {"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=600"}, b"long"))
    site.route("/short", (200, {"Cache-Control": "max-age=600", "CDN-Cache-Control": "max-age=0",
                                "Expires": "Thu, 01 Jan 2099 00:00:00 GMT"}, b"short"))
    site.route("/nostore", (200, {"Cache-Control": "max-age=600", "CDN-Cache-Control": "no-store"}, b"nostore"))
    site.route("/invalid", (200, {"Cache-Control": "max-age=600", "CDN-Cache-Control": "max-age=600, &&&"}, b"x"))
    proxy = make_proxy({"cache": {"enabled": True}}, verbose_events=True)
    for path in ("/long", "/short", "/nostore", "/invalid"):
        for _ in range(2):
            r = curl(proxy, site.url(path))
            assert r.status == 200
            # Forwarded as it came: the next cache may be a CDN too.
            assert r.header("CDN-Cache-Control") is not None
    assert len(site.requests_for("/long")) == 1      # CDN-Cache-Control wins over no-store
    assert len(site.requests_for("/short")) == 2     # max-age=0 wins over Cache-Control and Expires
    assert len(site.requests_for("/nostore")) == 2
    assert len(site.requests_for("/invalid")) == 1   # an invalid field is ignored: Cache-Control applies
    hit = [s for s in proxy.summaries(8) if s["url"] == site.url("/long")][1]
    assert hit["cache"]["status"] == "hit" and 590 <= hit["cache"]["ttl"] <= 600, hit


def test_a_rule_can_ignore_cdn_cache_control(make_proxy, site):
    site.route("/long", (200, {"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=600"}, b"long"))
    proxy = make_proxy({"cache": {"enabled": True, "rules": [{"hosts": ["127.0.0.1"], "cdn_cache_control": False}]}},
                       verbose_events=True)
    for _ in range(2):
        assert curl(proxy, site.url("/long")).body == b"long"
    assert len(site.requests_for("/long")) == 2
    reasons = [e.get("reason") for e in proxy.log_records(2, where=lambda e: e["event"] == "task.willCacheResponse")]
    assert reasons == ["no_store", "no_store"], reasons

