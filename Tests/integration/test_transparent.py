"""Capture without proxy settings: a transparent listener fed by nftables REDIRECT, in network
namespaces the test creates (`netns_transparent.py`), and `lookout exec --transparent`, whose
programs ignore every proxy variable and are still recorded, intercepted where configured."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import client_env
from test_tls_intercept import good_origin, intercepting  # noqa: F401 - the module's origin fixture

HERE = Path(__file__).parent


def namespaces_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nft"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not namespaces_available(), reason="needs root, nft and network namespaces")


def test_transparent_listener_follows_each_redirected_connection(lookout_bin, tmp_path):
    p = subprocess.run(["unshare", "-n", sys.executable, str(HERE / "netns_transparent.py"), str(lookout_bin), str(tmp_path)],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    records = result["summaries"]
    by_code = {r["error"]["code"]: r for r in records if r.get("error")}
    # No redirect behind it: refused, recorded, nothing forwarded.
    assert result["unknown"] == ""
    unknown = by_code["original_destination_unknown"]
    assert unknown["capture"] == "transparent" and unknown["kind"] == "tunnel" and "status" not in unknown
    # Plain HTTP: to the original destination, named by its Host field.
    assert result["plain"].startswith("HTTP/1.1 200") and "Via: 1.1 lookout" in result["plain"]
    plain = next(r for r in records if r["kind"] == "http")
    assert plain["url"].startswith("http://app.test:") and plain["url"].endswith("/fixed/12")
    assert plain["capture"] == "transparent" and plain["original_destination"].startswith("10.9.0.1:")
    assert plain["upstream"]["address"].startswith("10.9.0.1:") or plain["upstream"]["address"].startswith("127.0.0.1:")
    # TLS without SNI: the address names the host, the client gets Lookout's certificate for it.
    tls = json.loads(result["tls"])
    assert tls["body"].startswith("HTTP/1.1 200") and tls["issuer"].startswith("Lookout")
    intercepted = next(r for r in records if r["kind"] == "intercepted")
    assert intercepted["url"].startswith("https://10.9.0.1:") and intercepted["status"] == 200
    assert intercepted["capture"] == "transparent" and intercepted["tls"]["client_ja4"].startswith("t13i")
    # Neither HTTP nor TLS: relayed blind, recorded as a tunnel with its bytes.
    assert result["other"] == "echo: \x00\x01PING\n\n"  # the line, and print's
    tunnels = [r for r in records if r["kind"] == "tunnel" and not r.get("error")]
    assert len(tunnels) == 2  # one REDIRECT-ed, one TPROXY-ed
    for tunnel in tunnels:
        assert tunnel["capture"] == "transparent" and tunnel["original_destination"].startswith("10.9.0.1:")
        assert tunnel["bytes"]["client_to_upstream"] == 7 and tunnel["bytes"]["upstream_to_client"] == 13
    # TPROXY: the socket's own address was the original destination.
    assert result["tproxy"] == "echo: \x00\x01PING\n\n"
    # A connection whose destination is the listener itself.
    assert result["loop"].strip() == ""  # closed without a byte (the client printed an empty line)
    loop = by_code["capture_loop"]
    assert loop["original_destination"] == loop["url"] and "own listener" in loop["error"]["message"]


# MARK: - lookout exec --transparent

def lookout(proxy, *args, timeout=120, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in client_env().items() if "proxy" not in k.lower()}
    env["http_proxy"] = "http://127.0.0.1:9/"  # ignored inside: it would be a loop
    return subprocess.run([str(proxy.binary), *args], capture_output=True, text=True, timeout=timeout, env=env, **kwargs)


def exec_args(proxy, *extra) -> list[str]:
    return ["exec", "--transparent", "--config", str(proxy.config_path), "--proxy", proxy.url, *extra, "--"]


class TinyDNS:
    """Answers A queries for one name with 127.0.0.1, NXDOMAIN for the rest (RFC 1035 §4)."""

    def __init__(self, name: str):
        self.name = name
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.asked: list[str] = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                query, peer = self.sock.recvfrom(512)
            except OSError:
                return
            labels, i = [], 12
            while query[i]:
                labels.append(query[i + 1:i + 1 + query[i]].decode())
                i += 1 + query[i]
            qtype = struct.unpack("!H", query[i + 1:i + 3])[0]
            name = ".".join(labels)
            self.asked.append(name)
            question = query[12:i + 5]
            known = name == self.name
            found = known and qtype == 1
            # The name with another type (AAAA) is NODATA, not NXDOMAIN.
            header = query[:2] + struct.pack("!HHHHH", 0x8180 if known else 0x8183, 1, 1 if found else 0, 0, 0)
            answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 30, 4) + socket.inet_aton("127.0.0.1") if found else b""
            self.sock.sendto(header + question + answer, peer)


JAVA = """
import java.net.URI; import java.net.http.*;
public class Fetch { public static void main(String[] a) throws Exception {
  var r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString());
  System.out.println(r.statusCode() + " " + r.body().length()); } }"""


def test_exec_transparent_records_programs_that_ignore_proxy_settings(make_proxy, pki, good_origin, origin, tmp_path):  # noqa: F811
    proxy = make_proxy(intercepting(pki, good_origin, hosts=["localhost"]))
    https = good_origin.url("/fixed/100").replace("127.0.0.1", "localhost")
    plain_port = origin.port
    runs = {
        "curl": ["curl", "-sS", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", https],
        "http.client": [sys.executable, "-c",
                        "import http.client; c = http.client.HTTPConnection('127.0.0.1', %d, timeout=10); "
                        "c.request('GET', '/fixed/5'); r = c.getresponse(); print(r.status, len(r.read()))" % plain_port],
        "requests": [sys.executable, "-c",
                     "import requests; s = requests.Session(); s.trust_env = False; "
                     "r = s.get('http://127.0.0.1:%d/fixed/6', timeout=10); print(r.status_code, len(r.content))" % plain_port],
        "openssl": ["sh", "-c", "printf 'GET /fixed/9 HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' | "
                    f"openssl s_client -quiet -verify_return_error -CAfile \"$SSL_CERT_FILE\" -servername localhost "
                    f"-connect localhost:{good_origin.port} 2>/dev/null | head -1"],
    }
    outputs = {name: lookout(proxy, *exec_args(proxy), *argv) for name, argv in runs.items()}
    for name, result in outputs.items():
        assert result.returncode == 0, f"{name}: {result.stdout} {result.stderr}"
    assert outputs["curl"].stdout == "200"
    assert outputs["http.client"].stdout.split() == ["200", "5"]
    assert outputs["requests"].stdout.split() == ["200", "6"]
    assert outputs["openssl"].stdout.startswith("HTTP/1.1 200")
    records = proxy.summaries(4, where=lambda r: r["kind"] != "admin")
    intercepted = [r for r in records if r["kind"] == "intercepted"]
    plain = [r for r in records if r["kind"] == "http"]
    assert len(intercepted) == 2 and len(plain) == 2, records
    for r in records:
        assert r["capture"] == "transparent" and r["status"] == 200
        assert r["client"].startswith("127.0.0.1:")
    assert {r["original_destination"] for r in intercepted} == {f"127.0.0.1:{good_origin.port}"}
    assert {r["url"] for r in plain} == {f"http://127.0.0.1:{plain_port}/fixed/5", f"http://127.0.0.1:{plain_port}/fixed/6"}


@pytest.mark.skipif(not shutil.which("java") or not shutil.which("keytool"), reason="needs a JDK")
def test_exec_transparent_captures_java_without_proxy_options(make_proxy, pki, good_origin, tmp_path):  # noqa: F811
    proxy = make_proxy(intercepting(pki, good_origin, hosts=["localhost"]))
    (tmp_path / "Fetch.java").write_text(JAVA)
    url = good_origin.url("/fixed/20").replace("127.0.0.1", "localhost")
    result = lookout(proxy, *exec_args(proxy), "java", str(tmp_path / "Fetch.java"), url)
    assert result.returncode == 0 and result.stdout.split()[-2:] == ["200", "20"], result.stdout + result.stderr
    record = proxy.summaries(1, kind="intercepted")[0]
    assert record["capture"] == "transparent" and record["url"] == url


def test_exec_transparent_relays_dns_and_passes_the_exit_status(make_proxy, origin):
    proxy = make_proxy()
    dns = TinyDNS("app.lookout.test")
    script = ("import urllib.request; print(urllib.request.urlopen('http://app.lookout.test:%d/fixed/3', timeout=10)"
              ".read().hex())" % origin.port)
    result = lookout(proxy, *exec_args(proxy, "--dns", f"127.0.0.1:{dns.port}"), sys.executable, "-c", script)
    assert result.returncode == 0 and result.stdout.strip() == "000102", result.stderr
    assert "app.lookout.test" in dns.asked
    record = proxy.summaries(1, where=lambda r: r["kind"] != "admin")[0]
    assert record["url"] == f"http://app.lookout.test:{origin.port}/fixed/3"
    assert record["original_destination"] == f"127.0.0.1:{origin.port}"
    # The command's status and standard streams are its own.
    status = lookout(proxy, *exec_args(proxy), "sh", "-c", "cat; echo err >&2; exit 7", input="in\n")
    assert (status.returncode, status.stdout, status.stderr.strip()) == (7, "in\n", "err")


def test_exec_transparent_follows_ipv6_connections(make_proxy):
    """IPv6 inside the namespace: redirected to Lookout's [::1] listener there, the original
    destination read with IP6T_SO_ORIGINAL_DST."""
    import http.server

    class V6Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"v6")

        def log_message(self, *args):
            pass
    server = V6Server(("::1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proxy = make_proxy()
        port = server.server_address[1]
        result = lookout(proxy, *exec_args(proxy), "curl", "-sS", "-g", "--noproxy", "*", f"http://[::1]:{port}/")
        assert result.returncode == 0 and result.stdout == "v6", result.stderr
        record = proxy.summaries(1, where=lambda r: r["kind"] != "admin")[0]
        assert record["original_destination"] == f"[::1]:{port}" and record["url"] == f"http://[::1]:{port}/"
        assert record["capture"] == "transparent" and record["client"].startswith("[::1]:")
    finally:
        server.shutdown()


def namespaces_holding(inode: str) -> list[str]:
    holders = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == inode:
                holders.append(pid)
            holders += [pid for fd in os.listdir(f"/proc/{pid}/fd") if os.readlink(f"/proc/{pid}/fd/{fd}") == inode]
        except OSError:
            continue
    return holders


def test_exec_transparent_namespace_is_gone_after_the_command_even_when_lookout_is_killed(make_proxy):
    proxy = make_proxy()
    env = {k: v for k, v in client_env().items() if "proxy" not in k.lower()}
    command = subprocess.Popen([str(proxy.binary), *exec_args(proxy), "sleep", "3"], env=env)
    deadline = time.monotonic() + 10
    inode = os.readlink("/proc/self/ns/net")
    # Set up once the command runs (this process has become it).
    while time.monotonic() < deadline and Path(f"/proc/{command.pid}/comm").read_text().strip() != "sleep":
        time.sleep(0.05)
    namespace = os.readlink(f"/proc/{command.pid}/ns/net")
    assert namespace != inode
    assert str(command.pid) in namespaces_holding(namespace)
    proxy.proc.kill()
    proxy.proc.wait()
    proxy.expected_exit = -9
    assert command.wait(20) == 0
    assert namespaces_holding(namespace) == []


def test_exec_transparent_without_privileges_or_tools_runs_nothing(make_proxy, tmp_path):
    proxy = make_proxy()
    marker = tmp_path / "ran"
    nobody = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(proxy.binary),
                             *exec_args(proxy), "touch", str(marker)], capture_output=True, text=True, timeout=60)
    assert nobody.returncode == 1 and "needs root" in nobody.stderr
    env = {**{k: v for k, v in client_env().items() if "proxy" not in k.lower()}, "PATH": "/nonexistent"}
    no_tools = subprocess.run([str(proxy.binary), *exec_args(proxy), "touch", str(marker)], capture_output=True,
                              text=True, timeout=60, env=env)
    assert no_tools.returncode == 1 and "needs ip" in no_tools.stderr and "nft" in no_tools.stderr
    assert not marker.exists()
