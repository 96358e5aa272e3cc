"""`lookout log` and `lookout log summary` on logs the proxy wrote: the filter language, the output
formats (a printed curl command is run and must repeat the request), time bounds, --follow across
rotation, and summary percentiles against a reference computed here."""

from __future__ import annotations

import csv
import io
import json
import math
import signal
import subprocess
import threading
import time

import pytest

from conftest import client_env, curl, py_request, wait_until
from origins import ScriptedOrigin, echo


def lookout_log(proxy, *args, stdin=None):
    p = subprocess.run([str(proxy.binary), "log", *args], capture_output=True, text=True, timeout=60, env=client_env(),
                       input=stdin)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def traffic(make_proxy, tmp_path):
    """A proxy that has logged a mix of exchanges (bodies captured for 127.0.0.1)."""
    with ScriptedOrigin() as site:
        site.route("/ok", (200, {"Content-Type": "text/plain"}, b"ok"))
        site.route("/missing", (404, {}, b"no"))
        site.route("/down", (503, {}, b"down"))
        site.route("/echo", echo)
        proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]}})
        for _ in range(5):
            curl(proxy, site.url("/ok"))
        curl(proxy, site.url("/missing"))
        curl(proxy, site.url("/down"))
        py_request(proxy, "POST", site.url("/echo"), body=b"payload", headers={"Content-Type": "application/json",
                                                                             "X-Trace": "it's"})
        curl(proxy, "http://127.0.0.1:9/refused")
        proxy.summaries(9)
        yield proxy, site


def summaries(proxy):
    return [json.loads(line) for line in proxy.log_path.read_text().splitlines()
            if json.loads(line).get("event") == "exchange"]


def test_filters_select_what_the_expression_says(traffic):
    proxy, site = traffic
    log = str(proxy.log_path)
    records = summaries(proxy)
    cases = {
        "status:5xx": [r for r in records if 500 <= r.get("status", 0) < 600],
        "status:4xx or status:5xx": [r for r in records if r.get("status", 0) >= 400],
        "method:POST": [r for r in records if r["method"] == "POST"],
        "code:upstream_*": [r for r in records if r.get("error", {}).get("code", "").startswith("upstream_")],
        "not code:*": [r for r in records if "error" not in r],
        'url~"/ok"': [r for r in records if "/ok" in r["url"]],
        "header:content-type~json": [r for r in records if "json" in r.get("request_headers", {}).get("content-type", "")
                                     or "json" in r.get("response_headers", {}).get("content-type", "")],
        "total>0ms and status:200": [r for r in records if r.get("status") == 200 and r["timings_ms"]["total"] > 0],
        "kind:http (status:404 or status:503)": [r for r in records if r.get("status") in (404, 503)],
    }
    for expression, expected in cases.items():
        rc, out, err = lookout_log(proxy, log, "--filter", expression, "--format", "jsonl")
        assert rc == 0, err
        assert [json.loads(line)["id"] for line in out.splitlines()] == [r["id"] for r in expected], expression


def test_a_bad_expression_points_at_its_column(traffic):
    proxy, _ = traffic
    rc, out, err = lookout_log(proxy, str(proxy.log_path), "--filter", "status:5xx and hots:x")
    assert rc == 64 and out == ""
    assert "column 16: unknown field \"hots\"" in err and "\n  status:5xx and hots:x\n                 ^" in err, err


def test_formats(traffic):
    proxy, site = traffic
    log = str(proxy.log_path)
    records = summaries(proxy)
    rc, out, _ = lookout_log(proxy, log, "--format", "json")
    assert [r["id"] for r in json.loads(out)] == [r["id"] for r in records]
    rc, out, _ = lookout_log(proxy, log, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["id"]) for r in rows] == [r["id"] for r in records]
    assert rows[0]["url"] == site.url("/ok") and rows[0]["status"] == "200"
    rc, out, _ = lookout_log(proxy, log)
    lines = out.splitlines()
    assert lines[0].split() == ["TIME", "ID", "METHOD", "STATUS", "TOTAL_MS", "CACHE", "URL"] and len(lines) == len(records) + 1
    rc, out, err = lookout_log(proxy, log, "--format", "nope")
    assert rc == 64 and "jsonl, json, table, csv, curl" in err


def test_the_curl_format_repeats_the_request(traffic):
    proxy, site = traffic
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--filter", "method:POST", "--format", "curl")
    [command] = out.splitlines()
    assert command.startswith("curl -X 'POST' ") and "--data-binary '@" in command, command
    before = len(site.requests_for("/echo"))
    p = subprocess.run(["sh", "-c", command + " -sS"], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    again = site.requests_for("/echo")[before]
    first = site.requests_for("/echo")[0]
    assert again.method == "POST" and again.body_sha256 == first.body_sha256 and again.body_length == 7
    assert again.header("X-Trace") == "it's" and again.header("Content-Type") == "application/json"


def test_since_and_until(traffic):
    proxy, _ = traffic
    records = summaries(proxy)
    middle = records[4]["ts"]
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--since", middle, "--format", "jsonl")
    assert [json.loads(x)["id"] for x in out.splitlines()] == [r["id"] for r in records if r["ts"] >= middle]
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--until", middle, "--format", "jsonl")
    assert [json.loads(x)["id"] for x in out.splitlines()] == [r["id"] for r in records if r["ts"] < middle]
    rc, out, _ = lookout_log(proxy, str(proxy.log_path), "--since", "1h", "--format", "jsonl")
    assert len(out.splitlines()) == len(records)
    rc, _, err = lookout_log(proxy, str(proxy.log_path), "--since", "last tuesday")
    assert rc == 64 and "RFC 3339" in err


def test_standard_input(traffic):
    proxy, _ = traffic
    rc, out, _ = lookout_log(proxy, "-", "--filter", "status:404", "--format", "jsonl", stdin=proxy.log_path.read_text())
    assert [json.loads(x)["status"] for x in out.splitlines()] == [404]


def nearest_rank(values, p):
    values = sorted(values)
    return values[max(1, math.ceil(p / 100 * len(values))) - 1]


def test_summary_percentiles_match_a_reference(traffic):
    proxy, site = traffic
    for _ in range(40):
        curl(proxy, site.url("/ok"))
    proxy.summaries(49)
    records = summaries(proxy)
    rc, out, err = lookout_log(proxy, "summary", str(proxy.log_path), "--by", "status")
    assert rc == 0, err
    header, *rows = [line.split() for line in out.strip().splitlines()]
    table = {row[0]: dict(zip(header, row)) for row in rows}
    ok = [r for r in records if r.get("status") == 200]
    assert table["200"]["COUNT"] == str(len(ok)) and table["200"]["ERRORS"] == "0%"
    for phase in ("total", "wait", "connect"):
        values = [r["timings_ms"][phase] for r in ok if r["timings_ms"][phase] >= 0]
        for p in (50, 95, 99):
            expected = nearest_rank(values, p)
            got = float(table["200"][f"{phase}_p{p}"])
            assert abs(got - expected) <= expected * 0.002 + 0.001, (phase, p, got, expected)
    refused = [r for r in records if r.get("error", {}).get("code") == "upstream_connect_failed"]
    assert refused and table["502"]["ERRORS"] == "100%" and table["502"]["COUNT"] == str(len(refused))
    rc, out, _ = lookout_log(proxy, "summary", str(proxy.log_path), "--by", "code")
    assert "upstream_connect_failed" in out


def test_follow_sees_new_lines_and_survives_rotation(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/f", (200, {}, b"f"))
        proxy = make_proxy()
        curl(proxy, site.url("/f"))
        proxy.summaries(1)
        follower = subprocess.Popen([str(proxy.binary), "log", str(proxy.log_path), "--follow", "--format", "jsonl"],
                                    stdout=subprocess.PIPE, text=True, env=client_env())
        seen = []
        reader = threading.Thread(target=lambda: [seen.append(json.loads(line)["id"]) for line in follower.stdout],
                                  daemon=True)
        reader.start()
        try:
            wait_until(lambda: seen == [1], message="the existing record")
            curl(proxy, site.url("/f"))
            wait_until(lambda: seen == [1, 2], message="an appended record")
            proxy.log_path.rename(proxy.log_path.with_name("lookout.log.1"))
            proxy.send_signal(signal.SIGHUP)
            wait_until(lambda: proxy.log_path.exists(), message="the reopened log")
            curl(proxy, site.url("/f"))
            wait_until(lambda: seen == [1, 2, 3], timeout=10, message="a record in the new file")
        finally:
            follower.terminate()
            follower.wait(10)
        proxy.check_log_file = lambda path=None: None  # the rotated file holds the first records


def test_unreadable_inputs_and_outputs_are_clear_errors(traffic, tmp_path):
    proxy, _ = traffic
    rc, out, err = lookout_log(proxy, str(tmp_path / "no-such.jsonl"))
    assert rc == 1 and out == "" and "cannot open" in err and "no-such.jsonl" in err, err
    p = subprocess.run([str(proxy.binary), "har", "--log", str(proxy.log_path), "--output", str(tmp_path / "no" / "dir.har")],
                       capture_output=True, text=True, timeout=30, env=client_env())
    assert p.returncode == 1 and "cannot write" in p.stderr, p.stderr
    rc, _, err = lookout_log(proxy, "summary", str(proxy.log_path), "--by", "colour")
    assert rc == 64 and "host, status, code, kind, method" in err
    # Lines that are not records (a torn or foreign line) are skipped, the rest still read.
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("garbage\n{\"event\":\n" + proxy.log_path.read_text())
    rc, out, _ = lookout_log(proxy, str(mixed), "--format", "jsonl")
    assert rc == 0 and len(out.splitlines()) == len(summaries(proxy))
