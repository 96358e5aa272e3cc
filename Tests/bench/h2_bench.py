#!/usr/bin/env python3
"""The HTTP/2 rows of the Lookout benchmark (run by Tests/bench/run.sh after the TLS rows).

On 127.0.0.1, in one run: h2load (Debian nghttp2-client) against nginx's TLS port with http2,
  * direct,
  * through the floor relay (floor_relay.c, bytes only: what a second loopback hop allows),
  * through Lookout: the floor relay in `connect=` mode sends CONNECT first, then Lookout
    intercepts (h2 toward h2load, h2 toward nginx over its pooled upstream connection, summary
    log on),
  * through mitmproxy (mitmdump, regular mode, h2 on both sides), the same way,
  * through nghttpx (Debian nghttp2-proxy), the reference HTTP/2 proxy in C on the same nghttp2:
    a reverse proxy terminating TLS and h2 toward h2load and speaking h2 over TLS to nginx, with
    no observation at all; behind the plain floor relay, so it has the same hops as Lookout. It
    shows what terminating and re-originating h2 costs on this machine, whatever else a proxy does,
at 1 and 100 concurrent streams on one connection (1 KiB responses), and 10 streams of 1 MiB.
With --rounds N (BENCH_ROUNDS) every row is measured N times with the targets interleaved and
each cell is the median run. Appends a Markdown section to --out.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import (FLOOR, LOOPBACK, Proc, free_port, log, median_run, run, run_main, start_nginx,  # noqa: E402
                   stop_all, wait_port)
from bench import start_nghttpx  # noqa: E402
from tls_bench import fmt, ratio, start_lookout  # noqa: E402


def start_relay(work, name, to_port, connect=None):
    binary = os.path.join(work, "floor_relay")
    if not os.path.exists(binary):
        p = run(["cc", "-O2", "-Wall", "-pthread", "-o", binary, FLOOR], timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"cc floor_relay.c failed:\n{p.stderr}")
    port = free_port()
    extra = ["0", f"connect={connect}"] if connect else []
    proc = Proc(name, [binary, str(port), str(to_port)] + extra, work)
    if not wait_port(port, 10, proc):
        raise RuntimeError(f"{name} did not start:\n{proc.tail()}")
    return port


def start_mitmproxy(work):
    """mitmdump in regular (forward proxy) mode: intercepts CONNECT, speaks h2 on both sides."""
    mitmdump = shutil.which("mitmdump")
    if not mitmdump:
        return None, "mitmdump not found (pip install mitmproxy)"
    port = free_port()
    confdir = os.path.join(work, "mitmproxy")
    os.makedirs(confdir, exist_ok=True)
    proc = Proc("mitmproxy", [mitmdump, "--listen-host", LOOPBACK, "--listen-port", str(port), "--set",
                              f"confdir={confdir}", "--ssl-insecure", "--quiet"], work)
    if not wait_port(port, 30, proc):
        return None, f"mitmdump did not start: {proc.tail()}"
    return port, None


def h2load(port, path, streams, duration, connections=1):
    cmd = ["h2load", "-t", "1", "-c", str(connections), "-m", str(streams), "-D", str(duration),
           "--warm-up-time=1", f"https://{LOOPBACK}:{port}{path}"]
    try:
        p = run(cmd, timeout=duration + 120)
    except subprocess.TimeoutExpired:
        return {"failed": "h2load timed out"}
    out = p.stdout
    finished = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", out)
    requests = re.search(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
    traffic = re.search(r"traffic: \S+ \((\d+)\) total", out)
    if not (finished and requests and traffic):
        return {"failed": f"h2load rc={p.returncode}: {(p.stderr or out).strip()[-300:]}"}
    seconds = float(finished.group(1))
    result = {"rps": float(finished.group(2)), "seconds": seconds,
              "mib_s": int(traffic.group(1)) / seconds / 2**20 if seconds else 0.0,
              "succeeded": int(requests.group(2)), "errors": int(requests.group(3)) + int(requests.group(4))}
    if result["succeeded"] == 0:
        result["failed"] = "no request succeeded: " + out.strip()[-300:]
    elif result["errors"]:
        result["failed"] = f"{result['errors']} requests failed or errored"
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lookout", required=True)
    ap.add_argument("--duration", type=int, default=int(os.environ.get("BENCH_DURATION", "10")))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "1")))
    args = ap.parse_args()
    D = max(1, args.duration)
    work = os.path.join(args.work, "h2")
    os.makedirs(work, exist_ok=True)
    rows = []
    notes = []
    try:
        log("HTTP/2: starting nginx (TLS with http2)")
        _, _, https_port = start_nginx(work, 1, http2=True)
        origin_cert = os.path.join(work, "nginx", "cert.pem")
        authority = f"{LOOPBACK}:{https_port}"
        log("HTTP/2: starting Lookout (interception on, summary log on)")
        _, lookout_port, _ = start_lookout("lookout-h2", args.lookout, work, https_port, origin_cert,
                                           'interception:\n  hosts: ["**"]\n')
        targets = {"direct": https_port, "floor": start_relay(work, "floor-h2", https_port),
                   "lookout": start_relay(work, "relay-lookout", lookout_port, connect=authority)}
        mitm_port, problem = start_mitmproxy(work)
        if mitm_port:
            targets["mitmproxy"] = start_relay(work, "relay-mitmproxy", mitm_port, connect=authority)
        else:
            notes.append(f"- mitmproxy: {problem}")
        nghttpx_port, problem, _ = start_nghttpx(work, https_port, backend_proto="h2", workers=1,
                                              tls=(os.path.join(work, "nginx", "key.pem"), origin_cert))
        if nghttpx_port:
            targets["nghttpx"] = start_relay(work, "relay-nghttpx", nghttpx_port)
        else:
            notes.append(f"- nghttpx: {problem}")
        time.sleep(1)
        rounds = max(1, args.rounds)

        def row(label, unit, key, path, streams):
            runs = {who: [] for who in targets}
            for round_number in range(rounds):
                suffix = f", round {round_number + 1}/{rounds}" if rounds > 1 else ""
                for who, port in targets.items():
                    log(f"HTTP/2: {label}{suffix}: {who}")
                    runs[who].append(h2load(port, path, streams, D))
                    time.sleep(1)
            rows.append((label, unit, key, {who: median_run(r, key) for who, r in runs.items()}))

        row("1 KiB, 1 stream on one connection", "req/s", "rps", "/1k", 1)
        row("1 KiB, 100 concurrent streams on one connection", "req/s", "rps", "/1k", 100)
        row("1 MiB, 10 concurrent streams on one connection", "MiB/s", "mib_s", "/1m", 10)
    finally:
        stop_all()

    how_often = f"each cell the median of {rounds} interleaved rounds" if rounds > 1 else "one run each"
    out = ["", f"## HTTP/2 ({how_often})", "",
           "| | direct | through the floor relay | Lookout | mitmproxy | nghttpx (reference, no observation) | "
           "Lookout / direct | Lookout / floor | Lookout / mitmproxy | nghttpx / direct | Lookout / nghttpx |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, unit, key, r in rows:
        mitm, reference = r.get("mitmproxy"), r.get("nghttpx")
        out.append(f"| {label} ({unit}) | {fmt(r['direct'], key)} | {fmt(r['floor'], key)} | {fmt(r['lookout'], key)} | "
                   f"{fmt(mitm, key) if mitm else '–'} | {fmt(reference, key) if reference else '–'} | "
                   f"{ratio(r['direct'], r['lookout'], key)} | {ratio(r['floor'], r['lookout'], key)} | "
                   f"{ratio(mitm, r['lookout'], key) if mitm else '–'} | "
                   f"{ratio(r['direct'], reference, key) if reference else '–'} | "
                   f"{ratio(reference, r['lookout'], key) if reference else '–'} |")
        every = [r.get(who) for who in ("direct", "floor", "lookout", "mitmproxy", "nghttpx")]
        if any(isinstance(x, dict) and x.get("rounds") for x in every):
            out.append("| … every round | " + " | ".join(
                " / ".join("failed" if v is None else f"{v:,.0f}" for v in x["rounds"])
                if isinstance(x, dict) and x.get("rounds") else "–" for x in every) + " | | | | | |")
    out += ["", "Goals (Lookout intercepting h2 toward an h2 origin, summary log on):", "",
            "| row | ≥ 0.5× direct | ≥ 10× mitmproxy |", "|---|---|---|"]
    for label, unit, key, r in rows:
        cells = []
        for other, bound in (("direct", 0.5), ("mitmproxy", 10)):
            try:
                value = r["lookout"][key] / r[other][key]
                cells.append(f"{value:.2f}× {'yes' if value >= bound else '**no**'}")
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("—")
        out.append(f"| {label} | {cells[0]} | {cells[1]} |")
    out += ["",
            "- Load: `h2load -t 1 -c 1 -m STREAMS -D DURATION --warm-up-time=1` (one connection).",
            "- Lookout and mitmproxy are reached through `floor_relay connect=HOST:PORT` (h2load cannot send "
            "CONNECT): the relay's hop is in both, as it is in the floor column.",
            "- mitmproxy: `mitmdump` in regular mode with `--ssl-insecure`, HTTP/2 on both sides (its default).",
            "- nghttpx: `nghttpx --workers=1 --frontend=… --backend=HOST,PORT;;proto=h2;tls --insecure` with "
            "nginx's certificate, behind the plain floor relay. It is the bound for an h2-terminating proxy "
            "here: two TLS sessions and two HTTP/2 sessions per exchange, and nothing else (no events, no "
            "log, no policies). A row where nghttpx / direct is below 0.5 cannot reach the direct goal "
            "by tuning Lookout alone.",
            *notes, ""]
    for label, unit, key, r in rows:
        for who, result in r.items():
            if isinstance(result, dict) and "failed" in result:
                out.append(f"- {label}, {who}: {result['failed']}")
    text = "\n".join(out) + "\n"
    with open(args.out, "a") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    run_main(main)
