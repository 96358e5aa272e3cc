#!/usr/bin/env python3
"""An OTLP/HTTP sink for benchmarks: answers every POST with 200 and an empty body after reading
it, decoding nothing (so the measurement is Lookout's export cost, not a receiver's), and prints
what it took on SIGTERM. `--hold` accepts connections and never answers (a Collector that hangs).

  python3 Tests/bench/otlp_sink.py --port 4318 &
  python3 Tests/bench/ab.py --work /tmp/abotel --a L --b L --b-config $'otel:\\n  endpoint: "http://127.0.0.1:4318"' --row h1
"""
import argparse
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

taken = {"requests": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        taken["requests"] += 1
        taken["bytes"] += length
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


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
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (print(taken, flush=True), sys.exit(0)))
    if args.hold:
        hold(args.port)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.pause()


if __name__ == "__main__":
    main()
