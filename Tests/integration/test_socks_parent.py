"""SOCKS5 parents (`upstream_proxies` with socks5:// and socks5h://): plain requests, blind
tunnels and intercepted HTTPS through Debian's microsocks and dante-server, started here on
127.0.0.1; credentials (RFC 1929); a parent that refuses."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from conftest import assert_error_response, curl, free_port, raw_exchange, request_bytes
from origins import ScriptedOrigin

MICROSOCKS = shutil.which("microsocks")
DANTED = shutil.which("danted") or "/usr/sbin/danted"


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/", (200, {}, b"hello"))
        yield o


class Parent:
    def __init__(self, argv: list[str], port: int):
        self.port = port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        import socket
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise AssertionError(f"{argv[0]} did not listen on {port}: {self.proc.stderr.read().decode()}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(5)


@pytest.fixture
def microsocks():
    started = []

    def start(user: str | None = None, password: str | None = None) -> Parent:
        if not MICROSOCKS:
            pytest.fail("microsocks is needed (make deps installs it)")
        port = free_port()
        argv = [MICROSOCKS, "-i", "127.0.0.1", "-p", str(port)] + (["-u", user, "-P", password] if user else [])
        started.append(Parent(argv, port))
        return started[-1]

    yield start
    for parent in started:
        parent.stop()


def test_plain_and_https_requests_go_through_microsocks(make_proxy, microsocks, site, origin_cert):
    parent = microsocks()
    for scheme in ("socks5", "socks5h"):
        proxy = make_proxy({"upstream_proxies": {"default": f"{scheme}://127.0.0.1:{parent.port}"}})
        resp, _ = raw_exchange(proxy.port, request_bytes("GET", site.url("/"), [("Connection", "close")]))
        assert (resp.status, resp.body) == (200, b"hello")
        record = proxy.only_summary()
        assert record["upstream"]["proxy"] == f"{scheme}://127.0.0.1:{parent.port}"
        assert record["upstream"]["address"] == f"127.0.0.1:{parent.port}"  # the TCP peer was the parent
    # The origin saw an origin-form request, as from a client of its own.
    assert site.received and all(r.target.startswith(b"/") for r in site.received)
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/", (200, {}, b"secure hello"))
        proxy = make_proxy({"upstream_proxies": {"default": f"socks5h://127.0.0.1:{parent.port}"},
                            "trust": {"ca_files": [str(origin_cert[0])]}, "interception": {"hosts": ["localhost"]},
                            "connect": {"allowed_ports": [secure.port]}})
        intercepted = curl(proxy, secure.url("/").replace("127.0.0.1", "localhost"),
                           "--cacert", str(proxy.workdir / "state" / "ca.pem"))
        assert (intercepted.status, intercepted.body) == (200, b"secure hello"), intercepted
        blind = curl(proxy, secure.url("/"), "--cacert", str(origin_cert[0]))
        assert (blind.status, blind.body) == (200, b"secure hello"), blind
        records = proxy.summaries(2)
        assert {r["kind"] for r in records} == {"intercepted", "tunnel"}


def test_credentials_and_a_refusing_parent(make_proxy, microsocks, site):
    parent = microsocks(user="carol", password="pa55")
    good = make_proxy({"upstream_proxies": {"default": f"socks5://carol:pa55@127.0.0.1:{parent.port}"}})
    resp, _ = raw_exchange(good.port, request_bytes("GET", site.url("/"), [("Connection", "close")]))
    assert resp.status == 200
    # The parent's URL never appears with its credentials in the log.
    assert good.only_summary()["upstream"]["proxy"] == f"socks5://127.0.0.1:{parent.port}"
    wrong = make_proxy({"upstream_proxies": {"default": f"socks5://carol:nope@127.0.0.1:{parent.port}"}})
    resp, _ = raw_exchange(wrong.port, request_bytes("GET", site.url("/"), [("Connection", "close")]))
    assert_error_response(resp, 502, "parent_proxy_failed")
    assert "refused the user name and password" in wrong.only_summary()["error"]["message"]
    none = make_proxy({"upstream_proxies": {"default": f"socks5://127.0.0.1:{parent.port}"}})
    resp, _ = raw_exchange(none.port, request_bytes("GET", site.url("/"), [("Connection", "close")]))
    assert_error_response(resp, 502, "parent_proxy_failed")
    assert "it may want credentials" in none.only_summary()["error"]["message"]
    # A destination the parent cannot reach: its reply code is in the message.
    closed = free_port()
    resp, _ = raw_exchange(good.port, request_bytes("GET", f"http://127.0.0.1:{closed}/", [("Connection", "close")]))
    assert_error_response(resp, 502, "parent_proxy_failed")


def test_dante_as_the_parent(make_proxy, site, tmp_path):
    if not shutil.which(DANTED) and not shutil.os.path.exists(DANTED):
        pytest.fail("dante-server is needed (make deps installs it)")
    port = free_port()
    conf = tmp_path / "danted.conf"
    conf.write_text(f"""logoutput: stderr
internal: 127.0.0.1 port = {port}
external: lo
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 }}
socks pass {{ from: 127.0.0.0/8 to: 127.0.0.0/8 command: connect }}
""")
    parent = Parent([DANTED, "-f", str(conf), "-N", "1"], port)
    try:
        proxy = make_proxy({"upstream_proxies": {"default": f"socks5h://127.0.0.1:{port}"}})
        resp, _ = raw_exchange(proxy.port, request_bytes("GET", site.url("/"), [("Connection", "close")]))
        assert (resp.status, resp.body) == (200, b"hello")
        assert proxy.only_summary()["upstream"]["proxy"] == f"socks5h://127.0.0.1:{port}"
    finally:
        parent.stop()
