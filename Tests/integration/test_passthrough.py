"""Interception that learns who pins (`interception.learn_passthrough`): a Python client that
trusts only the origin's own CA refuses Lookout's certificate once — recorded as
`tls.clientRejectedInterception` — and is tunnelled blindly from its next connection on, also
after a restart; `lookout passthrough list|forget|clear` manage the pairs, and `forget` brings
interception back."""

from __future__ import annotations

import socket
import ssl
import subprocess
import urllib.request

from conftest import client_env
from origins import pattern
from test_tls_intercept import good_origin, intercepting  # noqa: F401 - the module's origin fixture


def pinned_client(proxy_port: int, origin_port: int, cafile: str) -> str:
    """GET through CONNECT trusting only `cafile`: the body, or the TLS error."""
    sock = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
    sock.sendall(f"CONNECT localhost:{origin_port} HTTP/1.1\r\nHost: localhost:{origin_port}\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    context = ssl.create_default_context(cafile=cafile)
    try:
        tls = context.wrap_socket(sock, server_hostname="localhost")
    except ssl.SSLError as error:
        sock.close()
        return f"refused: {error.reason}"
    tls.sendall(b"GET /fixed/7 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := tls.recv(65536):
        data += chunk
    tls.close()
    return data.split(b"\r\n\r\n", 1)[1].decode("latin-1")


def passthrough(proxy, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(proxy.binary), "passthrough", *args, "--config", str(proxy.config_path)],
                          capture_output=True, text=True, env=client_env(), timeout=30)


def test_a_client_that_pins_is_learned_and_tunnelled_blindly(make_proxy, pki, good_origin, tmp_path):  # noqa: F811
    state = str(tmp_path / "state")
    config = intercepting(pki, good_origin, interception={"learn_passthrough": True}, state_dir=state)
    proxy = make_proxy(config)
    root = str(pki.root.cert)
    assert pinned_client(proxy.port, good_origin.port, root).startswith("refused")
    rejected = proxy.log_records(where=lambda r: r.get("event") == "tls.clientRejectedInterception", expected=1)[0]
    assert rejected["learned"] is True and rejected["sni"] == "localhost" and rejected["ja4"].startswith("t13d")
    # Its next connection goes straight to the origin, which it trusts.
    assert pinned_client(proxy.port, good_origin.port, root) == pattern(7).decode("latin-1")
    tunnel = proxy.only_summary(kind="tunnel")
    assert tunnel["tls"]["client_ja4"] == rejected["ja4"] and tunnel["bytes"]["upstream_to_client"] > 0
    listed = passthrough(proxy, "list")
    assert listed.returncode == 0 and f"localhost  {rejected['ja4']}" in listed.stdout, listed.stdout
    status = urllib.request.urlopen(f"{proxy.url}/", timeout=10).read().decode()
    assert "passthrough: 1 client/host pairs" in status
    proxy.stop()
    # Kept across a restart.
    again = make_proxy(config)
    body = pinned_client(again.port, good_origin.port, root)
    assert not body.startswith("refused"), body
    assert again.only_summary(kind="tunnel")["tls"]["client_ja4"] == rejected["ja4"]
    # forget: intercepted (and refused) again, on the running proxy's next connection.
    forgot = passthrough(again, "forget", "localhost")
    assert forgot.returncode == 0 and "forgot 1" in forgot.stdout
    assert pinned_client(again.port, good_origin.port, root).startswith("refused")
    assert passthrough(again, "clear").returncode == 0 and "no client" in passthrough(again, "list").stdout


def test_an_ordinary_client_is_still_intercepted_and_nothing_is_learned_without_the_setting(make_proxy, pki, good_origin):  # noqa: F811
    proxy = make_proxy(intercepting(pki, good_origin))
    assert pinned_client(proxy.port, good_origin.port, str(pki.root.cert)).startswith("refused")
    rejected = proxy.log_records(where=lambda r: r.get("event") == "tls.clientRejectedInterception", expected=1)[0]
    assert rejected["learned"] is False
    assert pinned_client(proxy.port, good_origin.port, str(pki.root.cert)).startswith("refused"), "still intercepted"
