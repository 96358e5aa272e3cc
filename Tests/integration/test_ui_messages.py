"""The Messages pane of the web UI in headless Chromium: it fills while an event stream is still
open, and after the end shows every captured message; gRPC messages show as protobuf fields, by
number without a schema and by name with `grpc.descriptor_sets` (written by protoc)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from types import SimpleNamespace

import pytest

from conftest import curl, wait_until
from test_ui import browser, rows, screenshot  # noqa: F401 - the module's browser fixture
from test_ui_operator import click

pytest.importorskip("selenium", reason="make deps installs selenium")
from selenium.webdriver.common.by import By  # noqa: E402


def slow_events(count: int, every: float) -> int:
    """An origin answering one request with `count` SSE events, one every `every` seconds."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = server.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            for index in range(count):
                time.sleep(every)
                event = b'data: {"token": %d}\n\n' % index
                conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
            conn.sendall(b"0\r\n\r\n")
        server.close()
    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def message_rows(browser) -> list[str]:
    return browser.execute_script(
        "return [...document.querySelectorAll('#messages-list li')].map(li => li.textContent)")


def test_the_messages_pane_fills_while_the_stream_is_open(make_proxy, browser, tmp_path):  # noqa: F811
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]}})
    browser.get(f"http://127.0.0.1:{proxy.port}/ui/")
    wait_until(lambda: browser.find_element(By.ID, "stream-state").text == "live", timeout=10)
    port = slow_events(8, 0.5)
    url = f"http://127.0.0.1:{port}/tokens"
    done = threading.Thread(target=lambda: curl(proxy, url, "-N"), daemon=True)
    done.start()
    running = wait_until(lambda: next((r for r in rows(browser) if r["cells"]["c-url"] == url and "running" in r["cls"]), None),
                         timeout=10, message="the stream's row, running")
    click(browser, f'#spacer .row[data-id="{running["id"]}"] .c-url')
    wait_until(lambda: len(message_rows(browser)) >= 2, timeout=10, message="messages while the stream is open")
    assert done.is_alive(), "the stream was still open when its messages showed"
    seen = message_rows(browser)
    # Opened mid-stream: the pane shows what comes from then on (the records before were not kept).
    assert all(row.startswith("← +") and '"token": ' in row for row in seen), seen
    browser.execute_script("document.getElementById('messages-list').scrollIntoView()")
    screenshot(browser, "messages")
    done.join(15)
    wait_until(lambda: len(message_rows(browser)) == 8, timeout=10, message="all eight after the end")
    assert '"token": 7' in message_rows(browser)[-1]
    assert browser.find_element(By.CSS_SELECTOR, "#messages-list pre").get_attribute("data-format") == "json"


SHOP_PROTO = """syntax = "proto3";
package lookout.test;
message Query { string name = 1; }
message Item { string name = 1; int32 count = 2; Query echo = 3; }
service Shop { rpc Get (Query) returns (Item); }
"""


def grpc_pane(make_proxy, browser, pki, tmp_path, descriptor_sets):  # noqa: F811
    import grpc
    from test_grpc import channel_through
    from test_tls_intercept import intercepting
    item = b"\x0a\x05apple\x10\x03\x1a\x04\x0a\x02hi"  # Item{name: "apple", count: 3, echo: {name: "hi"}}
    handlers = grpc.method_handlers_generic_handler("lookout.test.Shop", {
        "Get": grpc.unary_unary_rpc_method_handler(lambda request, context: item)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handlers,))
    cert, key = pki.good.tls
    port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())]))
    server.start()
    extra = {"grpc": {"descriptor_sets": descriptor_sets}} if descriptor_sets else {}
    proxy = make_proxy(intercepting(pki, SimpleNamespace(port=port),
                                    capture={"path": str(tmp_path / "cap"), "rules": [{"hosts": ["**"]}]}, **extra))
    try:
        with channel_through(proxy, port) as channel:
            assert channel.unary_unary("/lookout.test.Shop/Get")(b"\x0a\x02hi", timeout=10) == item
    finally:
        server.stop(0)
    record = proxy.only_summary(kind="intercepted")
    browser.get(f"http://127.0.0.1:{proxy.port}/ui/")
    wait_until(lambda: any(r["id"] == record["id"] for r in rows(browser)), timeout=10)
    click(browser, f'#spacer .row[data-id="{record["id"]}"] .c-url')
    wait_until(lambda: len(message_rows(browser)) == 2, timeout=10, message="the request and the response")
    return message_rows(browser)


def test_grpc_messages_show_as_fields_by_number_then_by_name(make_proxy, browser, pki, tmp_path):  # noqa: F811
    shown = grpc_pane(make_proxy, browser, pki, tmp_path / "a", None)
    assert '1: "apple"' in shown[1] and "2: 3" in shown[1] and '1: "hi"' in shown[1], shown
    (tmp_path / "shop.proto").write_text(SHOP_PROTO)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--descriptor_set_out={tmp_path / 'shop.pb'}",
                    str(tmp_path / "shop.proto")], check=True)
    shown = grpc_pane(make_proxy, browser, pki, tmp_path / "b", [str(tmp_path / "shop.pb")])
    assert 'name (1): "hi"' in shown[0], shown
    assert 'name (1): "apple"' in shown[1] and "count (2): 3" in shown[1] and "echo (3) {" in shown[1], shown
    browser.execute_script("document.getElementById('messages-list').scrollIntoView()")
    screenshot(browser, "messages-grpc")
