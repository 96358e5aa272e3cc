"""Exchanges still running, as an operator sees them (`GET /exchanges?state=in_flight`), and
cancelling one (`DELETE /exchanges/ID`): the client gets `502 cancelled_by_operator`, or a reset
when its response had begun; the upstream connection is closed; the record names who cancelled."""

from __future__ import annotations

import json
import socket

import pytest

from conftest import Reader, assert_error_response, connect, raw_exchange, read_response, wait_until
from origins import HeldOrigin


@pytest.fixture
def held():
    origin = HeldOrigin()
    yield origin
    origin.close()


def admin(port: int, method: str, path: str) -> tuple[int, dict, object]:
    resp, _ = raw_exchange(port, f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    return resp.status, json.loads(resp.body), resp


def send_request(port: int, url: str) -> socket.socket:
    sock = connect(port)
    sock.sendall(f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return sock


def running(proxy, query: str = "") -> list[dict]:
    status, body, _ = admin(proxy.port, "GET", f"/exchanges?state=in_flight{query}")
    assert status == 200
    return body["exchanges"]


def test_running_exchanges_are_listed_with_their_phase_until_they_finish(make_proxy, held):
    proxy = make_proxy()
    assert running(proxy) == []
    client = send_request(proxy.port, held.url("/held?a=1"))
    wait_until(lambda: running(proxy), message="the exchange listed")
    [rec] = running(proxy)
    assert rec["event"] == "exchange" and rec["state"] == "in_flight" and rec["kind"] == "http"
    assert rec["method"] == "GET" and rec["url"] == held.url("/held?a=1")
    assert rec["phase"] == "wait", rec
    assert rec["timings_ms"]["connect"] >= 0 and rec["timings_ms"]["wait"] == -1
    assert rec["timings_ms"]["total"] >= 0 and "status" not in rec
    # The filter language applies, as on the finished list.
    assert running(proxy, "&filter=method%3AGET") != []
    assert running(proxy, "&filter=method%3APOST") == []
    # A second, newer one is listed first.
    other = send_request(proxy.port, held.url("/held?b=2"))
    wait_until(lambda: len(running(proxy)) == 2, message="two running")
    first, second = running(proxy)
    assert first["id"] > second["id"] and first["url"].endswith("b=2")
    assert len(running(proxy, "&limit=1")) == 1
    held.release.set()
    for sock in (client, other):
        assert read_response(Reader(sock)).status == 200
        sock.close()
    wait_until(lambda: running(proxy) == [], message="nothing running after both finished")
    assert len(proxy.summaries(2, where=lambda r: r["kind"] == "http")) == 2


def test_cancelling_before_the_response_answers_502_and_closes_the_upstream(make_proxy, held):
    proxy = make_proxy()
    client = send_request(proxy.port, held.url())
    wait_until(lambda: running(proxy), message="the exchange listed")
    [rec] = running(proxy)
    status, body, resp = admin(proxy.port, "DELETE", f"/exchanges/{rec['id']}")
    assert status == 200 and body["cancelled"] == rec["id"] and body["by"].startswith("127.0.0.1:")
    assert resp.header("Cache-Control") == "no-store"
    answer = read_response(Reader(client))
    assert_error_response(answer, 502, "cancelled_by_operator")
    assert held.closed_by_proxy.wait(5), "the upstream connection was not closed"
    summary = proxy.only_summary(where=lambda r: r["kind"] == "http")
    assert summary["id"] == rec["id"] and summary["status"] == 502
    assert summary["error"]["code"] == "cancelled_by_operator"
    assert summary["error"]["cancelled_by"] == body["by"]
    assert body["by"] in summary["error"]["message"]
    # Once it is over there is nothing left to cancel.
    status, body, _ = admin(proxy.port, "DELETE", f"/exchanges/{rec['id']}")
    assert status == 404 and "not running" in body["error"]
    # The DELETE itself is an admin record.
    deletes = proxy.summaries(2, where=lambda r: r["kind"] == "admin" and r["method"] == "DELETE")
    assert [d["status"] for d in deletes] == [200, 404]


def test_cancelling_after_the_response_began_resets_the_client(make_proxy):
    origin = HeldOrigin(head_first=True)
    try:
        proxy = make_proxy()
        client = send_request(proxy.port, origin.url())
        reader = Reader(client)
        head = reader.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        wait_until(lambda: running(proxy) and running(proxy)[0]["phase"] == "receive", message="receiving")
        [rec] = running(proxy)
        assert rec["status"] == 200 and rec["bytes"]["response_body"] >= 0
        status, _, _ = admin(proxy.port, "DELETE", f"/exchanges/{rec['id']}")
        assert status == 200
        # What was relayed arrives, then the connection breaks off: never a clean short body.
        received = b""
        with pytest.raises((ConnectionResetError, EOFError)):
            while True:
                data = client.recv(65536)
                if not data:
                    raise EOFError("clean end")
                received += data
        assert origin.closed_by_proxy.wait(5)
        summary = proxy.only_summary(where=lambda r: r["kind"] == "http")
        assert summary["error"]["code"] == "cancelled_by_operator" and summary["status"] == 200
    finally:
        origin.close()


def test_cancelling_a_tunnel_resets_both_sides(make_proxy, held):
    proxy = make_proxy({"connect": {"allowed_ports": [held.port]}})
    client = connect(proxy.port)
    client.sendall(f"CONNECT 127.0.0.1:{held.port} HTTP/1.1\r\nHost: 127.0.0.1:{held.port}\r\n\r\n".encode())
    reader = Reader(client)
    assert reader.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200")
    wait_until(lambda: running(proxy), message="the tunnel listed")
    [rec] = running(proxy)
    assert rec["kind"] == "tunnel" and rec["phase"] == "relaying" and rec["method"] == "CONNECT"
    client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    wait_until(lambda: running(proxy)[0]["bytes"]["client_to_upstream"] > 0, message="bytes counted")
    assert admin(proxy.port, "DELETE", f"/exchanges/{rec['id']}")[0] == 200
    assert reader.closed_by_peer(5)
    assert held.closed_by_proxy.wait(5)
    summary = proxy.only_summary(where=lambda r: r["kind"] == "tunnel")
    assert summary["error"]["code"] == "cancelled_by_operator"
    assert summary["bytes"]["client_to_upstream"] > 0


def test_bad_operator_requests_are_clear_errors(make_proxy):
    proxy = make_proxy()
    status, body, _ = admin(proxy.port, "DELETE", "/exchanges/999999")
    assert status == 404 and "not running" in body["error"]
    status, body, _ = admin(proxy.port, "DELETE", "/exchanges/abc")
    assert status == 404 and "abc" in body["error"]
    status, body, _ = admin(proxy.port, "GET", "/exchanges?state=paused")
    assert status == 400 and "in_flight" in body["error"]
    status, body, _ = admin(proxy.port, "GET", "/exchanges?state=in_flight&limit=0")
    assert status == 400 and "limit" in body["error"]
    status, body, _ = admin(proxy.port, "DELETE", "/events")
    assert status == 405
    status, body, _ = admin(proxy.port, "GET", "/exchanges?state=in_flight&filter=status%3A%3A")
    assert status == 400 and "column" in body
    # Each refused request is an admin record with its status.
    records = proxy.summaries(6, where=lambda r: r["kind"] == "admin")
    assert sorted(r["status"] for r in records) == [400, 400, 400, 404, 404, 405]


def test_a_deferred_answer_keeps_the_connection_for_the_next_request(make_proxy):
    # Two requests pipelined behind a listing that is gathered from every loop.
    proxy = make_proxy({"event_loops": 2})
    sock = connect(proxy.port)
    sock.sendall(b"GET /exchanges?state=in_flight HTTP/1.1\r\nHost: x\r\n\r\n"
                 b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    reader = Reader(sock)
    first = read_response(reader)
    assert first.status == 200 and json.loads(first.body) == {"exchanges": []}
    assert read_response(reader).body == b"ok\n"
    sock.close()


def test_cancelling_a_tunnel_still_opening_answers_502(make_proxy, held):
    # The parent proxy takes the CONNECT and never answers it: the tunnel is still opening.
    proxy = make_proxy({"upstream_proxies": {"default": f"http://127.0.0.1:{held.port}"},
                        "connect": {"allowed_ports": [443, 8443]}})
    client = connect(proxy.port)
    client.sendall(b"CONNECT origin.test:8443 HTTP/1.1\r\nHost: origin.test:8443\r\n\r\n")
    wait_until(lambda: running(proxy), message="the opening tunnel listed")
    [rec] = running(proxy)
    assert rec["kind"] == "tunnel" and rec["phase"] != "relaying"
    assert admin(proxy.port, "DELETE", f"/exchanges/{rec['id']}")[0] == 200
    assert_error_response(read_response(Reader(client), "CONNECT"), 502, "cancelled_by_operator")
    assert held.closed_by_proxy.wait(5), "the parent's connection was not closed"
    summary = proxy.only_summary(where=lambda r: r["kind"] == "tunnel")
    assert summary["status"] == 502 and summary["error"]["code"] == "cancelled_by_operator"
