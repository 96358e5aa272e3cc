"""`admin.token`: every admin page but `/healthz` asks for it, as a bearer token or once as
`?token=` that sets an HttpOnly cookie; proxying never does; the token never reaches the log; a
configuration whose admin pages other machines can reach refuses to start without one."""

from __future__ import annotations

import json
import subprocess

from conftest import Reader, assert_error_response, client_env, connect, curl, raw_exchange, read_response
from origins import ScriptedOrigin

TOKEN = "s3cret-Token_42"


def get(port: int, path: str, *headers: str):
    extra = "".join(f"{h}\r\n" for h in headers)
    resp, _ = raw_exchange(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n".encode())
    return resp


def test_admin_pages_ask_for_the_token_and_proxying_does_not(make_proxy):
    proxy = make_proxy({"admin": {"token": TOKEN}})
    for path in ("/", "/metrics", "/exchanges", "/exchanges?state=in_flight"):
        resp = get(proxy.port, path)
        assert_error_response(resp, 401, "admin_token_required")
        assert resp.header("WWW-Authenticate") == 'Bearer realm="lookout"'
    assert_error_response(get(proxy.port, "/", "Authorization: Bearer wrong-token"), 401, "admin_token_required")
    assert_error_response(get(proxy.port, "/", f"Authorization: Basic {TOKEN}"), 401, "admin_token_required")
    assert_error_response(get(proxy.port, "/", f"Authorization: Bearer {TOKEN}x"), 401, "admin_token_required")
    assert_error_response(get(proxy.port, "/?token=" + TOKEN[:-1]), 401, "admin_token_required")
    # The health check tells nothing and stays open for probes.
    assert get(proxy.port, "/healthz").body == b"ok\n"
    ok = get(proxy.port, "/", f"Authorization: Bearer {TOKEN}")
    assert ok.status == 200 and ok.header("Set-Cookie") is None and b"Lookout" in ok.body
    assert get(proxy.port, "/metrics", f"authorization: bearer {TOKEN}").status == 200
    # Proxying is not the admin endpoint's business.
    with ScriptedOrigin() as site:
        site.route("/ok", (200, {}, b"fine"))
        assert curl(proxy, site.url("/ok")).body == b"fine"
    records = proxy.summaries(11, where=lambda r: r["kind"] == "admin")
    assert [r["status"] for r in records].count(401) == 8
    assert all(r["error"]["code"] == "admin_token_required" for r in records if r["status"] == 401)


def test_a_token_in_the_query_sets_an_http_only_cookie_once(make_proxy):
    proxy = make_proxy({"admin": {"token": TOKEN}})
    first = get(proxy.port, f"/exchanges?limit=5&token={TOKEN}")
    assert first.status == 200 and json.loads(first.body) == {"exchanges": []}
    cookie = first.header("Set-Cookie")
    assert cookie == f"lookout_admin_token={TOKEN}; Path=/; HttpOnly; SameSite=Strict"
    # The browser sends it back; with it every page answers, and no cookie is set again.
    again = get(proxy.port, "/exchanges", f"Cookie: theme=dark; lookout_admin_token={TOKEN}")
    assert again.status == 200 and again.header("Set-Cookie") is None
    assert_error_response(get(proxy.port, "/exchanges", "Cookie: lookout_admin_token=nope"), 401, "admin_token_required")
    # A live stream with the cookie, as the UI's EventSource opens it.
    sock = connect(proxy.port)
    sock.sendall(f"GET /events HTTP/1.1\r\nHost: x\r\nCookie: lookout_admin_token={TOKEN}\r\n\r\n".encode())
    head = Reader(sock).read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    sock.close()
    # The token never reaches the log, not even in the URL it came in.
    urls = [r["url"] for r in proxy.summaries(4, where=lambda r: r["kind"] == "admin")]
    assert TOKEN not in proxy.log_path.read_text()
    assert any(u.endswith("/exchanges?limit=5&token=REDACTED") for u in urls), urls


def test_the_cache_command_sends_the_token(make_proxy):
    proxy = make_proxy({"admin": {"token": TOKEN}, "cache": {"enabled": True}})
    run = subprocess.run([str(proxy.binary), "cache", "stats", "--config", str(proxy.config_path),
                          "--proxy", f"127.0.0.1:{proxy.port}"], capture_output=True, text=True, timeout=30,
                         env=client_env())
    assert run.returncode == 0, run.stderr
    assert "objects: 0" in run.stdout


def test_admin_pages_other_machines_reach_need_a_token(lookout_bin, tmp_path):
    # The Docker image's shape: every address, private clients admitted.
    config = tmp_path / "docker.yaml"
    config.write_text(f'listen: ["0.0.0.0:0"]\naccess:\n  clients: ["loopback", "private"]\nstate_dir: "{tmp_path}"\n')
    env = {k: v for k, v in client_env().items() if k != "LOOKOUT_ADMIN_TOKEN"}
    check = subprocess.run([str(lookout_bin), "config", "check", str(config)], capture_output=True, text=True,
                           timeout=20, env=env)
    assert check.returncode == 1
    assert "admin.token: the admin pages on 0.0.0.0:0 are reachable from other machines" in check.stderr, check.stderr
    assert "LOOKOUT_ADMIN_TOKEN" in check.stderr
    # The environment variable is enough, and keeps the secret out of the file.
    check = subprocess.run([str(lookout_bin), "config", "check", str(config)], capture_output=True, text=True,
                           timeout=20, env={**env, "LOOKOUT_ADMIN_TOKEN": TOKEN})
    assert check.returncode == 0, check.stderr
    bad = subprocess.run([str(lookout_bin), "config", "check", str(config)], capture_output=True, text=True,
                         timeout=20, env={**env, "LOOKOUT_ADMIN_TOKEN": "two words"})
    assert bad.returncode == 1 and "LOOKOUT_ADMIN_TOKEN" in bad.stderr and "two words" not in bad.stderr
    # `run --listen` is checked the same way, before anything is bound.
    loopback = tmp_path / "loopback.yaml"
    loopback.write_text(f'access:\n  clients: ["private"]\nstate_dir: "{tmp_path}"\n')
    run = subprocess.run([str(lookout_bin), "run", "--config", str(loopback), "--listen", "0.0.0.0:0"],
                         capture_output=True, text=True, timeout=20, env=env)
    assert run.returncode != 0 and "admin.token" in run.stderr, run.stderr
