#!/usr/bin/env python3
"""Where a request's CPU goes: each process's user and system time per request, Lookout against
nghttpx (the C reference proxy) in the same run, on the two rows where Lookout trails it.

  * `h1`: 1 KiB keep-alive through the proxy, `wrk -t2 -c64`; Lookout as a forward proxy with
    its summary log on, nghttpx as a plain HTTP/1.1 reverse proxy with two workers (as
    bench.py runs them).
  * `h2`: 1 KiB over HTTP/2 at 100 streams (`--streams`) on one connection, `h2load -m100`; Lookout
    intercepting behind the floor relay's CONNECT, nghttpx terminating TLS and h2 with one
    worker behind the plain relay, both speaking h2 over TLS to nginx (as h2_bench.py runs them).

Rounds alternate the two proxies; each figure is the median over the rounds. CPU is read from
/proc for the proxy's whole process tree (nghttpx's workers are children), and for the machine,
over a window inside each load run. Equal system time with unequal user time says the gap is in
the proxy's own code, not in the kernel's sockets; a machine below 200 % busy says the row is
bound by one thread's turnaround, not by CPU. The busiest thread (Lookout's loop, nghttpx's
worker) is given with its share of one core and its CPU per request: with the machine and that
thread both short of busy, the row is a pipeline bound by latency, and each proxy's throughput
follows its busiest thread's time per request.

  python3 Tests/bench/cpu_split.py --lookout .build/release/lookout --row h1 --rounds 3
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402
from bench import LOOPBACK, run_main, start_nghttpx, start_nginx, stop_all  # noqa: E402
from h2_bench import h2load, start_relay  # noqa: E402
import tls_bench  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def process_tree(pid):
    """pid and its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo += children.get(current, [])
    return tree


def tree_ticks(pid):
    """User and system clock ticks of pid's process tree, all threads."""
    user = system = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11])
        system += int(fields[12])
    return user, system


def thread_ticks(pid):
    """User plus system ticks of each thread of pid's process tree, by (process, thread)."""
    ticks = {}
    for member in process_tree(pid):
        try:
            threads = os.listdir(f"/proc/{member}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                with open(f"/proc/{member}/task/{thread}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks[(member, thread)] = int(fields[11]) + int(fields[12])
    return ticks


def machine_ticks():
    """All ticks and idle ticks of the machine."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return sum(values), values[3] + values[4]


def measured(pid, load, start, window):
    """Runs `load` (returns req/s); reads pid's and the machine's CPU from `start` seconds into
    it for `window` seconds. Returns (req/s, user µs, system µs per request, machine % busy)."""
    marks = {}

    def sample():
        time.sleep(start)
        marks["a"] = (tree_ticks(pid), machine_ticks(), time.monotonic(), thread_ticks(pid))
        time.sleep(window)
        marks["b"] = (tree_ticks(pid), machine_ticks(), time.monotonic(), thread_ticks(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    rps = load()
    sampler.join()
    (ua, sa), (ta, ia), t0, threads_a = marks["a"]
    (ub, sb), (tb, ib), t1, threads_b = marks["b"]
    requests = rps * (t1 - t0)
    busy = 200 * (1 - (ib - ia) / (tb - ta)) if tb > ta else 0.0
    if not requests:
        raise RuntimeError("no request completed")
    busiest = max((threads_b[k] - threads_a[k] for k in threads_b if k in threads_a), default=0) / TICK
    return (rps, 1e6 * (ub - ua) / TICK / requests, 1e6 * (sb - sa) / TICK / requests, busy,
            100 * busiest / (t1 - t0), 1e6 * busiest / requests)


def h1_targets(args, work):
    _, http_port, https_port = start_nginx(work, 1)
    log_yaml = f'  path: "{os.path.join(work, "lookout.jsonl")}"'
    lookout, lookout_port = bench.start_lookout("lookout", args.lookout, work, https_port, log_yaml)
    nghttpx_port, problem, nghttpx = start_nghttpx(work, http_port, backend_proto="http/1.1", workers=2)
    if problem:
        raise RuntimeError(problem)
    targets = [bench.Target("lookout", "Lookout", lookout_port, lookout.popen.pid, True),
               bench.Target("nghttpx", "nghttpx", nghttpx_port, nghttpx.popen.pid, False)]

    def load(target):
        result = bench.wrk(target, http_port, "/1k", 64, args.duration + 2)
        if "failed" in result:
            raise RuntimeError(f"{target.label}: {result['failed']}")
        return result["rps"]
    return targets, load, (1.0, args.duration)


def h2_targets(args, work):
    _, _, https_port = start_nginx(work, 1, http2=True)
    key, cert = os.path.join(work, "nginx", "key.pem"), os.path.join(work, "nginx", "cert.pem")
    lookout, lookout_port, _ = tls_bench.start_lookout("lookout", args.lookout, work, https_port, cert,
                                                       'interception:\n  hosts: ["**"]\n')
    nghttpx_port, problem, nghttpx = start_nghttpx(work, https_port, backend_proto="h2", workers=1, tls=(key, cert))
    if problem:
        raise RuntimeError(problem)
    ports = {"lookout": start_relay(work, "relay-lookout", lookout_port, connect=f"{LOOPBACK}:{https_port}"),
             "nghttpx": start_relay(work, "relay-nghttpx", nghttpx_port)}
    targets = [bench.Target("lookout", "Lookout", ports["lookout"], lookout.popen.pid, True),
               bench.Target("nghttpx", "nghttpx", ports["nghttpx"], nghttpx.popen.pid, False)]
    for target in targets:
        h2load(target.port, "/1k", args.streams, 2)  # warm: connections, sessions, pools

    def load(target):
        result = h2load(target.port, "/1k", args.streams, args.duration)
        if "failed" in result:
            raise RuntimeError(f"{target.label}: {result['failed']}")
        return result["rps"]
    # h2load counts from the end of its one-second warm-up.
    return targets, load, (1.2, args.duration - 0.4)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lookout", required=True)
    ap.add_argument("--row", choices=("h1", "h2"), default="h1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--streams", type=int, default=100, help="concurrent streams on the one connection (h2)")
    ap.add_argument("--duration", type=int, default=5, help="seconds of load per round and proxy")
    ap.add_argument("--work", default=None, help="a directory that does not exist yet")
    args = ap.parse_args()
    work = args.work or f"/tmp/cpu_split_{int(time.time())}"
    os.makedirs(work)
    try:
        targets, load, (start, window) = (h2_targets if args.row == "h2" else h1_targets)(args, work)
        results = {target.key: [] for target in targets}
        for number in range(args.rounds):
            order = targets if number % 2 == 0 else targets[::-1]
            for target in order:
                results[target.key].append(measured(target.pid, lambda: load(target), start, window))
                time.sleep(0.5)
            line = "   ".join(f"{t.label} {results[t.key][-1][0]:,.0f} req/s {results[t.key][-1][1]:.2f}u "
                               f"+ {results[t.key][-1][2]:.2f}s µs" for t in targets)
            print(f"round {number + 1}: {line}", flush=True)
        print(f"\n| {args.row} | req/s | user µs per request | system µs per request | machine busy "
              "| busiest thread: busy, µs per request |")
        print("|---|---:|---:|---:|---:|---:|")
        for target in targets:
            rows = results[target.key]
            print(f"| {target.label} | {statistics.median(r[0] for r in rows):,.0f} | "
                  f"{statistics.median(r[1] for r in rows):.2f} | {statistics.median(r[2] for r in rows):.2f} | "
                  f"{statistics.median(r[3] for r in rows):.0f} % | {statistics.median(r[4] for r in rows):.0f} %, "
                  f"{statistics.median(r[5] for r in rows):.2f} |")
        mine, theirs = results["lookout"], results["nghttpx"]
        paired = [a[0] / b[0] for a, b in zip(mine, theirs)]
        print(f"\nLookout / nghttpx: {statistics.median(paired):.3f} (rounds: {', '.join(f'{p:.3f}' for p in paired)})")
    finally:
        stop_all()


if __name__ == "__main__":
    run_main(main)
