"""Shutdown: SIGTERM/SIGINT drain in-flight exchanges and exit 0; a second signal exits 130."""

from __future__ import annotations

import signal
import socket
import threading
import time

import pytest

import origins
from conftest import Reader, assert_error_response, connect, read_response, request_bytes, send_all


def exit_code(proxy, timeout: float = 15.0, sig: int | None = None) -> int:
    """Wait for (after sending ``sig``, if given) the exit; the test asserts the code itself."""
    if sig is not None:
        proxy.send_signal(sig)
    rc = proxy.wait_exit(timeout)
    proxy.expected_exit = rc  # teardown then checks only the log file
    return rc


def start_slow(proxy, origin, pieces: int, interval: float):
    """Start GET /slow through the proxy and return once its first piece arrived."""
    url = origin.url(f"/slow?pieces={pieces}&interval={interval}")
    s = connect(proxy.port)
    s.sendall(request_bytes("GET", url))
    r = Reader(s, 30)
    assert r.read_until(b"slow piece 0\n") is not None
    return s, r, url


def test_sigterm_lets_in_flight_exchange_finish(proxy, origin):
    s, r, url = start_slow(proxy, origin, pieces=4, interval=0.6)
    t0 = time.monotonic()
    proxy.send_signal(signal.SIGTERM)
    rest = r.read_until(b"0\r\n\r\n")
    assert rest is not None and rest.endswith(b"slow piece 3\n\r\n0\r\n\r\n"), rest
    rc = exit_code(proxy)
    assert rc == 0, proxy.stderr
    assert time.monotonic() - t0 >= 1.5
    recs = proxy.summaries(1, timeout=0.5)
    assert len(recs) == 1 and recs[0]["url"] == url and recs[0]["status"] == 200
    assert "error" not in recs[0], recs[0]


def test_sigterm_stops_accepting(proxy, origin):
    s, r, _ = start_slow(proxy, origin, pieces=5, interval=0.6)
    proxy.send_signal(signal.SIGTERM)

    def refused_or_503() -> bool:
        try:
            c = socket.create_connection(("127.0.0.1", proxy.port), timeout=1)
        except OSError:
            return True  # refused, or reset as the listening socket closes
        try:
            c.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
            resp = read_response(Reader(c, 2))
            return resp.status == 503 and resp.header("X-Lookout-Error") == "shutting_down"
        except (EOFError, OSError, TimeoutError):
            return True  # accepted by the kernel backlog but closed without a response
        finally:
            c.close()

    deadline = time.monotonic() + 2
    while not refused_or_503():
        assert time.monotonic() < deadline, "still serving new connections 2 s after SIGTERM"
        time.sleep(0.05)
    assert r.read_until(b"0\r\n\r\n") is not None, "the in-flight exchange must still complete"
    assert exit_code(proxy) == 0


def test_request_on_idle_keepalive_connection_during_shutdown(proxy, origin):
    idle = connect(proxy.port)
    idle.sendall(request_bytes("GET", origin.url("/fixed/1")))
    ir = Reader(idle, 10)
    assert read_response(ir).status == 200
    s, r, _ = start_slow(proxy, origin, pieces=4, interval=0.6)
    proxy.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    send_all(idle, request_bytes("GET", origin.url("/fixed/2")))
    try:
        resp = read_response(ir)
    except EOFError:
        resp = None  # closed: fine
    if resp is not None:
        assert_error_response(resp, 503, "shutting_down")
    assert r.read_until(b"0\r\n\r\n") is not None
    assert exit_code(proxy) == 0


def test_idle_connections_do_not_delay_shutdown(proxy, origin):
    c = connect(proxy.port)
    c.sendall(request_bytes("GET", origin.url("/fixed/1")))
    assert read_response(Reader(c, 10)).status == 200
    t0 = time.monotonic()
    assert exit_code(proxy, sig=signal.SIGTERM) == 0
    assert time.monotonic() - t0 < 3, "an idle keep-alive connection is not an in-flight exchange"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_on_idle_proxy_exits_zero(proxy, sig):
    t0 = time.monotonic()
    assert exit_code(proxy, sig=sig) == 0, "signal right after the listening line (handler race?)"
    assert time.monotonic() - t0 < 3


def test_second_signal_exits_immediately(proxy, origin):
    s, r, _ = start_slow(proxy, origin, pieces=20, interval=0.5)
    proxy.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert proxy.running(), "exited before the in-flight exchange finished"
    t0 = time.monotonic()
    proxy.send_signal(signal.SIGTERM)
    assert exit_code(proxy, 5) == 130
    assert time.monotonic() - t0 < 2


def test_shutdown_grace_bounds_the_wait(make_proxy, origin):
    p = make_proxy({"timeouts": {"shutdown_grace": 1}})
    s, r, url = start_slow(p, origin, pieces=30, interval=0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    assert exit_code(p, 10) == 0
    assert time.monotonic() - t0 < 4, "did not honour shutdown_grace"
    s.settimeout(5)
    data = r.read_to_eof()
    assert not data.endswith(b"0\r\n\r\n"), "an aborted body must not look complete"
    recs = p.summaries(1, timeout=0.5)
    assert recs[0]["url"] == url and "error" in recs[0], "the aborted exchange must be logged as failed"
