"""Live reload of the configuration: SIGHUP, `POST /admin/reload` (token-protected) and
`config_watch`. `auth` and `policy` change at once for new exchanges; what started finishes under
its rules; a section that cannot change live waits for a restart and the reply says so; a bad file
is refused whole (test_reload_sections.py: the other live sections). Under load (wrk at full speed, 50 open tunnels, 100 reloads) nothing fails and the
log balances."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import curl, to_yaml, wait_until
from origins import ScriptedOrigin


def config(allow: list[str], **extra) -> dict:
    return {"policy": {"default_role": "everyone", "roles": {"everyone": {"mode": "enforce", "allow": allow}}},
            "connect": {"allowed_ports": [443]}, **extra}


def rewrite(proxy, cfg: dict):
    merged = {**proxy.config, **cfg}
    proxy.config_path.write_text(to_yaml(merged))


def reload_events(proxy):
    return [r for r in proxy.read_log() if r.get("event", "").startswith("session.configDid")]


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/", (200, {}, b"hello"))
        yield o


def test_sighup_and_admin_reload_change_the_policy_and_say_what_waits(make_proxy, site):
    proxy = make_proxy(config([]))
    assert curl(proxy, site.url("/")).status == 403
    rewrite(proxy, config(["127.0.0.1"]))
    proxy.send_signal(signal.SIGHUP)
    wait_until(lambda: any(e["event"] == "session.configDidReload" for e in reload_events(proxy)), message="reloaded")
    assert curl(proxy, site.url("/")).status == 200
    event = reload_events(proxy)[-1]
    assert event["trigger"] == "SIGHUP" and event["changed"] == ["policy"] and event["reloaded"] == ["policy"]
    assert re.fullmatch(r"[0-9a-f]{64}", event["hash"])
    # A listen address takes effect only after a restart, and the answer says so.
    rewrite(proxy, {**config(["127.0.0.1"]), "max_connections": 100})
    answer = curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*")
    assert answer.status == 200
    body = json.loads(answer.body)
    assert body["changed"] == ["max_connections"] and body["restart_needed"] == ["max_connections"] and body["reloaded"] == []
    # A bad file is refused whole: the old policy stays, and the record names line and column.
    proxy.config_path.write_text(proxy.config_path.read_text() + "policy: {roles: 1}\n")
    refused = curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*")
    assert refused.status == 422 and re.search(r"lookout\.yaml:\d+:\d+: ", json.loads(refused.body)["error"])
    wait_until(lambda: reload_events(proxy)[-1]["event"] == "session.configDidFailToReload", message="the refusal recorded")
    failed = reload_events(proxy)[-1]
    assert failed["event"] == "session.configDidFailToReload" and failed["trigger"] == "admin"
    assert curl(proxy, site.url("/")).status == 200


def test_reload_needs_the_admin_token(make_proxy, site):
    proxy = make_proxy({**config(["127.0.0.1"]), "admin": {"token": "t" * 32}})
    assert curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*").status == 401
    ok = curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*", "-H", f"Authorization: Bearer {'t' * 32}")
    assert ok.status == 200 and json.loads(ok.body)["changed"] == []


def test_config_watch_reloads_a_changed_file(make_proxy, site):
    proxy = make_proxy(config([], config_watch=True))
    assert curl(proxy, site.url("/")).status == 403
    rewrite(proxy, config(["127.0.0.1"], config_watch=True))
    wait_until(lambda: curl(proxy, site.url("/")).status == 200, timeout=10, message="the watched file reloaded")
    wait_until(lambda: reload_events(proxy) and reload_events(proxy)[-1]["trigger"] == "watch", message="recorded")


def test_a_reload_in_the_middle_of_a_request_body(make_proxy, site):
    site.route("/upload", (200, {}, b"stored"))
    proxy = make_proxy(config(["127.0.0.1"]))
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(f"POST {site.url('/upload')} HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\nContent-Length: 10\r\n\r\nhello".encode())
    time.sleep(0.3)
    rewrite(proxy, config([]))  # the new policy refuses everything
    assert curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*").status == 200
    s.sendall(b"world")
    answer = s.recv(65536)
    s.close()
    # The exchange finishes under the policy it started with; the next one meets the new.
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"stored")
    assert site.requests_for("/upload")[0].body_length == 10
    assert curl(proxy, site.url("/")).status == 403


@pytest.mark.skipif(not shutil.which("wrk"), reason="make deps installs wrk")
def test_reloads_under_load_lose_nothing(make_proxy, site):
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen(64)

    def serve_echo():
        while True:
            try:
                c, _ = echo.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=c: [c.sendall(d) for d in iter(lambda: c.recv(4096), b"")], daemon=True).start()
    threading.Thread(target=serve_echo, daemon=True).start()
    echo_port = echo.getsockname()[1]
    base = config(["127.0.0.1"], connect={"allowed_ports": [echo_port]})
    proxy = make_proxy(base)
    tunnels = []
    for _ in range(50):
        t = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        t.sendall(f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\nHost: 127.0.0.1:{echo_port}\r\n\r\n".encode())
        assert t.recv(4096).startswith(b"HTTP/1.1 200")
        tunnels.append(t)
    # wrk has no proxy support: it is pointed at Lookout with absolute-form requests.
    script = proxy.workdir / "proxy.lua"
    script.write_text(f'wrk.path = "{site.url("/")}"\nwrk.headers["Host"] = "127.0.0.1:{site.port}"\n')
    wrk = subprocess.Popen(["wrk", "-t2", "-c16", "-d8s", "-s", str(script), proxy.url],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    reloads = 0
    started = time.monotonic()
    while time.monotonic() - started < 7 and reloads < 100:
        allow = ["127.0.0.1"] if reloads % 2 else ["127.0.0.1", "localhost"]
        # The policy and a rule section each time: every reload makes new environments for the loops.
        rewrite(proxy, config(allow, connect={"allowed_ports": [echo_port]}, headers={"via": reloads % 2 == 0}))
        assert curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*").status == 200
        reloads += 1
    out, _ = wrk.communicate(timeout=30)
    assert reloads == 100, reloads
    assert "Non-2xx" not in out and "Socket errors" not in out, out
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    print(f"reloads under load: {requests} requests in 8 s, {reloads} reloads, 50 tunnels; wrk said:\n{out}")
    assert requests > 1000, out
    # Every tunnel is still open and intact.
    for index, t in enumerate(tunnels):
        t.sendall(f"tunnel {index}\n".encode())
        assert t.recv(100) == f"tunnel {index}\n".encode()
        t.close()
    # The log balances: a 200 record for every response wrk counted (those cut at wrk's end aside).
    ok = proxy.summaries(requests, timeout=20, where=lambda r: r.get("url") == site.url("/") and r.get("status") == 200)
    assert len(ok) >= requests
    others = [r for r in proxy.read_log() if r.get("event") == "exchange" and r.get("url") == site.url("/")
              and r.get("status") != 200]
    assert all((r.get("error") or {}).get("code") == "client_closed" for r in others), others[:3]
    assert len([e for e in reload_events(proxy) if e["event"] == "session.configDidReload"]) == 100
