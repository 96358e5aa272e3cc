"""Breakpoints: an exchange a rule matches waits — before its request goes upstream, or before its
response reaches the client — with its head and up to `max_body_bytes` of body, until an operator
resumes it (with edits), aborts it (502 aborted_by_operator), answers it, or its timeout applies
`on_timeout` (continue, or 502 breakpoint_timeout). Driven through the admin API with curl and
Python clients, the `lookout held|resume|abort|answer|breakpoint` commands, and an HTTP/2 client
(httpx) through interception. Every bad edit gets a 400 naming its field and leaves the exchange
held."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import subprocess
import threading

import httpx
import pytest

import origins
from conftest import client_env, curl, py_request, raw_exchange, wait_until
from test_tls_intercept import ca_file, intercepting


def admin(proxy, method: str, path: str, body: bytes | dict | None = None) -> tuple[int, dict]:
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    body = body or b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    resp, _ = raw_exchange(proxy.port, head + body)
    return resp.status, json.loads(resp.body) if resp.body else {}


def held(proxy) -> list[dict]:
    status, body = admin(proxy, "GET", "/exchanges?state=held")
    assert status == 200, body
    return body["exchanges"]


def wait_held(proxy, count: int = 1) -> list[dict]:
    return wait_until(lambda: len(held(proxy)) >= count and held(proxy), timeout=10, message=f"{count} held")


class Background:
    """A client request running in a thread while the test acts on it."""

    def __init__(self, call):
        self.result = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call):
        try:
            self.result = call()
        except Exception as error:  # noqa: BLE001 - reported by join()
            self.error = error

    def join(self, timeout: float = 15):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the client is still waiting"
        if self.error:
            raise self.error
        return self.result


def breakpoints(*rules, **bounds) -> dict:
    return {"breakpoints": {"rules": list(rules), **bounds}}


def lookout(proxy, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(proxy.binary), *args, "--proxy", f"127.0.0.1:{proxy.port}"], capture_output=True,
                          text=True, timeout=30, env=client_env())


def test_a_paused_post_is_edited_then_resumed_and_the_origin_gets_the_edit(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "method:POST", "on": ["request"]}))
    before = len(origin.requests)
    body = json.dumps({"user": "ann", "admin": False}).encode()
    client = Background(lambda: py_request(proxy, "POST", origin.url("/echo?body=1"), body=body,
                                           headers={"Content-Type": "application/json", "X-Trace": "t1"}))
    [entry] = wait_held(proxy)
    assert entry["phase"] == "request" and entry["rule"] == "1: method:POST"
    assert entry["request"]["method"] == "POST" and entry["request"]["url"] == origin.url("/echo?body=1")
    assert json.loads(entry["request"]["body"]) == {"user": "ann", "admin": False}
    assert entry["request"]["body_editable"] is True and entry["request"]["body_bytes"] == len(body)
    assert ["x-trace", "t1"] in [[n.lower(), v] for n, v in entry["request"]["headers"]]
    status, one = admin(proxy, "GET", f"/exchanges/{entry['id']}")
    assert status == 200 and one["id"] == entry["id"] and one["state"] == "held"
    assert len(origin.requests) == before, "nothing went upstream while held"

    edited = json.dumps({"user": "ann", "admin": True}).encode()
    status, answer = admin(proxy, "POST", f"/exchanges/{entry['id']}/resume",
                           {"headers": {"set": {"X-Debug": "on"}, "remove": ["X-Trace"]}, "body": edited.decode()})
    assert status == 200 and answer["action"] == "continue", answer
    code, _, data = client.join()
    echoed = json.loads(data)
    assert code == 200 and echoed["body"] == edited.decode()
    names = {n.lower(): v for n, v in echoed["headers"]}
    assert names["x-debug"] == "on" and "x-trace" not in names
    assert names["content-length"] == str(len(edited)), "Content-Length follows the edited body"
    assert held(proxy) == []

    summary = proxy.only_summary(method="POST", kind="http")
    assert summary["held_ms"] > 0 and summary["modified_by"] == ["breakpoint:1", f"operator:{answer['by']}"]
    [paused] = proxy.log_records(1, lambda r: r.get("event") == "exchange.didPause")
    assert paused["phase"] == "request" and paused["body_editable"] is True and paused["body_bytes"] == len(body)
    [resumed] = proxy.log_records(1, lambda r: r.get("event") == "exchange.didResume")
    assert resumed["action"] == "continue" and resumed["by"] == answer["by"]
    assert sorted(resumed["changes"]) == ["body", "header:x-debug", "header:x-trace"]
    log = subprocess.run([str(proxy.binary), "log", "--filter", "modified:true", str(proxy.log_path)], capture_output=True,
                         text=True, timeout=30, env=client_env())
    rows = log.stdout.strip().splitlines()[1:]
    assert log.returncode == 0 and len(rows) == 1, log.stdout + log.stderr
    assert " POST " in rows[0] and rows[0].endswith(origin.url("/echo?body=1"))


def test_a_paused_response_gets_another_status_and_body(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "status:4xx", "on": ["response"]}))
    before = len(origin.requests)
    client = Background(lambda: curl(proxy, origin.url("/status/404")))
    [entry] = wait_held(proxy)
    assert entry["phase"] == "response" and entry["response"]["status"] == 404
    assert entry["response"]["body"] == "status 404\n" and entry["response"]["body_editable"] is True
    assert len(origin.requests) == before + 1
    status, _ = admin(proxy, "POST", f"/exchanges/{entry['id']}/resume", {"status": 200, "body": "found after all\n"})
    assert status == 200
    result = client.join()
    assert result.status == 200 and result.body == b"found after all\n"
    assert result.header("Content-Length") == "16"
    summary = proxy.only_summary(kind="http")
    assert summary["status"] == 200 and "modified_by" in summary


def test_abort_answer_and_both_timeouts(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "url~/abort", "on": ["request"]},
                                   {"filter": "url~/answer", "on": ["request", "response"]},
                                   {"filter": "url~/slow-continue", "timeout": 0.5},
                                   {"filter": "url~/slow-abort", "timeout": 0.5, "on_timeout": "abort"}))
    aborted = Background(lambda: curl(proxy, origin.url("/echo/abort")))
    [entry] = wait_held(proxy)
    assert admin(proxy, "POST", f"/exchanges/{entry['id']}/abort")[0] == 200
    result = aborted.join()
    assert result.status == 502 and result.header("X-Lookout-Error") == "aborted_by_operator"
    summary = proxy.only_summary(kind="http", where=lambda r: r["url"].endswith("/abort"))
    assert summary["error"]["code"] == "aborted_by_operator" and summary["error"]["aborted_by"].startswith("127.0.0.1:")

    answered = Background(lambda: curl(proxy, origin.url("/echo/answer")))
    [entry] = wait_held(proxy)
    status, _ = admin(proxy, "POST", f"/exchanges/{entry['id']}/answer",
                      {"status": 201, "headers": {"Content-Type": "text/plain", "X-From": "operator"}, "body": "made up\n"})
    assert status == 200
    result = answered.join()
    assert result.status == 201 and result.body == b"made up\n" and result.header("X-From") == "operator"
    assert not any("/answer" in target for _, target, _ in origin.requests), "an answer sends nothing upstream"

    continued = curl(proxy, origin.url("/echo/slow-continue"))
    assert continued.status == 200
    [resumed] = proxy.log_records(1, lambda r: r.get("event") == "exchange.didResume" and r["by"] == "timeout")
    assert resumed["action"] == "continue" and resumed["held_ms"] >= 450
    timed_out = curl(proxy, origin.url("/echo/slow-abort"))
    assert timed_out.status == 502 and timed_out.header("X-Lookout-Error") == "breakpoint_timeout"
    assert not any("slow-abort" in target for _, target, _ in origin.requests)


def test_bad_edits_name_their_field_and_the_exchange_stays_held(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "method:PUT"}))
    client = Background(lambda: py_request(proxy, "PUT", origin.url("/echo?body=1"), body=b"original"))
    [entry] = wait_held(proxy)
    path = f"/exchanges/{entry['id']}/resume"
    cases = [
        (b"{not json", ""),
        ({"colour": "red"}, "colour"),
        ({"method": "BAD METHOD"}, "method"),
        ({"method": 5}, "method"),
        ({"url": "ftp://x/"}, "url"),
        ({"status": 200}, "status"),
        ({"headers": {"set": {"Bad Name": "x"}}}, "headers.set"),
        ({"headers": {"set": {"X-A": "a\r\nInjected: 1"}}}, "headers.set"),
        ({"headers": {"set": {"Content-Length": "3"}}}, "headers.set"),
        ({"headers": {"remove": "X-A"}}, "headers.remove"),
        ({"headers": []}, "headers"),
        ({"body": "a", "body_base64": "YQ=="}, "body"),
        ({"body_base64": "***"}, "body_base64"),
    ]
    for edit, field in cases:
        status, answer = admin(proxy, "POST", path, edit)
        assert status == 400, (edit, answer)
        assert answer.get("field", "") == field and answer["error"].startswith(field), (edit, answer)
        assert [e["id"] for e in held(proxy)] == [entry["id"]], "still held after a bad edit"
    assert admin(proxy, "POST", "/exchanges/999999/resume")[0] == 404
    assert admin(proxy, "GET", f"{path}")[0] == 405
    assert admin(proxy, "POST", path, {"body": "changed"})[0] == 200
    code, _, data = client.join()
    assert code == 200 and json.loads(data)["body"] == "changed"


def test_a_body_over_the_limit_pauses_on_its_head_and_arrives_whole(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "method:POST"}, max_body_bytes=1000))
    payload = origins.pattern(300_000)
    client = Background(lambda: py_request(proxy, "POST", origin.url("/echo"), body=payload))
    [entry] = wait_held(proxy)
    assert entry["request"]["body_editable"] is False
    status, answer = admin(proxy, "POST", f"/exchanges/{entry['id']}/resume", {"body": "short"})
    assert status == 400 and answer["field"] == "body"
    assert admin(proxy, "POST", f"/exchanges/{entry['id']}/resume", {"headers": {"set": {"X-Seen": "1"}}})[0] == 200
    code, _, data = client.join()
    echoed = json.loads(data)
    assert code == 200 and echoed["body_length"] == len(payload)
    assert echoed["body_sha256"] == hashlib.sha256(payload).hexdigest(), "no byte lost or changed"
    [paused] = proxy.log_records(1, lambda r: r.get("event") == "exchange.didPause")
    assert paused["body_editable"] is False


def test_max_held_lets_the_newest_go_on_unpaused(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "url~/echo"}, max_held=1))
    first = Background(lambda: curl(proxy, origin.url("/echo/1")))
    wait_held(proxy)
    second = curl(proxy, origin.url("/echo/2"))
    assert second.status == 200, "the second went on while the first is held"
    [skipped] = proxy.log_records(1, lambda r: r.get("event") == "exchange.didNotPause")
    assert skipped["reason"].startswith("max_held") and skipped["phase"] == "request"
    [entry] = held(proxy)
    admin(proxy, "POST", f"/exchanges/{entry['id']}/resume")
    assert first.join().status == 200


def test_a_client_that_leaves_while_held_frees_its_place(make_proxy, origin):
    proxy = make_proxy(breakpoints({"filter": "url~/echo"}, max_held=1))
    sock = __import__("socket").create_connection(("127.0.0.1", proxy.port))
    sock.sendall(f"GET {origin.url('/echo/gone')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    wait_held(proxy)
    sock.close()
    wait_until(lambda: held(proxy) == [], message="released when the client left")
    after = Background(lambda: curl(proxy, origin.url("/echo/after")))
    [entry] = wait_held(proxy)
    assert entry["request"]["url"].endswith("/echo/after"), "its place was free for the next one"
    assert not proxy.log_records(where=lambda r: r.get("event") == "exchange.didNotPause")
    admin(proxy, "POST", f"/exchanges/{entry['id']}/resume")
    assert after.join().status == 200


def test_breakpoints_are_added_listed_and_removed_at_run_time(make_proxy, origin):
    proxy = make_proxy()
    assert admin(proxy, "GET", "/breakpoints") == (200, {"breakpoints": [], "held": 0})
    assert curl(proxy, origin.url("/echo")).status == 200
    status, rule = admin(proxy, "POST", "/breakpoints", {"filter": "host:127.0.0.1 and method:GET", "on": ["response"],
                                                         "timeout": 60, "on_timeout": "abort"})
    assert status == 201 and rule == {"id": 1, "filter": "host:127.0.0.1 and method:GET", "on": ["response"],
                                      "timeout": 60.0, "on_timeout": "abort"}
    client = Background(lambda: curl(proxy, origin.url("/echo")))
    [entry] = wait_held(proxy)
    assert entry["phase"] == "response"
    admin(proxy, "POST", f"/exchanges/{entry['id']}/resume")
    assert client.join().status == 200
    for bad, field in [({"filter": "host:("}, "filter"), ({"filter": "nope:1"}, "filter"),
                       ({"filter": "method:GET", "on": ["later"]}, "on"), ({"filter": "method:GET", "timeout": -1}, "timeout"),
                       ({"filter": "method:GET", "on_timeout": "explode"}, "on_timeout"), ({}, "filter")]:
        status, answer = admin(proxy, "POST", "/breakpoints", bad)
        assert status == 400 and answer["field"] == field, (bad, answer)
    assert admin(proxy, "DELETE", "/breakpoints/1") == (200, {"deleted": 1})
    assert admin(proxy, "DELETE", "/breakpoints/1")[0] == 404
    assert curl(proxy, origin.url("/echo")).status == 200, "no breakpoint any more"


def test_the_commands_list_resume_answer_and_abort(make_proxy, origin, tmp_path):
    proxy = make_proxy(breakpoints({"filter": "method:POST"}))
    assert lookout(proxy, "held").stdout.strip() == "nothing is held"
    client = Background(lambda: py_request(proxy, "POST", origin.url("/echo?body=1"), body=b"from client"))
    [entry] = wait_held(proxy)
    listing = lookout(proxy, "held")
    assert listing.returncode == 0 and f"{entry['id']}\trequest\tPOST {origin.url('/echo?body=1')}" in listing.stdout
    (tmp_path / "body.txt").write_bytes(b"from a file")
    bad = lookout(proxy, "resume", str(entry["id"]), "--set-header", "no-colon")
    assert bad.returncode != 0 and "NAME:VALUE" in bad.stderr
    done = lookout(proxy, "resume", str(entry["id"]), "--set-header", "X-Cli: yes", "--body-file", str(tmp_path / "body.txt"))
    assert done.returncode == 0, done.stderr
    code, _, data = client.join()
    echoed = json.loads(data)
    assert echoed["body"] == "from a file" and ["X-Cli", "yes"] in echoed["headers"]

    client = Background(lambda: py_request(proxy, "POST", origin.url("/echo"), body=b"x"))
    [entry] = wait_held(proxy)
    assert lookout(proxy, "answer", str(entry["id"]), "--status", "418", "--body", "teapot").returncode == 0
    assert client.join()[0] == 418
    client = Background(lambda: py_request(proxy, "POST", origin.url("/echo"), body=b"x"))
    [entry] = wait_held(proxy)
    assert lookout(proxy, "abort", str(entry["id"])).returncode == 0
    assert client.join()[0] == 502
    missing = lookout(proxy, "abort", str(entry["id"]))
    assert missing.returncode == 1 and "is not held" in missing.stderr
    added = lookout(proxy, "breakpoint", "add", "method:DELETE", "--on", "request,response")
    assert added.returncode == 0 and json.loads(added.stdout)["on"] == ["request", "response"]
    assert json.loads(lookout(proxy, "breakpoint", "list").stdout)["breakpoints"][1]["filter"] == "method:DELETE"
    assert lookout(proxy, "breakpoint", "remove", "2").returncode == 0


def test_http2_clients_pause_through_interception(make_proxy, pki):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        proxy = make_proxy(intercepting(pki, origin, breakpoints={"rules": [{"filter": "method:POST"}]}))
        context = __import__("ssl").create_default_context(cafile=ca_file(proxy))

        async def post():
            async with httpx.AsyncClient(http2=True, proxy=proxy.url, verify=context, timeout=30) as client:
                response = await client.post(origin.url("/echo?body=1"), content=b'{"n":1}')
                return response.http_version, response.status_code, response.json()

        client = Background(lambda: asyncio.run(post()))
        [entry] = wait_held(proxy)
        assert entry["request"]["url"] == origin.url("/echo?body=1") and entry["request"]["body"] == '{"n":1}'
        admin(proxy, "POST", f"/exchanges/{entry['id']}/resume", {"body": '{"n":2}'})
        version, status, echoed = client.join()
        assert version == "HTTP/2" and status == 200 and echoed["body"] == '{"n":2}'
        summary = proxy.only_summary(method="POST", kind="intercepted")
        assert summary["http_version"] == "HTTP/2" and summary["modified_by"]
    finally:
        origin.stop()


def test_a_bad_breakpoint_in_the_config_names_its_line(make_proxy):
    proxy = make_proxy(breakpoints({"filter": "status:abc"}), start=False)
    check = subprocess.run([str(proxy.binary), "config", "check", str(proxy.config_path)], capture_output=True,
                           text=True, timeout=30, env=client_env())
    assert check.returncode != 0 and "breakpoints.rules[0].filter" in check.stderr + check.stdout


def test_an_admin_body_over_its_limit_is_refused_before_it_is_read(make_proxy):
    proxy = make_proxy()
    head = (b"POST /breakpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 16777217\r\n"
            b"Connection: close\r\n\r\n")
    resp, _ = raw_exchange(proxy.port, head)
    assert resp.status == 413 and resp.header("X-Lookout-Error") == "request_body_too_large"
    record = proxy.only_summary(kind="admin")
    assert record["error"]["code"] == "request_body_too_large"


def test_a_chunked_admin_body_is_refused_once_it_passes_its_limit(make_proxy):
    """No length up front: the body is read until it passes 16 MiB, then refused, recorded and
    the connection closed; nothing of it is acted on."""
    proxy = make_proxy()
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
    sock.sendall(b"POST /breakpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n" % 65536 + b"{" * 65536 + b"\r\n"

    def send():
        try:
            for _ in range(16 * 16 + 8):  # 16 MiB and half a MiB more, never ended
                sock.sendall(chunk)
        except OSError:
            pass  # the proxy closed after refusing

    sender = threading.Thread(target=send)
    sender.start()
    received = origins.read_head(sock, timeout=30)
    sender.join(timeout=30)
    sock.close()
    head = received.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert head.startswith("HTTP/1.1 413"), head
    assert "X-Lookout-Error: request_body_too_large" in head
    record = proxy.only_summary(kind="admin")
    assert record["error"]["code"] == "request_body_too_large"
    assert record["method"] == "POST" and record["status"] == 413
    assert admin(proxy, "GET", "/breakpoints") == (200, {"breakpoints": [], "held": 0})
