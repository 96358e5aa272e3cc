#!/usr/bin/env python3
"""Bulk HTTPS download throughput, direct or through a proxy's CONNECT tunnel
(part of Tests/bench/run.sh).

PARALLEL workers each run `curl` in a loop (one 256 MiB-ish download per curl
invocation, so each transfer opens its own tunnel) until DURATION seconds have
passed; a worker always completes at least one transfer. Throughput = bytes of
all completed transfers / wall time from start until the last transfer ended.
Prints one JSON object on stdout. Python stdlib only.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="https URL of the large file")
    ap.add_argument("--proxy", default="", help="http://127.0.0.1:PORT (empty = direct)")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--expect-bytes", type=int, default=0)
    args = ap.parse_args()

    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    cmd = ["curl", "-sS", "-k", "--http1.1", "--max-time", "300", "-o", "/dev/null",
           "-w", "%{http_code} %{size_download}\n"]
    if args.proxy:
        cmd += ["-p", "-x", args.proxy]
    cmd.append(args.url)

    lock = threading.Lock()
    totals = {"bytes": 0, "transfers": 0, "failures": 0, "errors": []}
    start = time.monotonic()
    deadline = start + args.duration

    def worker():
        while True:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            ok = False
            if p.returncode == 0:
                try:
                    code, size = p.stdout.split()
                    size = int(size)
                    ok = code == "200" and (not args.expect_bytes or size == args.expect_bytes)
                except ValueError:
                    pass
            with lock:
                if ok:
                    totals["bytes"] += size
                    totals["transfers"] += 1
                else:
                    totals["failures"] += 1
                    if len(totals["errors"]) < 3:
                        totals["errors"].append(f"rc={p.returncode} out={p.stdout.strip()!r} "
                                                f"err={p.stderr.strip()[:200]!r}")
                    if totals["failures"] > 4 * args.parallel:
                        return
            if time.monotonic() >= deadline:
                return

    threads = [threading.Thread(target=worker) for _ in range(args.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    totals["elapsed_s"] = round(elapsed, 3)
    totals["mib_per_s"] = round(totals["bytes"] / elapsed / 2**20, 1) if totals["bytes"] else 0.0
    json.dump(totals, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
