#!/usr/bin/env python3
"""RSS cost of idle keep-alive client connections (part of Tests/bench/run.sh).

Opens COUNT connections to HOST:PORT, sends one keep-alive GET on each (absolute-form
when --target is an absolute URL, i.e. when talking to a proxy), reads the whole
response and keeps the connection open. Reports the VmRSS of the server process
(summed over PID and its descendants) before and after, and how many connections
the server kept open. Prints one JSON object on stdout. Python stdlib only.
"""
import argparse
import json
import os
import resource
import socket
import sys
import time
import urllib.parse


def children_map():
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read().decode("ascii", "replace")
        except OSError:
            continue
        # pid (comm) state ppid ...  -- comm may contain spaces/parens
        rest = data[data.rfind(")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append(int(entry))
    return kids


def tree_rss_kib(pid):
    """VmRSS in KiB of pid plus all of its descendants."""
    kids = children_map()
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
        todo.extend(kids.get(p, []))
    return total


def read_response(sock):
    """Read one HTTP/1.1 response (Content-Length or chunked or close-delimited).
    Returns (status, headers-dict-lowercase, body_len)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before response head")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        need = int(headers["content-length"])
        while len(rest) < need:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed mid-body")
            rest += chunk
        return status, headers, need
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while not rest.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed mid-chunked-body")
            rest += chunk
        return status, headers, len(rest)
    while True:  # close-delimited
        chunk = sock.recv(65536)
        if not chunk:
            return status, headers, len(rest)
        rest += chunk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connect", required=True, help="HOST:PORT to connect to (proxy or origin)")
    ap.add_argument("--target", required=True,
                    help="request target: absolute URL (proxy) or origin-form path (direct)")
    ap.add_argument("--host", required=True, help="Host header value")
    ap.add_argument("--pid", type=int, required=True, help="server pid whose RSS is measured")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=50,
                    help="connections opened, used once and closed before the baseline")
    ap.add_argument("--warmup-requests", type=int, default=0,
                    help="keep-alive requests sent on one connection before the baseline: enough of "
                         "them fill the bounded per-exchange memory a server keeps (Lookout's live "
                         "ring of recent records), which is not the idle connections' cost")
    ap.add_argument("--settle", type=float, default=1.0)
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.count + args.warmup + 64
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard) if hard != resource.RLIM_INFINITY else want, hard))
        except (ValueError, OSError):
            pass

    host, _, port = args.connect.rpartition(":")
    port = int(port)
    req = (f"GET {args.target} HTTP/1.1\r\nHost: {args.host}\r\n"
           f"User-Agent: lookout-bench-idle\r\nAccept: */*\r\n\r\n").encode()

    def one_conn():
        s = socket.create_connection((host, port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(req)
        status, headers, _ = read_response(s)
        return s, status, headers

    # Warm-up: first-use allocations (pools, buffers, caches) should not be
    # attributed to idle connections.
    for _ in range(args.warmup):
        s, _, _ = one_conn()
        s.close()
    if args.warmup_requests > 0:
        s, _, headers = one_conn()
        for _ in range(args.warmup_requests - 1):
            if headers.get("connection", "").lower() == "close":
                s.close()
                s, _, headers = one_conn()
                continue
            try:
                s.sendall(req)
                _, headers, _ = read_response(s)
            except OSError:
                # Some servers (tinyproxy 1.11) close after every response without saying
                # `Connection: close` (RFC 9112 §9.6): the next request finds the socket closed.
                s.close()
                s, _, headers = one_conn()
        s.close()
    time.sleep(args.settle)
    before = tree_rss_kib(args.pid)

    conns, statuses, said_close, failures = [], {}, 0, 0
    t0 = time.monotonic()
    for _ in range(args.count):
        try:
            s, status, headers = one_conn()
        except OSError as exc:  # refused / reset / limit reached
            failures += 1
            last_error = repr(exc)
            continue
        statuses[status] = statuses.get(status, 0) + 1
        if "close" in headers.get("connection", "").lower():
            said_close += 1
        conns.append(s)
    open_secs = time.monotonic() - t0
    time.sleep(args.settle)
    after = tree_rss_kib(args.pid)

    still_open = 0
    for s in conns:
        s.setblocking(False)
        try:
            data = s.recv(1, socket.MSG_PEEK)
            if data:
                still_open += 1  # unexpected bytes, but open
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
    for s in conns:
        s.close()

    out = {
        "count": args.count,
        "rss_before_kib": before,
        "rss_after_kib": after,
        "delta_kib": after - before,
        "established": len(conns),
        "still_open": still_open,
        "response_said_close": said_close,
        "connect_failures": failures,
        "statuses": {str(k): v for k, v in statuses.items()},
        "open_seconds": round(open_secs, 3),
        "per_conn_kib": round((after - before) / still_open, 2) if still_open else None,
    }
    if failures:
        out["last_error"] = last_error
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
