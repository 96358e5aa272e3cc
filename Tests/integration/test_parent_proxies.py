"""Parent proxies (upstream_proxies): plain requests in absolute form, https and tunnels through a
CONNECT, against real parents started here on 127.0.0.1: a second Lookout, and Squid from Debian
with and without basic authentication; a parent that is down or refuses."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (assert_error_response, assert_error_summary, curl, free_port, raw_exchange,
                      request_bytes)
from origins import ScriptedOrigin

SQUID = shutil.which("squid") or "/usr/sbin/squid"


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/", (200, {}, b"hello"))
        yield o


def via(parent_url, **extra):
    return {"upstream_proxies": {"default": parent_url}, **extra}


class Squid:
    def __init__(self, workdir: Path, allowed_port: int, users: dict[str, str] | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(workdir, "nobody", "nogroup")
        self.port = free_port()
        self.workdir = workdir
        auth = ""
        if users:
            passwords = workdir / "passwords"
            hashed = {u: subprocess.run(["openssl", "passwd", "-apr1", p], capture_output=True, text=True,
                                        check=True).stdout.strip() for u, p in users.items()}
            passwords.write_text("".join(f"{u}:{h}\n" for u, h in hashed.items()))
            passwords.chmod(0o644)
            auth = (f"auth_param basic program /usr/lib/squid/basic_ncsa_auth {passwords}\n"
                    "auth_param basic realm parent\nacl authenticated proxy_auth REQUIRED\n"
                    "http_access deny !authenticated\n")
        user = "cache_effective_user nobody\ncache_effective_group nogroup\n" if os.geteuid() == 0 else ""
        conf = workdir / "squid.conf"
        conf.write_text(f"""{user}http_port 127.0.0.1:{self.port}
pid_filename {workdir}/squid.pid
cache_log {workdir}/cache.log
access_log stdio:{workdir}/access.log
cache_store_log none
coredump_dir {workdir}
cache deny all
cache_mem 0 MB
workers 1
dns_nameservers 127.0.0.1
visible_hostname lookout-parent
pinger_enable off
netdb_filename none
icp_port 0
htcp_port 0
shutdown_lifetime 0 seconds
acl Allowed_ports port {allowed_port}
http_access deny CONNECT !Allowed_ports
{auth}http_access allow localhost
http_access deny all
""")
        self.proc = subprocess.Popen([SQUID, "-N", "-f", str(conf)], cwd=workdir,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import socket
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        log = workdir / "cache.log"
        raise RuntimeError("squid did not start: " + (log.read_text()[-1500:] if log.exists() else "no cache.log"))

    def access_log(self) -> str:
        time.sleep(0.3)
        p = self.workdir / "access.log"
        return p.read_text() if p.exists() else ""

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def squid_factory():
    if not os.path.exists(SQUID):
        pytest.skip("squid is not installed (make test installs it)")
    # Squid drops root for nobody, who cannot enter pytest's private tmp_path: a world-readable
    # folder of its own instead.
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="lookout-squid-"))
    base.chmod(0o755)
    made = []

    def make(allowed_port, users=None):
        s = Squid(base / f"squid{len(made)}", allowed_port, users)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()
    shutil.rmtree(base, ignore_errors=True)


def test_plain_and_tunnelled_requests_go_through_a_second_lookout(make_proxy, site, origin_cert):
    parent = make_proxy({"connect": {"allowed_ports": [site.port]}})
    child = make_proxy(via(f"http://127.0.0.1:{parent.port}"))
    r = curl(child, site.url("/"))
    assert (r.status, r.body) == (200, b"hello"), r
    rec = child.only_summary()
    assert rec["upstream"]["proxy"] == f"http://127.0.0.1:{parent.port}", rec
    assert rec["upstream"]["address"] == f"127.0.0.1:{parent.port}", rec
    assert parent.only_summary()["url"] == site.url("/")  # the parent saw the absolute-form request
    # A CONNECT through the child is a CONNECT to the parent.
    resp, reader = raw_exchange(child.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}",
                                                          host=f"127.0.0.1:{site.port}"))
    assert resp.status == 403, "the child's connect.allowed_ports still applies first"
    child2 = make_proxy(via(f"http://127.0.0.1:{parent.port}", connect={"allowed_ports": [site.port]}))
    r = curl(child2, site.url("/"), "--proxytunnel")
    assert (r.status, r.body) == (200, b"hello"), r
    rec = child2.only_summary(kind="tunnel")
    assert rec["upstream"]["proxy"] == f"http://127.0.0.1:{parent.port}", rec
    assert parent.summaries(1, kind="tunnel")[0]["url"] == f"127.0.0.1:{site.port}"


def test_https_through_squid_keeps_trust_against_the_origin(make_proxy, squid_factory, origin_cert):
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/", (200, {}, b"secure hello"))
        squid = squid_factory(secure.port)
        proxy = make_proxy(via(f"http://127.0.0.1:{squid.port}", trust={"ca_files": [str(origin_cert[0])]}))
        resp, _ = raw_exchange(proxy.port, request_bytes("GET", secure.url("/"), [("Connection", "close")]))
        assert (resp.status, resp.body) == (200, b"secure hello"), resp.body[:200]
        rec = proxy.only_summary()
        assert rec["upstream"]["proxy"] == f"http://127.0.0.1:{squid.port}"
        assert rec["upstream"]["tls"]["trust"]["result"] == "passed", rec
        assert rec["upstream"]["address"] == f"127.0.0.1:{squid.port}", rec  # the TCP peer was Squid
        # The origin's certificate is still judged: one no rule trusts is refused through the parent too.
        strict = make_proxy(via(f"http://127.0.0.1:{squid.port}"))
        resp, _ = raw_exchange(strict.port, request_bytes("GET", secure.url("/"), [("Connection", "close")]))
        assert_error_response(resp, 502, "server_trust_evaluation_failed")


def test_intercepted_exchanges_go_through_squid(make_proxy, squid_factory, origin_cert):
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/", (200, {}, b"inside"))
        squid = squid_factory(secure.port)
        proxy = make_proxy(via(f"http://127.0.0.1:{squid.port}", trust={"ca_files": [str(origin_cert[0])]},
                               interception={"hosts": ["127.0.0.1"]}, connect={"allowed_ports": [secure.port]}))
        r = curl(proxy, secure.url("/"), "--cacert", str(proxy.workdir / "state" / "ca.pem"))
        assert (r.status, r.body) == (200, b"inside"), r
        assert proxy.only_summary(kind="intercepted")["upstream"]["proxy"] == f"http://127.0.0.1:{squid.port}"


def test_squid_with_basic_auth(make_proxy, squid_factory, site):
    squid = squid_factory(site.port, users={"alice": "s3cret:x"})
    proxy = make_proxy(via(f"http://alice:s3cret%3Ax@127.0.0.1:{squid.port}", connect={"allowed_ports": [site.port]}))
    r = curl(proxy, site.url("/"))
    assert (r.status, r.body) == (200, b"hello"), r
    r = curl(proxy, site.url("/"), "--proxytunnel")
    assert (r.status, r.body) == (200, b"hello"), r
    log_text = proxy.read_log_text() if hasattr(proxy, "read_log_text") else "\n".join(map(str, proxy.read_log()))
    assert "s3cret" not in log_text, "parent credentials must never be logged"
    assert "alice" in squid.access_log()
    # Wrong credentials: the parent's 407 on a CONNECT is Lookout's failure, not the client's.
    wrong = make_proxy(via(f"http://alice:nope@127.0.0.1:{squid.port}", connect={"allowed_ports": [site.port]}))
    resp, _ = raw_exchange(wrong.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 502, "parent_proxy_failed")
    assert "answered 407" in resp.body.decode(), resp.body
    assert_error_summary(wrong.only_summary(), 502, "parent_proxy_failed", kind="tunnel")


def test_a_plain_407_passes_back_only_for_the_clients_own_credentials(make_proxy, squid_factory, site):
    squid = squid_factory(site.port, users={"bob": "pw"})
    proxy = make_proxy(via(f"http://127.0.0.1:{squid.port}"))
    # No credentials anywhere: the parent's 407 is Lookout's failure (its config lacks them).
    r = curl(proxy, site.url("/"))
    assert_error_response(r, 502, "parent_proxy_failed")
    assert "answered 407" in r.body.decode(), r.body
    # The client's own Proxy-Authorization (Lookout asks for none) goes to the parent ...
    r = curl(proxy, site.url("/"), "-H", "Proxy-Authorization: Basic Ym9iOnB3")  # bob:pw
    assert (r.status, r.body) == (200, b"hello"), r
    # ... and when the parent refuses them, its 407 is the client's to see.
    r = curl(proxy, site.url("/"), "-H", "Proxy-Authorization: Basic Ym9iOm5vcGU=")  # bob:nope
    assert r.status == 407 and r.header("X-Lookout-Error") is None, r
    assert [req.target for req in site.received] == [b"/"]


def test_a_connect_carries_the_clients_own_credentials_and_gets_the_parents_407(make_proxy, squid_factory, site):
    squid = squid_factory(site.port, users={"carol": "pw"})
    proxy = make_proxy(via(f"http://127.0.0.1:{squid.port}", connect={"allowed_ports": [site.port]}))
    r = curl(proxy, site.url("/"), "--proxytunnel", "--proxy-user", "carol:pw")
    assert (r.status, r.body) == (200, b"hello"), r
    resp, _ = raw_exchange(proxy.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}",
                                                     [("Proxy-Authorization", "Basic Y2Fyb2w6bm9wZQ==")],  # carol:nope
                                                     host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 407, "parent_proxy_authentication_required")
    assert resp.header("Proxy-Authenticate") == 'Basic realm="parent"', resp.headers  # the parent's challenge
    assert_error_summary(proxy.summaries(2)[1], 407, "parent_proxy_authentication_required", kind="tunnel")


def test_a_parent_that_is_down_is_parent_proxy_failed(make_proxy, site):
    dead = free_port()
    proxy = make_proxy(via(f"http://127.0.0.1:{dead}", connect={"allowed_ports": [site.port]}))
    r = curl(proxy, site.url("/"))
    assert_error_response(r, 502, "parent_proxy_failed")
    assert f"parent proxy http://127.0.0.1:{dead}: cannot connect" in r.body.decode(), r.body
    resp, _ = raw_exchange(proxy.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 502, "parent_proxy_failed")
    assert site.received == []


def test_rules_pick_the_parent_per_host(make_proxy, site):
    parent = make_proxy()
    proxy = make_proxy({"upstream_proxies": {"rules": [{"hosts": ["localhost"], "proxy": f"http://127.0.0.1:{parent.port}"},
                                                       {"hosts": ["127.0.0.1"], "proxy": "direct"}],
                                             "default": "http://127.0.0.1:9"}})
    assert curl(proxy, site.url("/")).status == 200
    assert curl(proxy, f"http://localhost:{site.port}/").status == 200
    direct, through = proxy.summaries(2)
    assert "proxy" not in direct["upstream"] and through["upstream"]["proxy"] == f"http://127.0.0.1:{parent.port}"
    assert parent.only_summary()["url"] == f"http://localhost:{site.port}/"


@pytest.mark.parametrize("behaviour, timeouts, message", [
    ("garbage_head", {}, "malformed answer to CONNECT"),
    ("close_without_response", {}, "closed the connection before answering CONNECT"),
    ("never_answers", {"upstream_connect": 1}, "no answer to CONNECT"),
])
def test_a_parent_that_does_not_answer_connect_properly(make_proxy, raw_origin, site, behaviour, timeouts, message):
    parent = raw_origin(behaviour)
    proxy = make_proxy(via(f"http://127.0.0.1:{parent.port}", connect={"allowed_ports": [site.port]},
                           timeouts=timeouts))
    resp, _ = raw_exchange(proxy.port, request_bytes("CONNECT", f"127.0.0.1:{site.port}", host=f"127.0.0.1:{site.port}"))
    assert_error_response(resp, 502, "parent_proxy_failed")
    assert message in resp.body.decode(), resp.body
    rec = proxy.only_summary(kind="tunnel")
    assert_error_summary(rec, 502, "parent_proxy_failed", kind="tunnel")
    assert rec["error"]["message"].startswith(f"parent proxy http://127.0.0.1:{parent.port}:"), rec
    [head] = parent.wait_received(1)
    assert head.startswith(f"CONNECT 127.0.0.1:{site.port} HTTP/1.1".encode()), head
    assert site.received == []


@pytest.mark.parametrize("value, message", [
    ("https://proxy.example:3128", "only http://, socks5:// and socks5h:// parent proxies are supported"),
    ("socks4://proxy.example:1080", 'expected "direct", an http://'),
    ("socks5://u@proxy.example:1080", "SOCKS5 user name and password must each be 1 to 255 bytes"),
    ("http://proxy.example:99999", "the port must be a number from 1 to 65535"),
    ("http://proxy.example:3128/path", "no path, query or fragment"),
])
def test_config_check_refuses_bad_parent_urls(lookout_bin, tmp_path, value, message):
    f = tmp_path / "bad.yaml"
    f.write_text(f'upstream_proxies:\n  rules:\n    - hosts: ["**.corp.example"]\n      proxy: "{value}"\n')
    p = subprocess.run([str(lookout_bin), "config", "check", str(f)], capture_output=True, text=True, timeout=20)
    assert p.returncode == 1 and f"{f}:4:" in p.stderr and message in p.stderr, p.stderr
