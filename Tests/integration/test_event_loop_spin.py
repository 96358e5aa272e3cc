"""`event_loop_spin_us`: an event loop with nothing left to do may keep polling its sockets for a
moment before it sleeps, but only while traffic is dense (its last sleep was short) and the
machine's CPU pressure is low. What a user must be able to rely on: the status page says what
the loops do and what their polling has cost so far, requests through a spinning proxy are
answered as usual, and sparse traffic costs no polling."""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

from conftest import Reader, connect, raw_exchange, read_response, request_bytes
from origins import RawOrigin
from test_metrics import fetch_metrics

PSI = Path("/proc/pressure/cpu")


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
    """Dense traffic through a spinning proxy is answered as usual, and the loops do poll: 3,000
    requests outlast the two pressure readings a loop takes before it may spin (100 ms apart).
    Whether they may spin depends on the machine's load, so the spins are required only when the
    kernel's CPU pressure stayed well under the proxy's limit (30 %) over the run."""
    origin = RawOrigin(behave_prompt).start()
    try:
        proxy = make_proxy({"event_loop_spin_us": 1000})
        stalled_before, started = cpu_pressure_microseconds(), time.monotonic()
        keep_alive_requests(proxy, origin.url("/prompt"), 3000, 0)
        stalled, elapsed = cpu_pressure_microseconds() - stalled_before, time.monotonic() - started
        records = proxy.summaries(3000)
        assert all(r["status"] == 200 for r in records)
        spins, microseconds = spin_totals(proxy)
        # A spin lasts up to its 1 ms (most end sooner, when bytes arrive), plus the odd time the
        # thread was preempted mid-spin on a busy machine: the total is in microseconds, not more.
        assert microseconds <= spins * 1_000 + 50_000, (spins, microseconds)
        if PSI.exists() and stalled / (elapsed * 1e6) < 0.1:
            assert spins > 0, (stalled, elapsed)
        # /metrics exports the same totals (read after the status page, so never fewer).
        metrics = {name: float(value) for name, value in
                   re.findall(r"^(lookout_event_loop_spin\w*_total) (\S+)$", fetch_metrics(proxy.port), re.M)}
        assert metrics["lookout_event_loop_spins_total"] >= spins, (metrics, spins)
        assert metrics["lookout_event_loop_spin_seconds_total"] >= microseconds / 1e6 - 1e-6, (metrics, microseconds)
        assert metrics["lookout_event_loop_spin_seconds_total"] <= metrics["lookout_event_loop_spins_total"] * 0.001 + 0.05
    finally:
        origin.stop()


def cpu_pressure_microseconds() -> int:
    """The kernel's "some" CPU pressure total: microseconds in which some thread waited for a CPU
    (0 without PSI)."""
    if not PSI.exists():
        return 0
    return int(PSI.read_text().split("\n")[0].split("total=")[1])


def test_sparse_traffic_costs_no_polling(make_proxy):
    """Requests 10 ms apart: every sleep of the loop is longer than 4 spins of 1 ms, so a loop
    with the longest spin allowed must not poll at all. If it did, each request would add a
    spin of up to a millisecond (the idle gap after its answer): about 80 ms over 80 requests.
    The status page counts the spins, so the test reads what the loops did rather than
    comparing two processes' CPU time (which swings by more than the spins would cost)."""
    origin = RawOrigin(behave_prompt).start()
    try:
        proxy = make_proxy({"event_loop_spin_us": 1000})
        keep_alive_requests(proxy, origin.url("/prompt"), 5, 0)  # connections to the origin are pooled
        keep_alive_requests(proxy, origin.url("/prompt"), 3, 0.010)  # the dense warm-up is forgotten
        before = spin_totals(proxy)
        keep_alive_requests(proxy, origin.url("/prompt"), 80, 0.010)
        after = spin_totals(proxy)
    finally:
        origin.stop()
    # One status page request between the phases is not dense traffic either. A spin polling
    # after every answer would be 80 spins and about 80 ms; one stray spin is tolerated.
    assert after[0] - before[0] <= 1 and after[1] - before[1] <= 20_000, (before, after)


def spin_totals(proxy) -> tuple[int, int]:
    """(spins, microseconds spinning) since the proxy started, from its status page."""
    match = re.search(r"polled (\d+) times, (\d+) µs in all", status_page(proxy))
    assert match, "the status page reports no spin totals"
    return int(match[1]), int(match[2])
