#!/usr/bin/env python3
"""Alternating A/B rounds between two Lookout builds (or one build with two configurations), the
method every speed change's commit message reports. Single runs on this 2-core machine swing by ±15 %, so one run per build compares the
machine's phases, not the builds; rounds that alternate, with the slot order swapped every
round, and the median of the per-round ratios, do compare the builds.

Both Lookouts run side by side for the whole measurement, behind the same nginx on 127.0.0.1:
  * `--row h1`: plain HTTP/1.1 keep-alive, `wrk -t2 -c64` (`--conns`) of 1 KiB through the proxy,
    summary log on;
  * `--row close`: the same with `Connection: close`, a new client connection per request (as
    `make bench`'s "new connection per request" row);
  * `--row h2`: HTTP/2 with interception, `h2load -t1 -c1 -m100` (`--streams`) of 1 KiB through the
    floor relay in `connect=` mode, as `make bench`'s HTTP/2 rows do;
  * `--row ws`: cleartext WebSockets through CONNECT, `--conns` of them (4 is a good number here)
    sending 64 KiB masked frames to a sink (`ws_bench.py`); "req/s" is MiB/s, CPU per MiB.
Each round prints both builds' requests per second and their CPU time per request (user and
system, every thread, from /proc/PID/task/*/stat); the end prints the medians, the paired B/A
ratio of the rounds' throughputs and CPU, and in how many rounds B was ahead. `--per-thread`
also splits each build's CPU per request by thread name, as medians over the rounds (the event
loops are `lookout.poll`, Dispatch's workers — the monitors' queues — show as `-qos.overcommit`,
and threads Lookout starts itself, such as the OTLP exporter's, carry the binary's name). The logs
are truncated between rounds (the writer follows a truncation), so long runs do not fill the disk.

  python3 Tests/bench/ab.py --work /tmp/ab --a /tmp/lookout-before --b .build/release/lookout --row h2 --rounds 12
  python3 Tests/bench/ab.py --work /tmp/ab --a .build/release/lookout --b .build/release/lookout \
      --b-config 'event_loop_spin_us: 0' --row h2 --streams 1 --rounds 8
"""
import argparse
import json
import os
import re
import statistics
import sys
import threading
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import LOOPBACK, run_main, start_nginx, stop_all, wrk  # noqa: E402
import bench  # noqa: E402
from h2_bench import h2load, start_relay  # noqa: E402
import tls_bench  # noqa: E402

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def thread_ticks(pid):
    """User and system ticks so far of each thread of `pid`, by thread name (`lookout.poll.1` and
    `lookout.poll.0` both count as `lookout.poll`)."""
    ticks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        name = re.sub(r"\.\d+$", "", name)
        user, system = ticks.get(name, (0, 0))
        ticks[name] = (user + int(fields[11]), system + int(fields[12]))
    return ticks


def cpu_seconds(pid):
    """User and system time of the process `pid` (all its threads) so far, in seconds."""
    user, system = bench._tree_user_system_ticks(pid)
    return user / TICKS_PER_SECOND, system / TICKS_PER_SECOND


class Build:
    """One Lookout under test: its process, where to send load, its log."""

    def __init__(self, label, process, port, log_path):
        self.label, self.process, self.port, self.log_path = label, process, port, log_path
        self.rounds = []  # (requests per second, user µs per request, system µs per request)
        self.threads = []  # per round: {thread name: (user µs, system µs) per request}

    def measure(self, load, warm_up):
        """One round; the CPU time counts from the end of the load's `warm_up` seconds, whose
        requests the load tool leaves out of its count too."""
        start = {}
        pid = self.process.popen.pid
        timer = threading.Timer(warm_up, lambda: start.update(cpu=cpu_seconds(pid), threads=thread_ticks(pid)))
        timer.start()
        result = load(self)
        timer.join()
        user0, system0 = start["cpu"]
        user1, system1 = cpu_seconds(pid)
        threads1 = thread_ticks(pid)
        if "failed" in result:
            raise RuntimeError(f"{self.label}: {result['failed']}")
        requests = result["requests"]
        self.rounds.append((result["rps"], (user1 - user0) * 1e6 / requests, (system1 - system0) * 1e6 / requests))
        per_request = 1e6 / TICKS_PER_SECOND / requests
        self.threads.append({name: ((user - start["threads"].get(name, (0, 0))[0]) * per_request,
                                    (system - start["threads"].get(name, (0, 0))[1]) * per_request)
                             for name, (user, system) in threads1.items()})
        open(self.log_path, "w").close()
        return self.rounds[-1]


def start_h1(args, work):
    _, http_port, https_port = start_nginx(work, 1)
    builds = []
    for label, binary, extra in (("A", args.a, args.a_config), ("B", args.b, args.b_config)):
        log_path = os.path.join(work, f"lookout-{label}.jsonl")
        process, port = bench.start_lookout(f"lookout-{label}", binary, work, https_port,
                                            f'  path: "{log_path}"', extra.replace("\\n", "\n"))
        builds.append(Build(label, process, port, log_path))

    headers = ("Connection: close",) if args.row == "close" else ()

    def load(build):
        target = types.SimpleNamespace(proxied=True, port=build.port, key=build.label)
        return wrk(target, http_port, "/1k", args.conns, args.duration, headers=headers)
    return builds, load, 0


def start_h2(args, work):
    _, _, https_port = start_nginx(work, 1, http2=True)
    certificate = os.path.join(work, "nginx", "cert.pem")
    builds = []
    for label, binary, extra in (("A", args.a, args.a_config), ("B", args.b, args.b_config)):
        interception = 'interception:\n  hosts: ["**"]\n' + extra.replace("\\n", "\n")
        process, port, _ = tls_bench.start_lookout(f"lookout-{label}", binary, work, https_port, certificate,
                                                   interception)
        relay = start_relay(work, f"relay-{label}", port, connect=f"{LOOPBACK}:{https_port}")
        build = Build(label, process, relay, os.path.join(work, f"lookout-{label}.jsonl"))
        builds.append(build)

    def load(build):
        result = h2load(build.port, "/1k", args.streams, args.duration)
        if "failed" not in result:
            result["requests"] = result["succeeded"]
        return result
    return builds, load, 1  # h2load's --warm-up-time=1


def start_ws(args, work):
    import subprocess
    port_file = os.path.join(work, "ws-sink.port")
    sink = subprocess.Popen([sys.executable, os.path.join(HERE, "ws_bench.py"), "sink", "--port-file", port_file])
    for _ in range(100):
        if os.path.exists(port_file):
            break
        threading.Event().wait(0.05)
    sink_port = int(open(port_file).read())
    builds = []
    for label, binary, extra in (("A", args.a, args.a_config), ("B", args.b, args.b_config)):
        log_path = os.path.join(work, f"lookout-{label}.jsonl")
        process, port = bench.start_lookout(f"lookout-{label}", binary, work, sink_port, f'  path: "{log_path}"',
                                            extra.replace("\\n", "\n"))
        builds.append(Build(label, process, port, log_path))

    def load(build):
        out = subprocess.run([sys.executable, os.path.join(HERE, "ws_bench.py"), "load", "--proxy", str(build.port),
                              "--origin", str(sink_port), "--conns", str(args.conns), "--duration", str(args.duration)],
                             capture_output=True, text=True, timeout=args.duration + 60)
        if out.returncode != 0:
            return {"failed": out.stderr[-2000:]}
        result = json.loads(out.stdout)
        return {"rps": result["mib_per_s"], "requests": max(1, result["bytes"] >> 20)}
    return builds, load, 0, sink


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="a directory that does not exist yet")
    ap.add_argument("--a", required=True, help="the Lookout binary measured as A (the baseline)")
    ap.add_argument("--b", required=True, help="the Lookout binary measured as B")
    ap.add_argument("--a-config", default="", help="YAML appended to A's configuration")
    ap.add_argument("--b-config", default="", help="YAML appended to B's configuration")
    ap.add_argument("--row", choices=("h1", "close", "h2", "ws"), default="h1")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--duration", type=int, default=4, help="seconds per round and build")
    ap.add_argument("--conns", type=int, default=64, help="wrk connections (h1)")
    ap.add_argument("--streams", type=int, default=100, help="concurrent streams on one connection (h2)")
    ap.add_argument("--per-thread", action="store_true", help="also split CPU per request by thread name")
    args = ap.parse_args()
    if os.path.exists(args.work):
        sys.exit(f"--work {args.work} exists; give a new directory")
    os.makedirs(args.work)
    try:
        sink = None
        if args.row == "ws":
            builds, load, warm_up, sink = start_ws(args, args.work)
        else:
            builds, load, warm_up = (start_h2 if args.row == "h2" else start_h1)(args, args.work)
        for number in range(args.rounds):
            order = builds if number % 2 == 0 else builds[::-1]
            for build in order:
                build.measure(load, warm_up)
            a, b = builds[0].rounds[-1], builds[1].rounds[-1]
            print(f"round {number + 1:2}: A {a[0]:9,.0f} req/s {a[1] + a[2]:6.2f} µs   "
                  f"B {b[0]:9,.0f} req/s {b[1] + b[2]:6.2f} µs   B/A {b[0] / a[0]:.3f}", flush=True)
        report(builds)
        if args.per_thread:
            report_threads(builds)
    finally:
        if sink is not None:
            sink.kill()
        stop_all()


def report(builds):
    a, b = builds[0].rounds, builds[1].rounds
    throughput = [y[0] / x[0] for x, y in zip(a, b)]
    cpu = [(y[1] + y[2]) / (x[1] + x[2]) for x, y in zip(a, b)]
    for build in builds:
        rounds = build.rounds
        print(f"{build.label}: median {statistics.median(r[0] for r in rounds):,.0f} req/s; CPU per request "
              f"{statistics.median(r[1] for r in rounds):.2f} user + {statistics.median(r[2] for r in rounds):.2f} "
              f"system µs")
    print(f"paired B/A: throughput {statistics.median(throughput):.3f} (B ahead in {sum(r > 1 for r in throughput)} "
          f"of {len(throughput)} rounds), CPU per request {statistics.median(cpu):.3f}")


def report_threads(builds):
    """Each build's CPU per request by thread name: medians over the rounds, busiest first."""
    for build in builds:
        names = sorted({name for round_ in build.threads for name in round_},
                       key=lambda name: -statistics.median(sum(r.get(name, (0, 0))) for r in build.threads))
        for name in names:
            user = statistics.median(r.get(name, (0, 0))[0] for r in build.threads)
            system = statistics.median(r.get(name, (0, 0))[1] for r in build.threads)
            if user + system >= 0.01:
                print(f"{build.label}  {name:20} {user:6.2f} user + {system:5.2f} system µs per request")


if __name__ == "__main__":
    run_main(main)
