"""HTTP/2 toward origins: https origins that pick `h2` in ALPN, and cleartext origins named in
`http2.upstream_h2c_hosts`, get one pooled connection per origin and loop that multiplexes the
exchanges of any clients (RFC 9113 §9.1). Clients speak HTTP/1.1 (absolute-form https, plain
http) or HTTP/2 (interception) on the other side. Peers: the `h2` origin in origins/h2.py (which
records what arrived and misbehaves on purpose), nghttpd, nginx, and curl/httpx clients."""

import asyncio
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from types import SimpleNamespace

import httpx
import pytest

import origins
from conftest import Reader, connect, curl, free_port, raw_exchange, request_bytes, rss_kib, wait_until
from origins import H2Origin
from origins import HOST
from test_tls_intercept import ca_file, intercepting
from test_tls_upstream import trusting


@pytest.fixture(scope="module")
def h2_origin(pki):
    origin = H2Origin(tls=pki.good.tls).start()
    yield origin
    origin.stop()


@pytest.fixture
def fresh_h2_origin(pki):
    started = []

    def make(**kw) -> H2Origin:
        origin = H2Origin(tls=pki.good.tls, **kw).start()
        started.append(origin)
        return origin

    yield make
    for origin in started:
        origin.stop()


def get(proxy, url, headers=(), method="GET", body=b""):
    """One HTTP/1.1 request through the proxy on its own connection."""
    resp, _ = raw_exchange(proxy.port, request_bytes(method, url, headers=[("Connection", "close"), *headers], body=body),
                           method=method)
    return resp


def test_absolute_https_goes_over_h2_and_reuses_the_connection(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin()
    proxy = make_proxy(trusting(pki, event_loops=1))  # the pool is per event loop
    first = get(proxy, origin.url("/fixed/1000"))
    second = get(proxy, origin.url("/fixed/20"))
    assert first.status == 200 and first.body == origins.pattern(1000), first.headers
    assert second.status == 200 and second.body == origins.pattern(20)
    # The HTTP/1.1 client got a length it can frame by.
    assert first.header("Content-Length") == "1000"
    recs = proxy.summaries(2)
    by_url = {r["url"]: r for r in recs}
    a, b = by_url[origin.url("/fixed/1000")], by_url[origin.url("/fixed/20")]
    for rec in (a, b):
        assert rec["http_version"] == "HTTP/1.1", rec
        assert rec["upstream"]["protocol"] == "h2", rec
        assert rec["upstream"]["tls"]["alpn"] == "h2", rec
    assert a["upstream"]["reused"] is False and a["upstream"]["stream_id"] == 1, a
    assert b["upstream"]["reused"] is True and b["upstream"]["stream_id"] == 3, b
    assert origin.connections == 1, "the second request was a stream on the first connection"
    assert b["bytes"]["response_body"] == 20 and b["bytes"]["request_headers"] > 0, b


def test_request_translation_pseudo_fields_and_connection_specific_fields(make_proxy, pki, h2_origin):
    proxy = make_proxy(trusting(pki))
    resp = get(proxy, h2_origin.url("/echo"), headers=[
        ("TE", "trailers, deflate"), ("Keep-Alive", "timeout=5"), ("X-Drop", "1"), ("Connection", "close, X-Drop"),
        ("Cookie", "a=1; b=2"), ("X-Kept", "yes")])
    assert resp.status == 200, resp.headers
    echoed = json.loads(resp.body)
    headers = echoed["headers"]
    names = [k for k, _ in headers]
    assert names[:4] == [":method", ":scheme", ":authority", ":path"], headers
    assert dict(headers)[":authority"] == f"localhost:{h2_origin.port}"
    assert dict(headers)[":scheme"] == "https" and dict(headers)[":path"] == "/echo"
    # RFC 9113 §8.2.2: connection-specific fields go, TE only as "trailers"; no Host beside :authority.
    for gone in ("connection", "keep-alive", "x-drop", "host", "transfer-encoding", "proxy-connection"):
        assert gone not in names, headers
    assert ["te", "trailers"] in headers and ["x-kept", "yes"] in headers, headers
    assert all(k == k.lower() for k in names)


def test_request_bodies_chunked_and_sized_arrive_whole(make_proxy, pki, h2_origin):
    proxy = make_proxy(trusting(pki))
    body = origins.pattern(300_000)
    sized = get(proxy, h2_origin.url("/echo"), method="POST", body=body,
                headers=[("Content-Length", str(len(body)))])
    assert sized.status == 200, sized.headers
    echoed = json.loads(sized.body)
    assert echoed["body_len"] == len(body) and echoed["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert ["content-length", str(len(body))] in echoed["headers"]
    # A chunked HTTP/1.1 body is DATA frames; its trailers are a trailer section (§8.1).
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:1000], body[1000:5000])) + b"0\r\nX-Sum: 5000\r\n\r\n"
    raw = (f"POST {h2_origin.url('/echo')} HTTP/1.1\r\nHost: localhost:{h2_origin.port}\r\n"
           "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode() + chunked
    resp, _ = raw_exchange(proxy.port, raw)
    echoed = json.loads(resp.body)
    assert echoed["body_len"] == 5000 and echoed["trailers"] == [["x-sum", "5000"]], echoed
    assert "transfer-encoding" not in [k for k, _ in echoed["headers"]]


def test_responses_without_length_trailers_1xx_and_empty(make_proxy, pki, h2_origin):
    proxy = make_proxy(trusting(pki))
    nolength = get(proxy, h2_origin.url("/nolength/70000"))
    assert nolength.status == 200 and nolength.body == origins.pattern(70000)
    assert nolength.header("Transfer-Encoding") == "chunked", nolength.headers
    trailers = get(proxy, h2_origin.url("/trailers"), headers=[("TE", "trailers")])
    assert trailers.body == b"hello" and "grpc-status: 0" in trailers.trailers, (trailers.headers, trailers.trailers)
    empty = get(proxy, h2_origin.url("/status/204"))
    assert empty.status == 204 and empty.body == b""
    done = get(proxy, h2_origin.url("/status/200"))
    # END_STREAM on HEADERS: an empty body an HTTP/1.1 client can delimit.
    assert done.status == 200 and done.header("Content-Length") == "0" and done.body == b""
    early = get(proxy, h2_origin.url("/informational"))
    assert early.status == 200 and early.body == b"ok"
    assert [status for status, _ in early.interim] == [103], early.interim
    assert proxy.summaries(5)


def test_intercepted_h2_client_to_h2_origin(make_proxy, pki, h2_origin):
    proxy = make_proxy(intercepting(pki, h2_origin))

    async def fetch_all():
        context = ssl.create_default_context(cafile=ca_file(proxy))
        async with httpx.AsyncClient(http2=True, proxy=proxy.url, verify=context, timeout=30) as client:
            urls = [h2_origin.url(f"/fixed/{5000 + i}") for i in range(30)]
            responses = [await client.get(urls[0])]
            responses += await asyncio.gather(*(client.get(u) for u in urls[1:]))
            trailers = await client.get(h2_origin.url("/trailers"), headers={"te": "trailers"})
            return [(r.http_version, r.status_code, r.content == origins.pattern(5000 + i))
                    for i, r in enumerate(responses)], trailers

    results, trailers = asyncio.run(fetch_all())
    assert results == [("HTTP/2", 200, True)] * 30, results
    assert trailers.content == b"hello"
    recs = proxy.summaries(31, kind="intercepted")
    assert all(r["http_version"] == "HTTP/2" and r["upstream"]["protocol"] == "h2" for r in recs), recs
    conns = {r["upstream"]["stream_id"] for r in recs}
    assert len(conns) == 31, "each exchange had its own upstream stream"


def test_concurrent_clients_share_one_origin_connection(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin()
    proxy = make_proxy(trusting(pki, event_loops=1))
    results = []

    def one(i):
        resp = get(proxy, origin.url(f"/slow/0.3?i={i}"))
        results.append(resp.status)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 20
    assert origin.connections == 1, "20 clients, one upstream connection (they waited for its ALPN)"
    assert origin.max_open_streams >= 10, origin.max_open_streams
    recs = proxy.summaries(20)
    assert len({r["upstream"]["stream_id"] for r in recs}) == 20


def test_origin_max_concurrent_streams_is_respected(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin(max_concurrent_streams=3)
    proxy = make_proxy(trusting(pki, event_loops=1))
    get(proxy, origin.url("/fixed/1"))  # settles the connection and its SETTINGS
    results = []

    def one(i):
        results.append(get(proxy, origin.url(f"/slow/0.3?i={i}")).status)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 9
    assert origin.max_open_streams <= 3, origin.max_open_streams


def test_refused_stream_is_retried_and_reset_stream_is_an_error(make_proxy, pki, h2_origin):
    proxy = make_proxy(trusting(pki))
    # REFUSED_STREAM (RFC 9113 §8.7): the request was not processed, so it goes again at once.
    resp = get(proxy, h2_origin.url("/refuse-once/get"))
    assert resp.status == 200 and resp.body == b"served", resp.headers
    rec = proxy.only_summary(url=h2_origin.url("/refuse-once/get"))
    assert rec["attempts"] == 2, rec
    assert rec["transactions"][0]["error"] == "upstream_stream_refused", rec
    # A stream reset after the head: the client sees the response break off.
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", h2_origin.url("/reset"), headers=[("Connection", "close")]))
    data = Reader(sock).read_to_eof()
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"0123456789"), data
    rec = proxy.only_summary(url=h2_origin.url("/reset"))
    assert rec["error"]["code"] == "upstream_stream_reset" and "INTERNAL_ERROR" in rec["error"]["message"], rec


def test_refused_post_goes_again_only_with_its_body_kept(make_proxy, pki, h2_origin):
    # Without a retry rule the body streams through and is not kept: it cannot be sent twice.
    proxy = make_proxy(trusting(pki))
    resp = get(proxy, h2_origin.url("/refuse-once/post-a"), method="POST", body=b"abc",
               headers=[("Content-Length", "3")])
    assert resp.status == 502 and resp.header("X-Lookout-Error") == "upstream_stream_refused", resp.headers
    # A retry rule keeps it; the refused attempt does not count against the rule's limit.
    proxy = make_proxy(trusting(pki, retry={"rules": [{"hosts": ["**"], "limit": 1, "statuses": []}]}))
    resp = get(proxy, h2_origin.url("/refuse-once/post-b"), method="POST", body=b"abc",
               headers=[("Content-Length", "3")])
    assert resp.status == 200 and resp.body == b"served", resp.headers
    rec = proxy.only_summary()
    assert rec["attempts"] == 2 and rec["transactions"][0]["error"] == "upstream_stream_refused", rec
    # Both attempts carried the whole body (the origin refused the first after reading it).
    served = [r for r in h2_origin.requests if dict(r["headers"])[":path"] == "/refuse-once/post-b"]
    assert [r["body_len"] for r in served] == [3, 3], served


def test_malformed_response_is_a_stream_error(make_proxy, pki, h2_origin):
    # RFC 9113 §8.1.1: content-length that disagrees with the DATA frames. nghttp2 resets the
    # stream (PROTOCOL_ERROR); the client sees the response break off, the record says why, and
    # the connection goes on serving other streams.
    proxy = make_proxy(trusting(pki, event_loops=1))
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", h2_origin.url("/badlength"), headers=[("Connection", "close")]))
    data = Reader(sock).read_to_eof()
    # What arrived went on; the body stops short of its length (the client sees the truncation).
    assert data.startswith(b"HTTP/1.1 200") and b"content-length: 10" in data.lower() and data.endswith(b"\r\n\r\nshort"), data
    rec = proxy.only_summary(url=h2_origin.url("/badlength"))
    assert rec["error"]["code"] == "upstream_malformed_response", rec
    assert "HTTP/2 stream 1" in rec["error"]["message"], rec
    assert get(proxy, h2_origin.url("/fixed/3")).status == 200
    assert proxy.only_summary(url=h2_origin.url("/fixed/3"))["upstream"]["reused"] is True


def test_stream_timeouts_end_one_stream_not_the_connection(make_proxy, pki, h2_origin):
    proxy = make_proxy(trusting(pki, event_loops=1, timeouts={"upstream_first_byte": 1, "upstream_idle": 1}))
    slow = get(proxy, h2_origin.url("/slow/3"))
    assert slow.status == 504 and slow.header("X-Lookout-Error") == "upstream_first_byte_timeout", slow.headers
    # Silent after 10 of 100 bytes: the response breaks off with what came.
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", h2_origin.url("/stall"), headers=[("Connection", "close")]))
    data = Reader(sock).read_to_eof()
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n0123456789"), data
    rec = proxy.only_summary(url=h2_origin.url("/stall"))
    assert rec["error"]["code"] == "upstream_idle_timeout", rec
    # Each stream was reset; the connection went on.
    after = get(proxy, h2_origin.url("/fixed/3"))
    assert after.status == 200
    assert proxy.only_summary(url=h2_origin.url("/fixed/3"))["upstream"]["reused"] is True


def test_oversized_response_header_list_resets_the_stream(make_proxy, pki, h2_origin):
    proxy = make_proxy(trusting(pki, event_loops=1, http2={"max_header_list_bytes": 1024}))
    resp = get(proxy, h2_origin.url("/bigheaders"))
    assert resp.status == 502 and resp.header("X-Lookout-Error") == "upstream_malformed_response", resp.headers
    assert b"http2.max_header_list_bytes" in resp.body, resp.body
    assert get(proxy, h2_origin.url("/fixed/3")).status == 200


def test_unanswered_ping_drops_the_connection(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin(freeze=True)
    proxy = make_proxy(trusting(pki, event_loops=1, pool={"idle_timeout": 3}))
    assert get(proxy, origin.url("/fixed/5")).status == 200
    events = wait_until(lambda: [r for r in proxy.read_log() if r.get("event") == "upstream.didEndHTTP2"],
                        timeout=8, message="the unanswered PING ends the connection")
    assert events[0]["reason"].startswith("no PING ACK") and events[0]["open_streams"] == 0, events
    # The next request opens a new connection.
    assert get(proxy, origin.url("/fixed/5")).status == 200 and origin.connections == 2


def test_goaway_drains_and_the_next_request_opens_a_new_connection(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin()
    proxy = make_proxy(trusting(pki), verbose_events=False)
    assert get(proxy, origin.url("/goaway")).body == b"gone"
    wait_until(lambda: any(r.get("event") == "upstream.didReceiveGoAway" for r in proxy.read_log()),
               message="the GOAWAY is in the log")
    assert get(proxy, origin.url("/fixed/5")).status == 200
    assert origin.connections == 2
    event = next(r for r in proxy.read_log() if r.get("event") == "upstream.didReceiveGoAway")
    assert event["code"] == "NO_ERROR" and event["last_stream_id"] == 1, event
    assert event["origin"] == f"https://localhost:{origin.port}", event


def test_origin_without_settings_is_given_up(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin(silent=True)
    proxy = make_proxy(trusting(pki, timeouts={"tls_handshake": 1}))
    started = time.monotonic()
    resp = get(proxy, origin.url("/fixed/1"))
    assert resp.status == 502 and resp.header("X-Lookout-Error") == "upstream_closed", resp.headers
    assert time.monotonic() - started < 5
    events = wait_until(lambda: [r for r in proxy.read_log() if r.get("event") == "upstream.didEndHTTP2"],
                        message="the connection's end is in the log")
    assert "no SETTINGS" in events[0]["reason"] and events[0]["open_streams"] == 1, events


def test_idle_connection_is_pinged_then_closed(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin()
    proxy = make_proxy(trusting(pki, pool={"idle_timeout": 1.5}))
    assert get(proxy, origin.url("/fixed/5")).status == 200
    wait_until(lambda: origin.pings >= 1, timeout=5, message="an idle connection is checked with PING")
    wait_until(lambda: origin.goaways_received >= 1, timeout=5, message="then closed with GOAWAY")


def test_slow_http1_client_throttles_only_its_own_stream(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin()
    proxy = make_proxy(trusting(pki, event_loops=1))
    size = 64 << 20
    rss_before = rss_kib(proxy.proc.pid)
    slow = connect(proxy.port)
    slow.sendall(request_bytes("GET", origin.url(f"/fixed/{size}"), headers=[("Connection", "close")]))
    wait_until(lambda: origin.sent.get((1, 1), 0) > 0, message="the slow stream started")
    time.sleep(1.0)
    # Flow control is the backpressure (RFC 9113 §5.2): the origin could send only a window
    # beyond what sits in the sockets' kernel buffers (a few MiB on loopback), not the 64 MiB.
    stalled_at = origin.sent[(1, 1)]
    assert stalled_at < 12 << 20, stalled_at
    assert rss_kib(proxy.proc.pid) - rss_before < 8 << 10, "Lookout holds a window of the stream, not the body"
    # Meanwhile other exchanges on the same origin connection go through at once.
    for i in range(5):
        resp = get(proxy, origin.url(f"/fixed/{100_000 + i}"))
        assert resp.status == 200 and len(resp.body) == 100_000 + i
    assert origin.connections == 1
    assert origin.sent[(1, 1)] - stalled_at < 1 << 20, "the slow stream did not move meanwhile"
    # Then the client reads it all, intact.
    slow.settimeout(60)
    head = b""
    while b"\r\n\r\n" not in head:
        head += slow.recv(1)
    assert head.startswith(b"HTTP/1.1 200 OK"), head
    digest, received = hashlib.sha256(), 0
    while piece := slow.recv(1 << 20):
        digest.update(piece)
        received += len(piece)
    assert received == size and digest.hexdigest() == origins.expected_sha256(size)


def test_h2c_prior_knowledge_for_named_hosts(make_proxy):
    origin = H2Origin().start()
    try:
        proxy = make_proxy({"http2": {"upstream_h2c_hosts": ["127.0.0.1"]}})
        resp = get(proxy, f"http://127.0.0.1:{origin.port}/fixed/100")
        assert resp.status == 200 and resp.body == origins.pattern(100)
        rec = proxy.only_summary()
        assert rec["upstream"]["protocol"] == "h2" and "tls" not in rec["upstream"], rec
    finally:
        origin.stop()


def test_upgrade_requests_stay_http1_and_fallback_is_remembered(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin(http1=True)
    proxy = make_proxy(trusting(pki, event_loops=1))
    # HTTP/2 has no protocol switch (RFC 9113 §8.6): the WebSocket handshake is offered only
    # http/1.1 in ALPN, and gets its 101 and the bytes after it.
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", origin.url("/ws"), headers=[
        ("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]))
    reader = Reader(sock)
    head = reader.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    sock.sendall(b"ping-bytes")
    assert reader.read_exact(10) == b"ping-bytes"
    sock.close()
    assert origin.http1_connections == 1
    # Ordinary requests still go over h2.
    assert get(proxy, origin.url("/fixed/10")).status == 200
    rec = proxy.summaries(2)
    assert {r["upstream"]["protocol"] for r in rec} == {"http/1.1", "h2"}, rec


def test_log_filter_selects_by_protocol(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin(http1=True)
    proxy = make_proxy(trusting(pki))
    assert get(proxy, origin.url("/fixed/10")).status == 200
    assert get(proxy, origin.url("/plain"), headers=[("Connection", "Upgrade"), ("Upgrade", "other")]).status == 200
    proxy.summaries(2)
    found = {}
    for expression in ("protocol:h2", "protocol:http/1.1", "version:HTTP/1.1 and protocol:h2"):
        p = subprocess.run([str(proxy.binary), "log", str(proxy.log_path), "--filter", expression, "--format", "jsonl"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        found[expression] = [json.loads(line)["url"] for line in p.stdout.splitlines()]
    assert found == {"protocol:h2": [origin.url("/fixed/10")], "protocol:http/1.1": [origin.url("/plain")],
                     "version:HTTP/1.1 and protocol:h2": [origin.url("/fixed/10")]}, found


def test_origins_that_pick_http1_are_served_over_http1(make_proxy, pki):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()  # no ALPN at all
    try:
        proxy = make_proxy(trusting(pki, event_loops=1))
        results = []

        def one(i):
            results.append(get(proxy, f"https://localhost:{origin.port}/fixed/{10 + i}").status)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [200] * 6
        recs = proxy.summaries(6)
        assert all(r["upstream"]["protocol"] == "http/1.1" and "stream_id" not in r["upstream"] for r in recs), recs
    finally:
        origin.stop()


def test_nghttpd_origin_through_interception_and_absolute_form(make_proxy, pki, tmp_path):
    htdocs = tmp_path / "htdocs"
    htdocs.mkdir()
    (htdocs / "big").write_bytes(origins.pattern(3 << 20))
    port = free_port()
    cert, key = pki.good.tls
    nghttpd = subprocess.Popen(["nghttpd", f"--address={HOST}", f"--htdocs={htdocs}",
                                str(port), str(key), str(cert)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: socket.socket().connect_ex((HOST, port)) == 0, message="nghttpd listens")
        origin = SimpleNamespace(port=port)
        proxy = make_proxy(intercepting(pki, origin))
        url = f"https://localhost:{port}/big"
        intercepted = curl(proxy, url, "--http2", "--cacert", ca_file(proxy))
        assert intercepted.rc == 0 and intercepted.is_http2, intercepted.stderr
        absolute = get(proxy, url)
        assert absolute.status == 200 and len(absolute.body) == 3 << 20
        assert intercepted.body == absolute.body == origins.pattern(3 << 20)
        assert absolute.header("Content-Length") == str(3 << 20), absolute.headers
        recs = proxy.summaries(2)
        assert all(r["upstream"]["protocol"] == "h2" and r["status"] == 200 for r in recs), recs
        assert {r["http_version"] for r in recs} == {"HTTP/2", "HTTP/1.1"}
    finally:
        nghttpd.terminate()
        nghttpd.wait(5)


def start_nginx_h2(tmp_path, cert, key) -> tuple[subprocess.Popen, int]:
    """nginx with TLS and http2 on 127.0.0.1, serving tmp_path/www."""
    port = free_port()
    for sub in ("www", "tmp"):
        (tmp_path / sub).mkdir(exist_ok=True)
    user = ""
    if os.geteuid() == 0:
        user = "user root root;"
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""
{user}
daemon off;
master_process off;
worker_processes 1;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/tmp;
    proxy_temp_path {tmp_path}/tmp;
    fastcgi_temp_path {tmp_path}/tmp;
    uwsgi_temp_path {tmp_path}/tmp;
    scgi_temp_path {tmp_path}/tmp;
    server {{
        listen {HOST}:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {tmp_path}/www;
    }}
}}
""")
    proc = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", str(tmp_path), "-e", str(tmp_path / "error.log"),
                             "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_until(lambda: socket.socket().connect_ex((HOST, port)) == 0, message="nginx listens")
    return proc, port


def test_nginx_http2_origin(make_proxy, pki, tmp_path):
    cert, key = pki.good.tls
    nginx, port = start_nginx_h2(tmp_path, cert, key)
    try:
        (tmp_path / "www" / "1m").write_bytes(origins.pattern(1 << 20))
        proxy = make_proxy(intercepting(pki, SimpleNamespace(port=port), event_loops=1))
        url = f"https://localhost:{port}/1m"

        async def fetch_all():
            context = ssl.create_default_context(cafile=ca_file(proxy))
            async with httpx.AsyncClient(http2=True, proxy=proxy.url, verify=context, timeout=30) as client:
                first = await client.get(url)
                rest = await asyncio.gather(*(client.get(url) for _ in range(9)))
                missing = await client.get(f"https://localhost:{port}/nothing")
                return [first, *rest], missing

        responses, missing = asyncio.run(fetch_all())
        assert all(r.status_code == 200 and r.content == origins.pattern(1 << 20) for r in responses)
        assert missing.status_code == 404
        recs = proxy.summaries(11, kind="intercepted")
        assert all(r["upstream"]["protocol"] == "h2" for r in recs), recs
        assert len({r["upstream"]["stream_id"] for r in recs}) == 11, "one upstream connection, a stream each"
        assert sum(r["upstream"]["reused"] for r in recs) == 10
    finally:
        nginx.terminate()
        nginx.wait(5)


def test_shutdown_lets_upstream_streams_finish_then_goes_away(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin()
    proxy = make_proxy(trusting(pki))
    sock = connect(proxy.port)
    sock.sendall(request_bytes("GET", origin.url("/slow/1"), headers=[("Connection", "close")]))
    wait_until(lambda: len(origin.requests) == 1, message="the request reached the origin")
    proxy.send_signal(signal.SIGTERM)
    data = Reader(sock).read_to_eof()
    assert data.startswith(b"HTTP/1.1 200 OK") and data.endswith(b"late"), data
    assert proxy.wait_exit(10) == 0
    wait_until(lambda: origin.goaways_received == 1, message="Lookout said GOAWAY to the origin")


def test_upstream_false_keeps_http1(make_proxy, pki, fresh_h2_origin):
    origin = fresh_h2_origin(http1=True)
    proxy = make_proxy(trusting(pki, http2={"upstream": False}))
    resp = get(proxy, origin.url("/fixed/10"))
    assert resp.status == 200 and resp.body == b"http1"
    rec = proxy.only_summary()
    assert rec["upstream"]["protocol"] == "http/1.1", rec
