#!/usr/bin/env python3
"""The cache rows of the Lookout benchmark (run by Tests/bench/run.sh after the TLS rows).

On 127.0.0.1, in one run, against an nginx whose /c/ responses carry `Cache-Control: max-age=3600`
and whose /nostore/ responses carry `no-store`:
  1. cache hits, 1 KiB keep-alive at 64 connections: Lookout (cache on, summary log on) and
     Squid (memory cache on) serving /c/1k from their caches, vs nginx direct;
  2. cache hits, 1 MiB at 8 connections: the same for /c/1m;
  3. the cost of a miss: /nostore/1k through Lookout with the cache on (a lookup and a store
     decision per request) vs the cache off, in alternating rounds;
  4. the store at scale: 100,000 objects written into a store directory, then Lookout started on
     it — time until it listens, and its resident memory against the same start on an empty store.
With --rounds N (BENCH_ROUNDS) the throughput rows are measured N times, targets interleaved,
each cell the median run. Appends a Markdown section to --out.
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import (LOOPBACK, Proc, Target, log, median_run, run, run_main, start_nginx, start_squid,  # noqa: E402
                   stop_all, wait_port, wrk)

CACHING_LOCATIONS = r"""
        location ~ ^/c(/.*)$ { try_files $1 =404; expires 1h; }
        location ~ ^/nostore(/.*)$ { try_files $1 =404; add_header Cache-Control no-store; }
"""


def start_lookout(name, lookout, work, extra):
    conf_path = os.path.join(work, f"{name}.yaml")
    with open(conf_path, "w") as f:
        f.write(f"""listen: ["{LOOPBACK}:0"]
state_dir: "{os.path.join(work, name + '-state')}"
log:
  path: "{os.path.join(work, name + '.jsonl')}"
{extra}""")
    p = run([lookout, "config", "check", conf_path], timeout=30)
    if p.returncode != 0:
        raise RuntimeError(f"lookout config check failed for {conf_path}:\n{p.stdout}{p.stderr}")
    started = time.monotonic()
    proc = Proc(name, [lookout, "run", "--config", conf_path], work)
    pat = re.compile(r"listening on 127\.0\.0\.1:(\d+)")
    while time.monotonic() < started + 60:
        if proc.popen.poll() is not None:
            break
        with open(proc.stderr_path, errors="replace") as f:
            m = pat.search(f.read())
        if m:
            listening = time.monotonic() - started
            port = int(m.group(1))
            if wait_port(port, 10, proc):
                return proc, port, listening
            break
        time.sleep(0.01)
    raise RuntimeError(f"{name} did not report 'listening on 127.0.0.1:PORT':\n{proc.tail()}")


def start_squid_caching(work):
    """Squid with its memory cache on (no disk cache): the classic caching proxy at its fastest."""
    return start_squid(work, 443, name="squid-cache", cache="cache_mem 256 MB\nmaximum_object_size_in_memory 2 MB\n"
                       "maximum_object_size 2 MB\nmemory_cache_mode always")


def warm(port, origin_port, path):
    """One request through the proxy to store `path`; returns its Cache-Status / X-Cache."""
    p = run(["curl", "-sS", "-o", "/dev/null", "-D", "-", "-x", f"http://{LOOPBACK}:{port}",
             f"http://{LOOPBACK}:{origin_port}{path}"], timeout=30)
    return " ".join(line.strip() for line in p.stdout.splitlines()
                    if line.lower().startswith(("cache-status", "x-cache")))


# --------------------------------------------------------------------------- the store at scale

def fnv1a(data, basis):
    h = basis
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def object_name(url):
    key = url.encode()
    high = fnv1a(key, 0xcbf29ce484222325)
    low = fnv1a(key, 0x6c62272e07bb0142) ^ (high >> 29)
    return f"{high:016x}{low:016x}"


def fill_store(directory, count, body_size=1024):
    """Writes `count` objects in the store's file format (see ObjectFile.swift) without Lookout."""
    body = os.urandom(body_size)
    now = time.time()
    for i in range(count):
        url = f"http://{LOOPBACK}:9/object/{i}"
        meta = (f"url {url}\nrequest_time {now}\nresponse_time {now}\nstatus 200\nreason OK\n"
                f"field Cache-Control: max-age=3600\nfield Content-Type: application/octet-stream\n").encode()
        name = object_name(url)
        folder = os.path.join(directory, "objects", name[:2])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name + ".obj"), "wb") as f:
            f.write(b"LKCACHE1" + struct.pack("<QQQ", len(meta), len(body), fnv1a(meta, 0xcbf29ce484222325)))
            f.write(meta)
            f.write(body)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lookout", required=True)
    ap.add_argument("--duration", type=int, default=int(os.environ.get("BENCH_DURATION", "10")))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "1")))
    ap.add_argument("--objects", type=int, default=int(os.environ.get("BENCH_CACHE_OBJECTS", "100000")))
    args = ap.parse_args()
    D, rounds = max(1, args.duration), max(1, args.rounds)
    work = os.path.join(args.work, "cache")
    os.makedirs(work, exist_ok=True)
    notes = []
    results = {}
    try:
        log("cache rows: starting nginx with caching headers")
        nginx, http_port, _ = start_nginx(work, 1, server_extra=CACHING_LOCATIONS, name="nginx-cache")
        on, on_port, _ = start_lookout("lookout-cache-on", args.lookout, work, "cache:\n  enabled: true\n")
        off, off_port, _ = start_lookout("lookout-cache-off", args.lookout, work, "")
        squid, squid_port = start_squid_caching(work)
        targets = {
            "direct": Target("direct", "direct (nginx)", http_port, nginx.pid, False),
            "lookout": Target("lookout", "Lookout (cache on, log on)", on_port, on.pid, True),
            "squid": Target("squid", "Squid (memory cache)", squid_port, squid.pid, True),
        }
        for path in ("/c/1k", "/c/1m"):
            for key in ("lookout", "squid"):
                first = warm(targets[key].port, http_port, path)
                second = warm(targets[key].port, http_port, path)
                notes.append(f"{targets[key].label} {path}: first `{first}`, then `{second}`.")
        for tag, path, conns, metric in (("hit1k", "/c/1k", 64, "rps"), ("hit1m", "/c/1m", 8, "mib_s")):
            runs = {key: [] for key in targets}
            for r in range(rounds):
                for key, target in targets.items():
                    log(f"cache {tag} ({path}, c{conns}, {D}s){f', round {r + 1}/{rounds}' if rounds > 1 else ''}: "
                        f"{target.label}")
                    runs[key].append(wrk(target, http_port, path, conns, D, latency=True, work=work, tag=tag))
                    time.sleep(1)
            for key in targets:
                results[(tag, key)] = median_run(runs[key], metric)

        miss_targets = {
            "on": Target("on", "Lookout, cache on", on_port, on.pid, True),
            "off": Target("off", "Lookout, cache off", off_port, off.pid, True),
        }
        runs = {key: [] for key in miss_targets}
        for r in range(max(rounds, 2) * 2):
            for key in (("on", "off") if r % 2 == 0 else ("off", "on")):
                log(f"cache misses (/nostore/1k, c64, {D}s), round {r + 1}: {miss_targets[key].label}")
                runs[key].append(wrk(miss_targets[key], http_port, "/nostore/1k", 64, D, work=work, tag="miss"))
                time.sleep(1)
        for key in miss_targets:
            results[("miss", key)] = median_run(runs[key], "rps")
        for p in (on, off):
            p.stop()

        log(f"cache store at scale: writing {args.objects} objects")
        scale = os.path.join(work, "scale")
        store = os.path.join(scale, "store")
        t0 = time.monotonic()
        fill_store(store, args.objects)
        notes.append(f"Writing {args.objects} objects (1 KiB bodies) took {time.monotonic() - t0:.1f} s (Python).")
        os.makedirs(os.path.join(scale, "empty"), exist_ok=True)
        for label, path in (("empty", os.path.join(scale, "empty")), ("full", store)):
            # Twice: the first start also pulls the directory into the page cache.
            for attempt in range(2):
                proc, port, listening = start_lookout(f"lookout-scale-{label}-{attempt}", args.lookout, scale,
                                                      f"cache:\n  enabled: true\n  path: \"{path}\"\n")
                time.sleep(0.5)
                results[("scale", label, attempt)] = {"listening_s": listening, "rss_kib": rss_kib(proc.pid)}
                proc.stop()
    finally:
        log("stopping cache-row servers")
        stop_all()

    out = ["", "## Cache", ""]
    out.append(f"Same run, {D}-s wrk runs, {rounds} round(s) interleaved, medians. Lookout's summary log is on.")
    out.append("")
    out.append("| row | direct (nginx) | Lookout hits | Squid hits (memory) | Lookout / direct | Lookout / Squid |")
    out.append("|---|---|---|---|---|---|")
    for tag, label, metric, unit in (("hit1k", "1 KiB keep-alive, 64 conns", "rps", "req/s"),
                                     ("hit1m", "1 MiB, 8 conns", "mib_s", "MiB/s")):
        d, lo, sq = (results.get((tag, k), {}) for k in ("direct", "lookout", "squid"))
        def v(r):
            return r.get(metric) if "failed" not in r else None
        def f(x):
            return "failed" if x is None else f"{x:,.0f} {unit}"
        ratio_d = f"{v(lo) / v(d):.2f}×" if v(lo) and v(d) else "—"
        ratio_s = f"{v(lo) / v(sq):.2f}×" if v(lo) and v(sq) else "—"
        out.append(f"| {label} | {f(v(d))} | {f(v(lo))} | {f(v(sq))} | {ratio_d} | {ratio_s} |")
        for key in ("lookout", "direct", "squid"):
            r = results.get((tag, key), {})
            if "rounds" in r:
                notes.append(f"{tag} {key} rounds: {', '.join('failed' if x is None else f'{x:,.0f}' for x in r['rounds'])}")
            if r.get("errors"):
                notes.append(f"{tag} {key} errors: {r['errors']}")
    on_r, off_r = results.get(("miss", "on"), {}), results.get(("miss", "off"), {})
    if on_r.get("rps") and off_r.get("rps"):
        cost = 1 - on_r["rps"] / off_r["rps"]
        out.append("")
        out.append(f"Misses (`/nostore/1k`, 64 conns, alternating rounds): cache on {on_r['rps']:,.0f} req/s, "
                   f"cache off {off_r['rps']:,.0f} req/s: **the cache costs {cost:.1%} on a miss** (goal ≤ 5 %). "
                   f"Rounds on: {on_r.get('rounds')}, off: {off_r.get('rounds')}.")
    empty, full = results.get(("scale", "empty", 1)), results.get(("scale", "full", 1))
    if empty and full:
        index = (full["rss_kib"] - empty["rss_kib"]) if full["rss_kib"] and empty["rss_kib"] else None
        cold = results.get(("scale", "full", 0), {})
        out.append("")
        out.append(f"Store at scale: {args.objects:,} objects. Start-up until listening: "
                   f"**{full['listening_s']:.2f} s** (first start {cold.get('listening_s', float('nan')):.2f} s; "
                   f"empty store {empty['listening_s']:.2f} s; goal < 2 s). "
                   f"Resident memory {full['rss_kib']:,} KiB vs {empty['rss_kib']:,} KiB empty: "
                   f"**the index takes {index:,} KiB per {args.objects:,} objects**." if index is not None else "")
    out.append("")
    for n in notes:
        out.append(f"- {n}")
    out.append("")
    with open(args.out, "a") as f:
        f.write("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    run_main(main)
