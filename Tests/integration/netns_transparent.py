"""Run inside a private network namespace (`unshare -n`, started by test_transparent.py): starts
Lookout with a transparent listener, then sends connections to it as nftables REDIRECT does, and
prints what the clients saw as one JSON object. Nothing leaves the namespace: every address is
its loopback (and 192.0.2.x/2001:db8:: test addresses, routed to it and redirected)."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import origins  # noqa: E402
from tls_pki import PKI  # noqa: E402


def sh(*args, input=None):
    subprocess.run(args, check=True, capture_output=True, timeout=20, input=input)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exchange(port: int, data: bytes, host: str = "127.0.0.1", timeout: float = 10) -> bytes:
    s = socket.create_connection((host, port), timeout=timeout)
    if data:
        s.sendall(data)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return out


def echo_server() -> int:
    """A TCP server that answers "echo: " and what it read, line by line."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        while True:
            c, _ = listener.accept()
            def one(c=c):
                with c:
                    while data := c.recv(4096):
                        c.sendall(b"echo: " + data)
            threading.Thread(target=one, daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


def main():
    lookout, work = sys.argv[1], Path(sys.argv[2])
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "route", "add", "default", "dev", "lo")
    pki = PKI(work / "pki")
    proxy_port, transparent_port = free_port(), free_port()
    log = work / "log.jsonl"
    config = work / "lookout.yaml"
    config.write_text(
        f'listen: ["127.0.0.1:{proxy_port}", {{address: "0.0.0.0:{transparent_port}", mode: transparent}}]\n'
        f'access:\n  clients: ["127.0.0.0/8", "10.9.0.0/24"]\n'
        f'state_dir: "{work / "state"}"\nlog:\n  path: "{log}"\n'
        f'interception:\n  hosts: ["localhost", "10.9.0.1"]\n'
        f'trust:\n  system_roots: false\n  ca_files: ["{pki.root.cert}"]\n')
    proc = subprocess.Popen([lookout, "run", "--config", str(config)], stderr=subprocess.PIPE, text=True)
    seen = 0
    for line in proc.stderr:
        if "listening on" in line:
            seen += 1
            if seen == 2:
                break
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    result = {}
    # Before any redirect rule: connection tracking has nothing to say about a connection.
    result["unknown"] = exchange(transparent_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").decode(errors="replace")
    plain = origins.HTTPOrigin().start()
    leaf = pki.root.issue("gateway", san="DNS:localhost, IP:127.0.0.1, IP:10.9.0.1")
    secure = origins.HTTPOrigin(tls=(leaf.cert, leaf.key)).start()
    echo = echo_server()
    tproxied = echo_server()
    # The clients live in a second namespace behind a veth pair, as hosts behind a gateway: what
    # they send to 10.9.0.1 arrives here and a PREROUTING REDIRECT gives it to the transparent
    # listener. Lookout's own connections to 10.9.0.1 reach the origins on this loopback.
    holder = subprocess.Popen(["unshare", "-n", "sleep", "120"])
    time.sleep(0.2)
    sh("ip", "link", "add", "lk0", "type", "veth", "peer", "name", "lk1")
    sh("ip", "link", "set", "lk1", "netns", str(holder.pid))
    sh("ip", "addr", "add", "10.9.0.1/24", "dev", "lk0")
    sh("ip", "link", "set", "lk0", "up")
    inside = ["nsenter", "-t", str(holder.pid), "-n"]
    sh(*inside, "ip", "link", "set", "lo", "up")
    sh(*inside, "ip", "addr", "add", "10.9.0.2/24", "dev", "lk1")
    sh(*inside, "ip", "link", "set", "lk1", "up")
    ports = f"{plain.port}, {secure.port}, {echo}"
    # TPROXY: the packets of one port are given to the listener unchanged (IP_TRANSPARENT), routed
    # to this host by their mark.
    sh("ip", "rule", "add", "fwmark", "1", "lookup", "100")
    sh("ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", "100")
    sh("nft", "-f", "-", input=f"""
table ip test {{
  chain divert {{
    type filter hook prerouting priority -150; policy accept;
    iifname "lk0" tcp dport {tproxied} tproxy to :{transparent_port} meta mark set 1 accept
  }}
  chain prerouting {{
    type nat hook prerouting priority -100; policy accept;
    iifname "lk0" tcp dport {{ {ports} }} redirect to :{transparent_port}
  }}
  chain output {{
    type nat hook output priority -100; policy accept;
    ip daddr 10.9.0.1 tcp dport {{ {ports}, {tproxied} }} dnat to 127.0.0.1
  }}
}}
""".encode())
    time.sleep(0.2)

    def client(mode, *args):
        out = subprocess.run([*inside, sys.executable, __file__, "client", mode, str(work), *map(str, args)],
                             capture_output=True, text=True, timeout=30)
        return out.stdout if out.returncode == 0 else f"client failed: {out.stderr}"

    result["plain"] = client("plain", plain.port)
    result["tls"] = client("tls", secure.port)
    result["other"] = client("other", echo)
    result["tproxy"] = client("other", tproxied)
    # A loop: straight to the listener's own port (it listens on every address here).
    result["loop"] = client("loop", transparent_port)
    holder.kill()
    holder.wait()
    time.sleep(0.3)
    proc.terminate()
    proc.wait(10)
    plain.stop()
    secure.stop()
    result["summaries"] = [json.loads(l) for l in log.read_text().splitlines() if '"event":"exchange"' in l]
    print(json.dumps(result))


def run_client():
    mode, work, port = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    if mode == "plain":
        out = exchange(port, f"GET /fixed/12 HTTP/1.1\r\nHost: app.test:{port}\r\nConnection: close\r\n\r\n".encode(),
                       host="10.9.0.1")
        print(out.decode(errors="replace"))
    elif mode == "tls":
        ctx = ssl.create_default_context(cafile=str(work / "state" / "ca.pem"))
        ctx.check_hostname = False
        with socket.create_connection(("10.9.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as tls:  # no server name: the address names the host
                tls.sendall(b"GET /fixed/7 HTTP/1.1\r\nHost: 10.9.0.1\r\nConnection: close\r\n\r\n")
                body = b""
                while chunk := tls.recv(65536):
                    body += chunk
                issuer = dict(x[0] for x in tls.getpeercert()["issuer"]).get("commonName", "")
                print(json.dumps({"body": body.decode(errors="replace"), "issuer": issuer}))
    elif mode == "other":
        s = socket.create_connection(("10.9.0.1", port), timeout=10)
        s.sendall(b"\x00\x01PING\n")
        print(s.recv(100).decode(errors="replace"))
        s.close()
    elif mode == "loop":
        print(exchange(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", host="10.9.0.1", timeout=5).decode(errors="replace"))


if __name__ == "__main__":
    if sys.argv[1] == "client":
        run_client()
    else:
        main()
