"""`lookout exec` and `lookout env`: programs sent through an intercepting Lookout trust its CA
with no set-up of their own — curl, Python requests, pip from a local index, Java's HttpClient, and git cloning over https
from a local server — and `lookout env` prints the same variables for bash, fish and PowerShell."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import client_env
from test_tls_intercept import good_origin, intercepting  # noqa: F401 - the module's origin fixture


def lookout(proxy, *args, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in client_env().items() if "proxy" not in k.lower()}
    return subprocess.run([str(proxy.binary), *args], capture_output=True, text=True, timeout=120, env=env, **kwargs)


def exec_args(proxy) -> list[str]:
    return ["exec", "--config", str(proxy.config_path), "--proxy", proxy.url, "--"]


def test_curl_and_python_trust_the_ca_through_exec(make_proxy, pki, good_origin):  # noqa: F811
    proxy = make_proxy(intercepting(pki, good_origin))
    url = good_origin.url("/fixed/100")
    result = lookout(proxy, *exec_args(proxy), "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url)
    assert result.returncode == 0 and result.stdout == "200", result.stderr
    script = f"import requests; r = requests.get({url!r}, timeout=10); print(r.status_code, len(r.content))"
    result = lookout(proxy, *exec_args(proxy), sys.executable, "-c", script)
    assert result.returncode == 0 and result.stdout.split() == ["200", "100"], result.stderr
    records = proxy.summaries(2, kind="intercepted")
    assert all(r["status"] == 200 for r in records)
    # The command's own exit status is exec's.
    assert lookout(proxy, *exec_args(proxy), "sh", "-c", "exit 7").returncode == 7
    missing = lookout(proxy, "exec", "--config", str(proxy.config_path), "--", "no-such-program-here")
    assert missing.returncode == 127 and "cannot run no-such-program-here" in missing.stderr


@pytest.mark.skipif(not shutil.which("java") or not shutil.which("keytool"), reason="needs a JDK")
def test_java_gets_the_proxy_and_a_trust_store(make_proxy, pki, good_origin, tmp_path):  # noqa: F811
    proxy = make_proxy(intercepting(pki, good_origin))
    (tmp_path / "Fetch.java").write_text("""
import java.net.URI; import java.net.http.*;
public class Fetch { public static void main(String[] a) throws Exception {
  var r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString());
  System.out.println(r.statusCode() + " " + r.body().length()); } }""")
    result = lookout(proxy, *exec_args(proxy), "java", str(tmp_path / "Fetch.java"), good_origin.url("/fixed/20"))
    assert result.returncode == 0 and result.stdout.split()[-2:] == ["200", "20"], result.stdout + result.stderr
    assert proxy.summaries(1, kind="intercepted")[0]["status"] == 200


def test_git_clones_over_https_through_lookout(make_proxy, pki, tmp_path):
    # A bare repository served as static files (git's dumb HTTP protocol) over TLS.
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "hello.txt").write_text("through lookout\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "first"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "served" / "repo.git")], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "served" / "repo.git"), "update-server-info"], check=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "served")))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*(str(p) for p in pki.good.tls))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    origin = type("Origin", (), {"port": port})
    try:
        proxy = make_proxy(intercepting(pki, origin))
        result = lookout(proxy, *exec_args(proxy), "git", "clone", "-q", f"https://localhost:{port}/repo.git",
                         str(tmp_path / "clone"))
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "clone" / "hello.txt").read_text() == "through lookout\n"
        assert any(r["url"].endswith("/repo.git/info/refs?service=git-upload-pack") or "/repo.git/" in r["url"]
                   for r in proxy.summaries(2, kind="intercepted"))
    finally:
        server.shutdown()


def test_env_prints_the_same_for_each_shell(make_proxy, pki, good_origin):  # noqa: F811
    proxy = make_proxy(intercepting(pki, good_origin))
    base = ["env", "--config", str(proxy.config_path), "--proxy", proxy.url]
    bash = lookout(proxy, *base)
    assert bash.returncode == 0 and f"export https_proxy='{proxy.url}'" in bash.stdout and "export CURL_CA_BUNDLE=" in bash.stdout
    fish = lookout(proxy, *base, "--shell", "fish").stdout
    assert f"set -gx HTTPS_PROXY '{proxy.url}'" in fish
    powershell = lookout(proxy, *base, "--shell", "powershell").stdout
    assert f"$env:http_proxy = '{proxy.url}'" in powershell
    assert lookout(proxy, *base, "--shell", "tcsh").returncode != 0
    # Evaluated by bash, the variables send curl through the proxy trusting the CA.
    script = f'eval "$({proxy.binary} {" ".join(base)})"; curl -sS -o /dev/null -w "%{{http_code}}" {good_origin.url("/fixed/5")}'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in client_env().items() if "proxy" not in k.lower()})
    assert result.stdout == "200", result.stderr
    bundle = next(line.split("=", 1)[1].strip("'") for line in bash.stdout.splitlines() if line.startswith("export CURL_CA_BUNDLE="))
    assert open(bundle).read().count("BEGIN CERTIFICATE") > 1, "the system roots and Lookout's CA"


def test_pip_installs_from_a_local_index_through_lookout(make_proxy, pki, tmp_path):
    import hashlib
    import zipfile
    served = tmp_path / "served"
    (served / "files").mkdir(parents=True)
    wheel = served / "files" / "tinypkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "VALUE = 42\n")
        archive.writestr("tinypkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n")
        archive.writestr("tinypkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr("tinypkg-0.1.dist-info/RECORD", "")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (served / "simple" / "tinypkg").mkdir(parents=True)
    (served / "simple" / "tinypkg" / "index.html").write_text(
        f'<html><body><a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a></body></html>')
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(served)))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*(str(p) for p in pki.good.tls))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        proxy = make_proxy(intercepting(pki, type("Origin", (), {"port": port})))
        result = lookout(proxy, *exec_args(proxy), sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                         "--disable-pip-version-check", "--no-cache-dir", "--index-url", f"https://localhost:{port}/simple/",
                         "-d", str(tmp_path / "got"), "tinypkg")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "got" / wheel.name).read_bytes() == wheel.read_bytes()
        urls = [r["url"] for r in proxy.summaries(2, kind="intercepted")]
        assert any(u.endswith("/simple/tinypkg/") for u in urls) and any(u.endswith(wheel.name) for u in urls), urls
    finally:
        server.shutdown()
