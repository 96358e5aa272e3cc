#!/usr/bin/env python3
"""Holds N live-stream clients (`GET /events`) open against a Lookout admin endpoint for the
benchmark's "watched" row: each reads and discards what arrives (or, with --stalled, reads
nothing). Runs until SIGTERM, then prints one JSON line: clients, bytes and frames received."""

import argparse
import json
import selectors
import signal
import socket
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--connect", required=True, help="HOST:PORT of the admin endpoint")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--query", default="", help="e.g. '?filter=status:5xx'")
    parser.add_argument("--stalled", action="store_true", help="never read: the proxy must drop, not wait")
    args = parser.parse_args()
    host, port = args.connect.rsplit(":", 1)
    selector = selectors.DefaultSelector()
    socks = []
    for _ in range(args.clients):
        sock = socket.create_connection((host, int(port)))
        sock.sendall(f"GET /events{args.query} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
        sock.setblocking(False)
        socks.append(sock)
        if not args.stalled:
            selector.register(sock, selectors.EVENT_READ)
    received = {"bytes": 0, "frames": 0}
    running = True

    def stop(*_):
        nonlocal running
        running = False
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("ready", flush=True)
    while running:
        if args.stalled:
            signal.pause()
            continue
        for key, _ in selector.select(timeout=0.5):
            try:
                data = key.fileobj.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                selector.unregister(key.fileobj)
                continue
            received["bytes"] += len(data)
            received["frames"] += data.count(b"\n\n")
    print(json.dumps({"clients": len(socks), **received}), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
