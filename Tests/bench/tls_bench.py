#!/usr/bin/env python3
"""The TLS rows of the Lookout benchmark (run by Tests/bench/run.sh after bench.py).

On 127.0.0.1, in one run, against nginx's TLS port (self-signed certificate for 127.0.0.1):
  1. intercepted keep-alive: 64 connections CONNECT through Lookout (interception on, summary
     log on), TLS with Lookout's CA, then GET /1k in a loop      vs the same straight to nginx
  2. new TLS connection per request (16 connections): CONNECT + handshake + one GET each
  3. intercepted bulk: 4 downloads of /big through intercepted tunnels vs straight, then one
     download alone (the per-chunk cost that four hide)
  4. new upstream TLS handshakes: wrk sends absolute-form https:// requests to a Lookout with
     no upstream pooling, so each request opens (and resumes) an upstream TLS session; the
     direct figure is new connections with session resumption straight to nginx.
The keep-alive and bulk rows also run the client's TLS through the floor relay (floor_relay.c,
a C byte relay with no HTTP in front of nginx's TLS port): the most a second loopback hop
allows, which Lookout's interception (two TLS sessions, HTTP in between) is compared with; and
through nghttpx (Debian nghttp2-proxy), the reference TLS-terminating proxy in C: TLS from the
client, HTTP/1.1 over pooled TLS to nginx, nothing observed. It is what two TLS sessions and
HTTP in between cost on this machine, whatever else a proxy does.
With --rounds N (BENCH_ROUNDS) every row is measured N times with the targets interleaved and
each cell is the median run.
The load client is tls_load.c (compiled here with cc; wrk cannot speak through CONNECT).
Appends a Markdown section to --out.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import (LOOPBACK, Proc, Target, log, median_run, run, run_main, start_floor, start_nghttpx,  # noqa: E402
                   start_nginx, stop_all, wait_port, wrk)


def build_client(work):
    binary = os.path.join(work, "tls_load")
    p = run(["cc", "-O2", "-Wall", "-o", binary, os.path.join(HERE, "tls_load.c"), "-lssl", "-lcrypto", "-lpthread"],
            timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"cc tls_load.c failed:\n{p.stderr}")
    return binary


def start_lookout(name, lookout, work, https_port, origin_cert, extra):
    state = os.path.join(work, f"{name}-state")
    conf_path = os.path.join(work, f"{name}.yaml")
    with open(conf_path, "w") as f:
        f.write(f"""listen: ["{LOOPBACK}:0"]
state_dir: "{state}"
connect:
  allowed_ports: [{https_port}]
trust:
  system_roots: false
  ca_files: ["{origin_cert}"]
log:
  path: "{os.path.join(work, name + '.jsonl')}"
{extra}""")
    p = run([lookout, "config", "check", conf_path], timeout=30)
    if p.returncode != 0:
        raise RuntimeError(f"lookout config check failed for {conf_path}:\n{p.stdout}{p.stderr}")
    proc = Proc(name, [lookout, "run", "--config", conf_path], work)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.popen.poll() is None:
        with open(proc.stderr_path, errors="replace") as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m and wait_port(int(m.group(1)), 10, proc):
            return proc, int(m.group(1)), os.path.join(state, "ca.pem")
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not start:\n{proc.tail()}")


def tls_load(binary, connect_port, cafile, mode, conns, duration, path="/1k", tunnel=None, resume=False):
    cmd = [binary, "--connect", f"{LOOPBACK}:{connect_port}", "--sni", LOOPBACK, "--cafile", cafile,
           "--mode", mode, "--conns", str(conns), "--duration", str(duration), "--path", path]
    if tunnel:
        cmd += ["--tunnel", tunnel]
    if resume:
        cmd.append("--resume")
    try:
        p = run(cmd, timeout=duration + 600)
    except subprocess.TimeoutExpired:
        return {"failed": "tls_load timed out"}
    m = re.search(r"^BENCHJSON (\{.*\})$", p.stdout, re.M)
    if not m:
        return {"failed": f"tls_load rc={p.returncode}: {p.stderr.strip()[-300:]}"}
    r = json.loads(m.group(1))
    r["rps"] = r["requests"] / r["seconds"] if r["seconds"] else 0.0
    r["mib_s"] = r["bytes"] / r["seconds"] / 2**20 if r["seconds"] else 0.0
    return r


def fmt(r, key, digits=0):
    if not isinstance(r, dict) or "failed" in r:
        return "failed"
    v = r.get(key)
    return "?" if v is None else f"{v:,.{digits}f}"


def ratio(a, b, key):
    try:
        return f"{b[key] / a[key]:.2f}"
    except (KeyError, TypeError, ZeroDivisionError):
        return "–"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lookout", required=True)
    ap.add_argument("--duration", type=int, default=int(os.environ.get("BENCH_DURATION", "10")))
    ap.add_argument("--big-mib", type=int, default=int(os.environ.get("BENCH_BIG_MIB", "256")))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "1")))
    args = ap.parse_args()
    D = max(1, args.duration)
    work = os.path.join(args.work, "tls")
    os.makedirs(work, exist_ok=True)
    rows = []
    notes = []
    try:
        client = build_client(work)
        log("TLS: starting nginx origin")
        _, http_port, https_port = start_nginx(work, args.big_mib)
        origin_cert = os.path.join(work, "nginx", "cert.pem")
        authority = f"{LOOPBACK}:{https_port}"
        log("TLS: starting Lookout (interception on, summary log on)")
        _, intercept_port, lookout_ca = start_lookout("lookout-intercept", args.lookout, work, https_port, origin_cert,
                                                      'interception:\n  hosts: ["**"]\n')
        log("TLS: starting Lookout (no upstream pooling, summary log on)")
        _, fresh_port, _ = start_lookout("lookout-no-pool", args.lookout, work, https_port, origin_cert,
                                         "pool:\n  max_idle_per_origin: 0\n")
        time.sleep(1)

        _, floor_port, _, _, _ = start_floor(work, http_port, https_port)
        log("TLS: starting nghttpx (reference: TLS on both sides, HTTP/1.1, two workers)")
        reference_port, problem, _ = start_nghttpx(work, https_port, backend_proto="http/1.1", workers=2,
                                                tls=(os.path.join(work, "nginx", "key.pem"), origin_cert))
        if problem:
            notes.append(f"- nghttpx: {problem}")
        rounds = max(1, args.rounds)

        def row(label, unit, key, mode, conns, path="/1k", extra=(), floor=False):
            runs = {"direct": [], "floor": [], "lookout": [], "nghttpx": []}
            for round_number in range(rounds):
                suffix = f", round {round_number + 1}/{rounds}" if rounds > 1 else ""
                log(f"TLS: {label}{suffix}: direct")
                runs["direct"].append(tls_load(client, https_port, origin_cert, mode, conns, D, path))
                time.sleep(1)
                if floor:
                    log(f"TLS: {label}{suffix}: through the floor relay")
                    runs["floor"].append(tls_load(client, floor_port, origin_cert, mode, conns, D, path))
                    time.sleep(1)
                log(f"TLS: {label}{suffix}: Lookout")
                runs["lookout"].append(tls_load(client, intercept_port, lookout_ca, mode, conns, D, path,
                                                tunnel=authority))
                time.sleep(1)
                if floor and reference_port:
                    # The client speaks TLS straight to nghttpx (no CONNECT): the same hops as Lookout.
                    log(f"TLS: {label}{suffix}: nghttpx")
                    runs["nghttpx"].append(tls_load(client, reference_port, origin_cert, mode, conns, D, path))
                    time.sleep(1)
            medians = {who: median_run(r, key) if r else None for who, r in runs.items()}
            rows.append((label, unit, key, medians["direct"], medians["floor"], medians["lookout"], extra,
                         medians["nghttpx"]))

        row("intercepted HTTPS, 1 KiB keep-alive, 64 conns", "req/s", "rps", "keepalive", 64,
            extra=("p50_us", "p99_us"), floor=True)
        row("new TLS connection per request (CONNECT + handshake + 1 KiB), 16 conns", "req/s", "rps", "newconn", 16)
        row(f"intercepted bulk, 4 x {args.big_mib} MiB", "MiB/s", "mib_s", "bulk", 4, path="/big", floor=True)
        row(f"intercepted bulk, one stream ({args.big_mib} MiB each)", "MiB/s", "mib_s", "bulk", 1, path="/big",
            floor=True)

        log("TLS: new upstream handshakes: direct (new connection + resumed session per request)")
        direct = tls_load(client, https_port, origin_cert, "newconn", 16, D, resume=True)
        time.sleep(1)
        log("TLS: new upstream handshakes: Lookout (absolute-form https://, no pooling)")
        target = Target("lookout_no_pool", "Lookout (no pooling)", fresh_port, None, True)
        proxied = wrk(target, https_port, "/1k", 16, D, scheme="https")
        rows.append(("new upstream TLS handshakes (absolute-form https://, pooling off), 16 conns", "req/s", "rps",
                     direct, None, proxied, (), None))
    finally:
        stop_all()

    how_often = (f"each cell the median of {rounds} interleaved rounds" if rounds > 1 else "one run each")
    out = ["", f"## TLS ({how_often})", "",
           "| | direct | through the floor relay | Lookout | nghttpx (reference, no observation) | "
           "Lookout / direct | Lookout / floor | nghttpx / direct | Lookout / nghttpx |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, unit, key, direct, floor, proxied, extra, reference in rows:
        def cells(a, b, k, show):
            return (show(a, k) if a else "–"), (ratio(a, b, k) if a else "–")
        floor_cell, floor_ratio = cells(floor, proxied, key, fmt)
        reference_cell, reference_ratio = cells(reference, proxied, key, fmt)
        out.append(f"| {label} ({unit}) | {fmt(direct, key)} | {floor_cell} | {fmt(proxied, key)} | {reference_cell} | "
                   f"{ratio(direct, proxied, key)} | {floor_ratio} | {ratio(direct, reference, key) if reference else '–'} | "
                   f"{reference_ratio} |")
        for k in extra:
            name = k.replace("_us", "")
            floor_cell, floor_ratio = cells(floor, proxied, k, fmt_ms)
            reference_cell, reference_ratio = cells(reference, proxied, k, fmt_ms)
            out.append(f"| … {name} latency (ms) | {fmt_ms(direct, k)} | {floor_cell} | {fmt_ms(proxied, k)} | "
                       f"{reference_cell} | {ratio(direct, proxied, k)} | {floor_ratio} | "
                       f"{ratio(direct, reference, k) if reference else '–'} | {reference_ratio} |")
        every = [(who, r) for who, r in (("direct", direct), ("floor", floor), ("Lookout", proxied),
                                         ("nghttpx", reference))
                 if isinstance(r, dict) and r.get("rounds")]
        if every:
            out.append(f"| … every round | " + " | ".join(
                " / ".join("failed" if v is None else f"{v:,.0f}" for v in r["rounds"]) if r and r.get("rounds")
                else "" for r in (direct, floor, proxied, reference)) + " | | | | |")
    goals = {"intercepted HTTPS, 1 KiB keep-alive": ("≥ 0.5× direct TLS", lambda d, f, p: (p, d), 0.5),
             "intercepted bulk, one stream": ("≥ 0.9× direct TLS through the floor relay", lambda d, f, p: (p, f), 0.9)}
    out += ["", "Goals (Lookout with interception and the summary log on):", "",
            "| goal | measured | met |", "|---|---|---|"]
    for label, unit, key, direct, floor, proxied, extra, _ in rows:
        for prefix, (goal, pick, bound) in goals.items():
            if not label.startswith(prefix):
                continue
            a, b = pick(direct, floor, proxied)
            try:
                r = a[key] / b[key]
                out.append(f"| {prefix} {goal} | {r:.2f}× | {'yes' if r >= bound else '**no**'} |")
            except (KeyError, TypeError, ZeroDivisionError):
                out.append(f"| {prefix} {goal} | — | — |")
    out += ["",
            "- Lookout: interception on for `**`, its CA trusted by the client, upstream trust evaluated against "
            "nginx's certificate (`trust.ca_files`), summary log written to a file.",
            "- Load client: `Tests/bench/tls_load.c` (OpenSSL, one thread per connection, certificates verified).",
            "- Through the floor relay: the same client's TLS to nginx, relayed by `Tests/bench/floor_relay.c` "
            "(bytes only, no HTTP, no TLS of its own): what a second loopback hop alone allows.",
            "- New upstream TLS handshakes: wrk (16 keep-alive connections) sends absolute-form `https://` requests; "
            "Lookout runs with `pool.max_idle_per_origin: 0`, so every request opens a new upstream TCP+TLS "
            "connection (TLS session resumed from Lookout's cache). Direct: a new connection with a resumed "
            "session per request, straight to nginx.",
            "- nghttpx (Debian nghttp2-proxy, the proxy in C that ships with nghttp2): `nghttpx --workers=2 "
            "--frontend=… --backend=HOST,PORT;;proto=http/1.1;tls --insecure` with nginx's certificate, no access "
            "log. The client speaks TLS to it directly (no CONNECT), so it has Lookout's hops: it terminates the "
            "client's TLS, reads HTTP/1.1 and relays it over a pooled TLS connection to nginx, and does nothing "
            "else (no events, no log, no policies). A row where nghttpx / direct is below a goal is bounded by "
            "what terminating TLS twice costs on this machine, not by Lookout.",
            *notes, ""]
    for label, unit, key, direct, floor, proxied, extra, reference in rows:
        for who, r in (("direct", direct), ("floor", floor), ("Lookout", proxied), ("nghttpx", reference)):
            if isinstance(r, dict) and ("failed" in r or r.get("errors")):
                problem = r.get("failed") or f"errors: {r['errors']}"
                out.append(f"- {label}, {who}: {problem}")
    text = "\n".join(out) + "\n"
    with open(args.out, "a") as f:
        f.write(text)
    print(text)


def fmt_ms(r, key):
    if not isinstance(r, dict) or key not in r:
        return "–"
    return f"{r[key] / 1000:.2f}"


if __name__ == "__main__":
    run_main(main)
