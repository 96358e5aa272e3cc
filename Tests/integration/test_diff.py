"""`lookout diff A B`: two recordings of the same flow — Lookout logs with captured bodies, or HAR
files — compared for CI: equal under the ignores (dates, request ids), different without them or
when a status or a body changes; JSON output for programs; exit 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import uuid

from conftest import client_env, py_request
from origins import ScriptedOrigin


def record(make_proxy, tmp_path, site, name: str, order_status: int = 201) -> str:
    """Runs the flow through a proxy of its own and returns its log's path."""
    site.route("/order", lambda req: (order_status, {"Content-Type": "application/json", "X-Request-Id": uuid.uuid4().hex},
                                      json.dumps({"requestId": uuid.uuid4().hex, "total": 12, "ok": True}).encode()))
    proxy = make_proxy({"capture": {"path": str(tmp_path / f"cap-{name}"), "rules": [{"hosts": ["127.0.0.1"]}]},
                        "log": {"include_headers": True}})
    for method, path, body in [("GET", "/items", None), ("POST", "/order", b'{"sku":"A-1"}'), ("GET", "/items", None)]:
        py_request(proxy, method, site.url(path), body=body, headers={"Content-Type": "application/json"} if body else {})
    proxy.summaries(3, kind="http")
    proxy.stop()
    return str(proxy.log_path)


def diff(binary, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "diff", *args], capture_output=True, text=True, timeout=60, env=client_env())


IGNORES = ["--ignore", "header:date", "--ignore", "header:x-request-id", "--ignore", "json:$.requestId"]


def test_two_recordings_of_a_flow_are_equal_under_the_ignores(make_proxy, tmp_path, lookout_bin):
    with ScriptedOrigin() as site:
        site.route("/items", lambda req: (200, {"Content-Type": "application/json", "Date": uuid.uuid4().hex},
                                          json.dumps({"items": [{"sku": "A-1", "count": 3}]}).encode()))
        first = record(make_proxy, tmp_path, site, "one")
        second = record(make_proxy, tmp_path, site, "two")
        changed = record(make_proxy, tmp_path, site, "three", order_status=500)
    plain = diff(lookout_bin, first, second)
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "response header x-request-id" in plain.stdout and "body $.requestId (changed)" in plain.stdout
    same = diff(lookout_bin, first, second, *IGNORES)
    assert same.returncode == 0 and same.stdout.strip().endswith("equal: 3 paired, 0 changed, 0 added, 0 missing"), same.stdout
    report = diff(lookout_bin, first, changed, *IGNORES, "--format", "json")
    assert report.returncode == 1
    parsed = json.loads(report.stdout)
    assert parsed["equal"] is False and parsed["paired"] == 3 and not parsed["added"] and not parsed["missing"]
    [order] = parsed["changed"]
    assert order["method"] == "POST" and order["url"].endswith("/order") and order["status"] == {"a": 201, "b": 500}


def test_a_har_file_compares_with_a_log_and_bad_input_exits_2(make_proxy, tmp_path, lookout_bin):
    with ScriptedOrigin() as site:
        site.route("/items", (200, {"Content-Type": "application/json"}, b'{"items": []}'))
        first = record(make_proxy, tmp_path, site, "one")
        second = record(make_proxy, tmp_path, site, "two")
    har = tmp_path / "one.har"
    written = subprocess.run([str(lookout_bin), "har", "--log", first, "--output", str(har)], capture_output=True,
                             text=True, timeout=60, env=client_env())
    assert written.returncode == 0, written.stderr
    same = diff(lookout_bin, str(har), second, *IGNORES, "--by", "order")
    assert same.returncode == 0, same.stdout + same.stderr
    (tmp_path / "garbage.txt").write_text("not a recording\n")
    for args, message in [((str(tmp_path / "absent.jsonl"), second), "cannot be read"),
                          ((str(tmp_path / "garbage.txt"), second), "neither a Lookout log nor a HAR file"),
                          ((first, second, "--ignore", "cookie"), "--ignore wants"),
                          ((first, second, "--by", "time"), "--by must be"),
                          ((first, second, "--format", "xml"), "--format must be")]:
        bad = diff(lookout_bin, *args)
        assert bad.returncode == 2 and message in bad.stderr, (args, bad.stderr)
