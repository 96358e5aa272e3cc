"""`event_loop_spin_us`: an event loop with nothing left to do may keep polling its sockets for a
moment before it sleeps, but only while traffic is dense (its last sleep was short) and the
machine's CPU pressure is low. What a user must be able to rely on: the status page says what
the loops do, requests through a spinning proxy are answered as usual, and sparse traffic costs
no polling (CPU time measured from /proc/PID/task/*/schedstat, in nanoseconds)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from conftest import Reader, connect, raw_exchange, read_response, request_bytes
from origins import RawOrigin

PSI = Path("/proc/pressure/cpu")


def cpu_nanoseconds(pid: int) -> int:
    """Time on a CPU of every thread of `pid`, from the scheduler's own accounting."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended between the listing and the read
    return total


PROMPT_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + bytes(100)


def behave_prompt(conn: socket.socket, origin: RawOrigin):
    """Answers each keep-alive request at once with one write (the suite's HTTP origin writes head
    and body apart, and delayed ACKs make each of its answers take about 40 ms: no dense traffic)."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    pending = b""
    while True:
        while b"\r\n\r\n" not in pending:
            data = conn.recv(65536)
            if not data:
                return
            pending += data
        _, pending = pending.split(b"\r\n\r\n", 1)
        conn.sendall(PROMPT_ANSWER)


def status_page(proxy) -> str:
    resp, _ = raw_exchange(proxy.port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
    assert resp.status == 200, resp
    return resp.body.decode()


def keep_alive_requests(proxy, url: str, count: int, gap: float) -> None:
    """`count` requests on one kept-alive connection, `gap` seconds apart; each answered fully."""
    with connect(proxy.port) as s:
        r = Reader(s)
        for _ in range(count):
            s.sendall(request_bytes("GET", url))
            resp = read_response(r)
            assert resp.status == 200 and len(resp.body) == 100, resp
            if gap:
                time.sleep(gap)


def test_status_page_reports_the_spin(make_proxy):
    default = status_page(make_proxy())
    if PSI.exists():
        assert "event_loop_spin_us: 50 (while traffic is dense and no thread waits for a CPU)" in default, default
    else:
        assert "event_loop_spin_us: 50, unused: no /proc/pressure/cpu" in default, default
    off = status_page(make_proxy({"event_loop_spin_us": 0}))
    assert "event_loop_spin_us: 0 (event loops sleep as soon as they are idle)" in off, off


def test_back_to_back_requests_through_a_spinning_proxy(make_proxy):
    origin = RawOrigin(behave_prompt).start()
    try:
        proxy = make_proxy({"event_loop_spin_us": 1000})
        keep_alive_requests(proxy, origin.url("/prompt"), 300, 0)
        records = proxy.summaries(300)
        assert all(r["status"] == 200 for r in records)
    finally:
        origin.stop()


def test_sparse_traffic_costs_no_polling(make_proxy):
    """Requests 10 ms apart: every sleep of the loop is longer than 4 spins of 1 ms, so a loop
    with the longest spin allowed must not poll at all. If it did, each request would cost up to
    a millisecond of polling (the idle gap after its answer): about 80 ms over 80 requests."""
    origin = RawOrigin(behave_prompt).start()
    spinning = make_proxy({"event_loop_spin_us": 1000})
    sleeping = make_proxy({"event_loop_spin_us": 0})
    used = {}
    try:
        for name, proxy in (("spinning", spinning), ("sleeping", sleeping)):
            keep_alive_requests(proxy, origin.url("/prompt"), 5, 0)  # connections to the origin are pooled
            before = cpu_nanoseconds(proxy.proc.pid)
            keep_alive_requests(proxy, origin.url("/prompt"), 80, 0.010)
            used[name] = cpu_nanoseconds(proxy.proc.pid) - before
    finally:
        origin.stop()
    assert used["spinning"] < used["sleeping"] + 30_000_000, used
