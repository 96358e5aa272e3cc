#!/usr/bin/env python3
"""Per-request counts of Lookout builds: user and system CPU µs, allocations, retains and releases
for one proxied request, with the summary log on and every record field kept.

Throughput on this 2-core machine swings ±15 % between runs; call counts do not, and CPU per
request swings far less than requests per second. Each build runs behind the same nginx; after a
warm-up, N keep-alive requests of 1 KiB go through it from `--conns` client connections and /proc
gives the process's CPU time; then N/4 more while `perf stat` counts uprobes (`perf probe`) on the entry points of the allocator (`malloc`, `calloc`,
`realloc`, `posix_memalign`), `swift_allocObject`, `swift_retain` and `swift_release` in that
process only (the probes' traps would inflate its CPU time, hence two runs). The figures divide by
the requests of each run: everything the process did
for those requests, loops, monitors' queues and log writer alike. Builds alternate over `--rounds`
and the medians are printed. Needs root (uprobes) and Debian's linux-perf.

  python3 Tests/bench/counts.py --bin /tmp/lookout-before --bin .build/release/lookout --rounds 3
"""
import argparse
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import LOOPBACK, start_lookout, start_nginx, stop_all  # noqa: E402

SWIFT_CORE = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PROBES = [(LIBC, name) for name in ("malloc", "calloc", "realloc", "posix_memalign")] + \
         [(SWIFT_CORE, name) for name in ("swift_allocObject", "swift_retain", "swift_release")]
COLUMNS = {"malloc": ("malloc", "calloc", "realloc", "posix_memalign"), "swift_allocObject": ("swift_allocObject",),
           "swift_retain": ("swift_retain",), "swift_release": ("swift_release",)}
TICKS = os.sysconf("SC_CLK_TCK")


def add_probes():
    events = []
    for library, symbol in PROBES:
        group = "probe_" + re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(library).split(".so")[0])
        # A probe an interrupted run left (perhaps on another path to the same library) has the
        # same name, and `perf probe -q` refuses the new one without a word: it goes first.
        remove_probes([f"{group}:{symbol}"])
        done = subprocess.run(["perf", "probe", "-x", library, "--add", symbol], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"perf probe {symbol} in {library}: {done.stderr.strip()}")
        events.append(f"{group}:{symbol}")
    return events


def remove_probes(events):
    for event in events:
        subprocess.run(["perf", "probe", "-q", "-d", event], capture_output=True)


def cpu_ticks(pid):
    user = system = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user, system = user + int(fields[11]), system + int(fields[12])
    return user, system


def send(port, origin_port, count):
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=120)
    for _ in range(count):
        conn.request("GET", f"http://{LOOPBACK}:{origin_port}/1k", headers={"Host": f"{LOOPBACK}:{origin_port}"})
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200 and len(body) == 1024, (response.status, len(body))
    conn.close()


def load(port, origin_port, total, conns):
    threads = [threading.Thread(target=send, args=(port, origin_port, total // conns)) for _ in range(conns)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (total // conns) * conns


def measure(proc, port, origin_port, events, requests, conns):
    """CPU per request from a run without probes (a uprobe hit costs a trap into the kernel), then
    the calls per request from a run with them."""
    load(port, origin_port, 200, 2)  # warm-up: pools, caches, the log file
    time.sleep(0.5)
    before = cpu_ticks(proc.pid)
    sent = load(port, origin_port, requests, conns)
    time.sleep(0.5)  # the last records leave the monitors' queues
    after = cpu_ticks(proc.pid)
    row = {"user_us": (after[0] - before[0]) / TICKS * 1e6 / sent, "system_us": (after[1] - before[1]) / TICKS * 1e6 / sent}
    counter = subprocess.Popen(["perf", "stat", "-x", ",", "-e", ",".join(events), "-p", str(proc.pid)],
                               stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    counted = load(port, origin_port, requests // 4, conns)
    time.sleep(0.5)
    counter.send_signal(2)
    _, err = counter.communicate(timeout=30)
    counts = {}
    for line in err.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[0].strip().isdigit():
            counts[parts[2].split(":")[-1]] = int(parts[0])
    for column, members in COLUMNS.items():
        row[column] = sum(counts.get(member, 0) for member in members) / counted
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", action="append", required=True, help="a lookout binary (repeat to compare)")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--conns", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("perf"):
        sys.exit("counts.py needs root and perf (Debian: linux-perf) for its uprobes")
    work = args.work or tempfile.mkdtemp(prefix="lookout-counts-")
    events = add_probes()
    try:
        _, origin_port, https_port = start_nginx(work, 1)
        running = []
        for index, binary in enumerate(args.bin):
            log = os.path.join(work, f"log{index}.jsonl")
            running.append(start_lookout(f"lookout{index}", os.path.abspath(binary), work, https_port, f'  path: "{log}"'))
        rows = {binary: [] for binary in args.bin}
        for round_number in range(args.rounds):
            order = list(range(len(args.bin)))
            if round_number % 2:
                order.reverse()
            for index in order:
                proc, port = running[index]
                rows[args.bin[index]].append(measure(proc, port, origin_port, events, args.requests, args.conns))
        print(f"{'build':<36} {'user µs':>8} {'sys µs':>7} {'malloc':>7} {'allocObj':>9} {'retain':>7} {'release':>8}"
              f"   (per request, medians of {args.rounds} rounds of {args.requests})")
        for binary, results in rows.items():
            med = {key: statistics.median(r[key] for r in results) for key in results[0]}
            print(f"{binary:<36} {med['user_us']:>8.2f} {med['system_us']:>7.2f} {med['malloc']:>7.1f} "
                  f"{med['swift_allocObject']:>9.1f} {med['swift_retain']:>7.1f} {med['swift_release']:>8.1f}")
    finally:
        stop_all()
        remove_probes(events)


if __name__ == "__main__":
    main()
