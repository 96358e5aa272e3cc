#!/usr/bin/env python3
"""An OTLP/HTTP sink for benchmarks: answers every POST with 200 and an empty body after reading
it, decoding nothing (so the measurement is Lookout's export cost, not a receiver's), and prints
what it took on SIGTERM. `--hold` accepts connections and never answers (a Collector that hangs).

One thread and a selector, each body read into one reused buffer: the sink shares the two cores
with the proxy under test, and a thread per connection (http.server's ThreadingHTTPServer) costs
about three times the CPU per batch (this sink: 0.16 ms), which a run would count as Lookout's. Connections are kept (HTTP/1.1),
as the OpenTelemetry Collector keeps them. `--cpu` prints the sink's own CPU time per batch with
the totals, so a run can say what the receiver took.

  python3 Tests/bench/otlp_sink.py --port 4318 &
  python3 Tests/bench/ab.py --work /tmp/abotel --a L --b L --b-config $'otel:\\n  endpoint: "http://127.0.0.1:4318"' --row h1
"""
import argparse
import os
import selectors
import signal
import socket
import sys

taken = {"requests": 0, "bytes": 0}
CLOSE = False  # --close: a connection per request
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"


class Conn:
    """One connection: each request's head gathered until the blank line, then its Content-Length
    bytes counted; the exporter sends one request at a time and waits for the answer."""

    def __init__(self, sock):
        self.sock, self.head, self.left = sock, b"", None

    def readable(self, buffer):
        """False when the peer has closed the connection (or sent a head over 64 KiB)."""
        n = self.sock.recv_into(buffer)
        if n == 0:
            return False
        if self.left is None:
            self.head += bytes(buffer[:n])
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return len(self.head) < 65536
            length = 0
            for line in self.head[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self.left = length - (len(self.head) - end - 4)
            taken["bytes"] += length
        else:
            self.left -= n
        if self.left > 0:
            return True
        taken["requests"] += 1
        self.sock.setblocking(True)
        if CLOSE:
            self.sock.sendall(ANSWER[:-2] + b"Connection: close\r\n\r\n")
            return False
        self.sock.sendall(ANSWER)
        self.sock.setblocking(False)
        # Kept open for the next request, as a Collector (Go's net/http) keeps it.
        self.head, self.left = b"", None
        return True


def serve(port):
    server = socket.create_server(("127.0.0.1", port), backlog=1024)
    server.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ, None)
    buffer = bytearray(1 << 20)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                try:
                    sock, _ = server.accept()
                except BlockingIOError:
                    continue
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ, Conn(sock))
                continue
            conn = key.data
            try:
                keep = conn.readable(buffer)
            except (BlockingIOError, InterruptedError):
                keep = True
            except OSError:
                keep = False
            if not keep:
                selector.unregister(conn.sock)
                conn.sock.close()


def hold(port):
    server = socket.create_server(("127.0.0.1", port), backlog=1024)
    held = []
    while True:
        conn, _ = server.accept()
        held.append(conn)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=4318)
    ap.add_argument("--hold", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="print the sink's CPU time per batch with the totals")
    ap.add_argument("--close", action="store_true", help="answer with Connection: close (a connection per request)")

    def done(*_):
        if args.cpu:
            times = os.times()
            taken["cpu_ms_per_batch"] = round(1000 * (times.user + times.system) / max(1, taken["requests"]), 3)
        print(taken, flush=True)
        sys.exit(0)

    args = ap.parse_args()
    global CLOSE
    CLOSE = args.close
    signal.signal(signal.SIGTERM, done)
    if args.hold:
        hold(args.port)
    serve(args.port)


if __name__ == "__main__":
    main()
