#!/usr/bin/env python3
"""A long soak of mixed traffic through one Lookout (not run in CI): HTTP/1.1 keep-alive and a new
connection per request, blind CONNECT tunnels, intercepted HTTP/2, cache hits and misses, 20
`/events` subscribers, and a download that breaks mid-body and is resumed every minute. At the
end it prints requests and errors per kind, the proxy's RSS at 1 minute, half-way and the end
(flat within 5 % is the goal), its open descriptors before and after (back to the start), and
exchange records in the log against requests made.

  python3 Tests/bench/soak.py --lookout .build/release/lookout --minutes 30 --work /tmp/soak
"""
from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import random
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import origins  # noqa: E402
from origins import RawOrigin, ScriptedOrigin, read_head  # noqa: E402
from origins.h2 import H2Origin  # noqa: E402
from tls_pki import PKI  # noqa: E402

BREAKING = os.urandom(2_000_000)
counts: collections.Counter = collections.Counter()
lock = threading.Lock()
stop = threading.Event()
closers: list = []


def tally(kind: str, ok: bool):
    with lock:
        counts[(kind, "ok" if ok else "error")] += 1


def breaking_origin(conn, origin):
    """A 200 with an ETag that breaks after 500 kB; a Range request gets the rest as a 206."""
    head = read_head(conn).decode("latin-1")
    start = 0
    for line in head.split("\r\n"):
        if line.lower().startswith("range: bytes="):
            start = int(line.split("=", 1)[1].rstrip("-"))
    if start:
        part = BREAKING[start:]
        conn.sendall((f"HTTP/1.1 206 Partial Content\r\nETag: \"s\"\r\nContent-Length: {len(part)}\r\n"
                      f"Content-Range: bytes {start}-{len(BREAKING) - 1}/{len(BREAKING)}\r\n\r\n").encode() + part)
        return
    conn.sendall(f"HTTP/1.1 200 OK\r\nETag: \"s\"\r\nContent-Length: {len(BREAKING)}\r\n\r\n".encode()
                 + BREAKING[:500_000])
    time.sleep(0.02)
    conn.shutdown(socket.SHUT_RDWR)


def proxied(port: int, host: str, target_port: int, path: str, keep: http.client.HTTPConnection | None = None):
    conn = keep or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", f"http://{host}:{target_port}{path}")
    response = conn.getresponse()
    body = response.read()
    return conn, response.status, body


def loop(kind: str, body):
    while not stop.is_set():
        try:
            tally(kind, body())
        except Exception:  # noqa: BLE001 — every failure is counted, the soak goes on
            tally(kind, False)
            time.sleep(0.05)


def start_load(port: int, plain, cached, tls_origin, h2, breaking, ca: str, proxy_ca: str):
    keep = {"conn": None}

    def keepalive():
        try:
            keep["conn"], status, body = proxied(port, "127.0.0.1", plain.port, "/fixed/1024", keep["conn"])
        except Exception:
            keep["conn"] = None
            raise
        return status == 200 and len(body) == 1024

    def fresh():
        conn, status, _ = proxied(port, "127.0.0.1", plain.port, "/fixed/4096")
        conn.close()
        return status == 200

    def tunnel():
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        raw.sendall(f"CONNECT 127.0.0.1:{tls_origin.port} HTTP/1.1\r\nHost: 127.0.0.1:{tls_origin.port}\r\n\r\n".encode())
        assert raw.recv(4096).startswith(b"HTTP/1.1 200")
        context = ssl.create_default_context(cafile=ca)
        context.check_hostname = False
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /fixed/2048 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
        return data.startswith(b"HTTP/1.1 200") and len(data) > 2048

    def cache():
        conn, status, _ = proxied(port, "127.0.0.1", cached.port, f"/c/{random.randrange(200)}")
        conn.close()
        return status == 200

    def http2():
        result = subprocess.run(["curl", "-sS", "--http2", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                                 f"http://127.0.0.1:{port}", "--cacert", proxy_ca,
                                 f"https://localhost:{h2.port}/fixed/{1024 * 64}", f"https://localhost:{h2.port}/fixed/100"],
                                capture_output=True, text=True, timeout=60)
        return result.returncode == 0 and result.stdout == "200200"

    def subscriber():
        # No read timeout: a Python socket file cannot be read again after one timed out, so a
        # pause of the proxy longer than the timeout (a debugger attaching) would end the stream
        # on the client's side. The soak's end shuts the socket down, which ends the read.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/events?filter=status:2xx")
        sock = conn.sock  # the response closes `conn` (the stream ends the connection), not the socket
        response = conn.getresponse()
        sock.settimeout(None)
        with lock:
            closers.append(lambda: sock.shutdown(socket.SHUT_RDWR))
        while not stop.is_set():
            if not response.fp.readline():
                break
        conn.close()
        return response.status == 200

    def resumed():
        time.sleep(60)
        conn, status, body = proxied(port, "127.0.0.1", breaking.port, "/download")
        conn.close()
        return status == 200 and body == BREAKING

    closers.append(lambda: keep["conn"] and keep["conn"].close())
    threads = [threading.Thread(target=loop, args=(kind, body), daemon=True)
               for kind, body in [("keepalive", keepalive), ("new_connection", fresh), ("tunnel", tunnel),
                                  ("cache", cache), ("http2", http2), ("resumed", resumed)]]
    threads += [threading.Thread(target=loop, args=("events", subscriber), daemon=True) for _ in range(20)]
    for thread in threads:
        thread.start()
    return threads


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookout", required=True)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--work", required=True, help="a directory that does not exist yet")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True)
    pki = PKI(work / "pki")
    plain = origins.HTTPOrigin().start()
    tls_origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    h2 = H2Origin(tls=pki.good.tls).start()
    cached = ScriptedOrigin()
    for i in range(200):
        cached.route(f"/c/{i}", (200, {"Cache-Control": "max-age=20", "ETag": f'"{i}"'}, os.urandom(2048)))
    breaking = RawOrigin(breaking_origin).start()
    port_sock = socket.socket()
    port_sock.bind(("127.0.0.1", 0))
    port = port_sock.getsockname()[1]
    port_sock.close()
    log = work / "lookout.jsonl"
    config = {
        "listen": [f"127.0.0.1:{port}"], "state_dir": str(work / "state"), "log": {"path": str(log)},
        "connect": {"allowed_ports": [tls_origin.port, h2.port, 443]},
        "interception": {"hosts": ["localhost"]},
        "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]},
        "cache": {"enabled": True, "path": str(work / "cache")},
        "retry": {"rules": [{"hosts": ["**"], "resume": True}]},
        "pool": {"idle_timeout": 5},
    }
    (work / "lookout.yaml").write_text(json.dumps(config))
    subprocess.run([args.lookout, "ca", "init", "--state-dir", str(work / "state")], capture_output=True)
    proxy = subprocess.Popen([args.lookout, "run", "--config", str(work / "lookout.yaml")],
                             stdout=subprocess.DEVNULL, stderr=open(work / "stderr.txt", "w"))
    time.sleep(1.5)
    fds_start = len(os.listdir(f"/proc/{proxy.pid}/fd"))
    started = time.monotonic()
    start_load(port, plain, cached, tls_origin, h2, breaking, str(pki.root.cert), str(work / "state" / "ca.pem"))
    total = args.minutes * 60
    samples = {}
    for label, at in [("1 min", 60), ("half-way", total / 2), ("end", total)]:
        time.sleep(max(0, started + at - time.monotonic()))
        samples[label] = rss_kib(proxy.pid)
    stop.set()
    time.sleep(5)
    for close in closers:
        try:
            close()
        except OSError:
            pass  # already closed
    # Idle pooled upstream connections last pool.idle_timeout (set to 5 s here), client ones close with the clients.
    time.sleep(10)
    fds_end = len(os.listdir(f"/proc/{proxy.pid}/fd"))
    proxy.terminate()
    proxy.wait(30)
    records = sum(1 for line in log.read_text().splitlines() if '"event":"exchange"' in line)
    made = sum(v for (kind, _), v in counts.items() if kind not in ("events", "http2", "tunnel")) \
        + 2 * sum(v for (kind, _), v in counts.items() if kind == "http2") \
        + sum(v for (kind, _), v in counts.items() if kind == "tunnel")
    report = {
        "minutes": args.minutes,
        "requests": {f"{kind} {result}": n for (kind, result), n in sorted(counts.items())},
        "rss_kib": samples,
        "rss_growth_after_1_min": round(samples["end"] / max(1, samples["1 min"]) - 1, 4),
        "fds": {"start": fds_start, "end": fds_end},
        "exchange_records": records,
        "requests_made": made,
        "exit_code": proxy.returncode,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
