"""Run inside a private network namespace (`unshare -n`, started by test_reachability.py): starts
Lookout with reachability.fail_fast, then adds and removes a default route over a veth pair the
namespace owns, and prints what it saw as one JSON object. Nothing leaves the namespace: the only
addresses are its loopback and the veth pair, and the one non-loopback request is refused by
Lookout before it connects."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from origins import ScriptedOrigin  # noqa: E402


def sh(*args):
    subprocess.run(args, check=True, capture_output=True, timeout=20)


def request(port: int, target: str) -> tuple[int, bytes]:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    host = target.split("/")[2] if "://" in target else f"127.0.0.1:{port}"
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def main():
    lookout, work = sys.argv[1], Path(sys.argv[2])
    sh("ip", "link", "set", "lo", "up")
    log = work / "log.jsonl"
    config = work / "lookout.yaml"
    config.write_text(f'listen: ["127.0.0.1:0"]\nstate_dir: "{work / "state"}"\nlog:\n  path: "{log}"\n'
                      "reachability:\n  enabled: true\n  fail_fast: true\n")
    proc = subprocess.Popen([lookout, "run", "--config", str(config)], stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        if "listening on 127.0.0.1:" in line:
            port = int(line.rsplit(":", 1)[1])
            break
    result = {}

    def events():
        deadline = time.monotonic() + 5
        while True:
            found = [json.loads(l) for l in log.read_text().splitlines() if '"session.reachabilityDidChange"' in l] \
                if log.exists() else []
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def wait_for(count):
        deadline = time.monotonic() + 5
        while len(events()) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return events()

    with ScriptedOrigin() as origin:
        origin.route("/", (200, {}, b"local"))
        result["start"] = wait_for(1)
        result["refused"] = request(port, "http://10.200.0.2:9/")
        result["loopback"] = request(port, origin.url("/"))
        result["status_page_down"] = request(port, "/")[1].decode()
        sh("ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth1")
        sh("ip", "addr", "add", "10.200.0.1/24", "dev", "veth0")
        sh("ip", "link", "set", "veth1", "up")
        sh("ip", "link", "set", "veth0", "up")
        sh("ip", "route", "add", "default", "via", "10.200.0.2", "dev", "veth0")
        result["up"] = wait_for(2)
        result["status_page_up"] = request(port, "/")[1].decode()
        sh("ip", "route", "del", "default")
        result["down"] = wait_for(3)
        result["refused_again"] = request(port, "http://10.200.0.2:9/")
    proc.terminate()  # a graceful stop writes every record
    proc.wait(10)
    result["summaries"] = [json.loads(l) for l in log.read_text().splitlines() if '"event":"exchange"' in l]
    for key in ("refused", "loopback", "refused_again"):
        status, body = result[key]
        result[key] = [status, body.decode(errors="replace")]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
