#!/usr/bin/env python3
"""WebSocket relay throughput through Lookout (the `ws` row of ab.py), stdlib only.

`sink` runs a WebSocket origin that answers each handshake with a 101 and then reads and drops
everything; `load` opens CONNS cleartext WebSockets through the proxy's CONNECT (as the
`websockets` library proxies ws://) and sends masked binary frames of SIZE bytes as fast as the
path takes them for DURATION seconds, then prints {"bytes", "seconds", "mib_per_s", "frames"}.
The proxy reads every frame header and, while `messages.decode_budget_bytes` lasts, unmasks
the payloads: the row compares that with `messages.enabled: false`.

  python3 Tests/bench/ws_bench.py sink --port-file /tmp/sink.port
  python3 Tests/bench/ws_bench.py load --proxy 8080 --origin 9001 --conns 4 --duration 4
"""
import argparse
import json
import os
import socket
import struct
import threading
import time

ACCEPT = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
         b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"


def sink(port_file):
    server = socket.create_server(("127.0.0.1", 0), backlog=256)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)

    def drain(conn):
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            conn.sendall(ACCEPT)
            buffer = bytearray(1 << 20)
            while conn.recv_into(buffer):
                pass
    while True:
        conn, _ = server.accept()
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


def frames(size, count):
    """`count` masked binary frames of `size` bytes (RFC 6455 §5.2), as one buffer."""
    mask = b"\x12\x34\x56\x78"
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(os.urandom(size)))
    if size < 126:
        header = bytes([0x82, 0x80 | size])
    elif size < 65536:
        header = bytes([0x82, 0x80 | 126]) + struct.pack(">H", size)
    else:
        header = bytes([0x82, 0x80 | 127]) + struct.pack(">Q", size)
    return (header + mask + payload) * count


def open_socket(proxy, origin):
    sock = socket.create_connection(("127.0.0.1", proxy))
    sock.sendall(f"CONNECT 127.0.0.1:{origin} HTTP/1.1\r\nHost: 127.0.0.1:{origin}\r\n\r\n".encode())
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    assert response.startswith(b"HTTP/1.1 200"), response
    sock.sendall(f"GET /bench HTTP/1.1\r\nHost: 127.0.0.1:{origin}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    assert response.startswith(b"HTTP/1.1 101"), response
    return sock


def load(proxy, origin, conns, duration, size):
    batch = frames(size, max(1, (4 << 20) // size))
    per_batch = len(batch) // (size + (14 if size >= 65536 else 8 if size >= 126 else 6))
    sockets = [open_socket(proxy, origin) for _ in range(conns)]
    sent = [0] * conns
    deadline = time.monotonic() + duration

    def send(index):
        while time.monotonic() < deadline:
            sockets[index].sendall(batch)
            sent[index] += 1
    start = time.monotonic()
    threads = [threading.Thread(target=send, args=(i,)) for i in range(conns)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - start
    for sock in sockets:
        sock.close()
    total = sum(sent) * len(batch)
    return {"bytes": total, "seconds": seconds, "mib_per_s": total / seconds / (1 << 20), "frames": sum(sent) * per_batch}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def rss(proxy, origin, pid, count, size):
    """RSS per open WebSocket: `count` of them, each having sent one frame of `size` bytes."""
    before = rss_kib(pid)
    frame = frames(size, 1)
    sockets = []
    for _ in range(count):
        sock = open_socket(proxy, origin)
        sock.sendall(frame)
        sockets.append(sock)
    time.sleep(2)
    after = rss_kib(pid)
    for sock in sockets:
        sock.close()
    return {"connections": count, "frame_bytes": size, "rss_before_kib": before, "rss_after_kib": after,
            "kib_per_connection": (after - before) / count}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("sink")
    s.add_argument("--port-file", required=True)
    l = sub.add_parser("load")
    l.add_argument("--proxy", type=int, required=True)
    l.add_argument("--origin", type=int, required=True)
    l.add_argument("--conns", type=int, default=4)
    l.add_argument("--duration", type=float, default=4)
    l.add_argument("--size", type=int, default=65536)
    r = sub.add_parser("rss")
    r.add_argument("--proxy", type=int, required=True)
    r.add_argument("--origin", type=int, required=True)
    r.add_argument("--pid", type=int, required=True)
    r.add_argument("--count", type=int, default=1000)
    r.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    if args.mode == "rss":
        print(json.dumps(rss(args.proxy, args.origin, args.pid, args.count, args.size)))
    elif args.mode == "sink":
        sink(args.port_file)
    else:
        print(json.dumps(load(args.proxy, args.origin, args.conns, args.duration, args.size)))


if __name__ == "__main__":
    main()
