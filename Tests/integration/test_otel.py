"""OpenTelemetry export (`otel`) to an OTLP receiver built on the official protocol definitions:
spans and log records for plain, intercepted, retried, redirected, cached and failed exchanges,
checked against the log records of the same exchanges (trace ids, durations to the microsecond);
W3C trace context joined with a client and an origin instrumented with the OpenTelemetry SDK;
a receiver down then up, queue bounds and drops, 429 with Retry-After, gzip on and off,
http/json, and the standard environment variables."""

from __future__ import annotations

import time
import urllib.request

import pytest

from conftest import curl, free_port, wait_until
from origins import ScriptedOrigin

pytest.importorskip("opentelemetry.proto", reason="make deps installs opentelemetry-proto")
from otlp_receiver import Receiver  # noqa: E402


def otel(receiver, **extra) -> dict:
    config = {"endpoint": receiver.endpoint, "timeout_ms": 2000,
              "batch": {"max_records": 64, "max_delay_ms": 100, "max_queue": 1000}}
    config.update(extra)
    return {"otel": config}


def by_name(spans, kind):
    return [s for s in spans if s.get("kind") in (kind, {"SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3}.get(kind))]


def kind_of(span) -> int:
    kind = span.get("kind")
    return {"SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3}.get(kind, kind)


def assert_matches_log(span: dict, record: dict):
    """A SERVER span and the exchange's log record: the same trace and timing."""
    assert span["traceId"] == record["trace"]["trace_id"] and span["spanId"] == record["trace"]["span_id"]
    duration_us = (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1000
    assert abs(duration_us - record["timings_ms"]["total"] * 1000) <= 1.5, (duration_us, record["timings_ms"])
    assert span["attrs"]["http.request.method"] == record["method"] and span["attrs"]["url.full"] == record["url"]
    assert span["attrs"]["lookout.id"] == record["id"] and span["attrs"]["lookout.kind"] == record["kind"]


@pytest.mark.parametrize("wire", ["http/protobuf", "http/json"])
def test_exchanges_become_spans_and_log_records(make_proxy, wire):
    receiver = Receiver()
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        return (503, {}, b"busy") if calls["n"] == 1 else (200, {"Content-Type": "text/plain"}, b"second time")
    try:
        with ScriptedOrigin() as origin:
            origin.route("/ok", (200, {"Content-Type": "text/plain", "User-Agent-Echo": "x"}, b"fine"))
            origin.route("/flaky", flaky)
            origin.route("/moved", (301, {"Location": "/ok"}, b""))
            origin.route("/cached", (200, {"Cache-Control": "max-age=60"}, b"keep me"))
            proxy = make_proxy({**otel(receiver, protocol=wire),
                                "retry": {"rules": [{"hosts": ["127.0.0.1"], "limit": 1, "statuses": [503],
                                                     "backoff": {"base": 0.01}}]},
                                "redirects": {"rules": [{"hosts": ["127.0.0.1"], "follow": True}]},
                                "cache": {"enabled": True}})
            curl(proxy, origin.url("/ok"), "-A", "otel-test/1")
            curl(proxy, origin.url("/flaky"))
            curl(proxy, origin.url("/moved"))
            curl(proxy, origin.url("/cached"))
            curl(proxy, origin.url("/cached"))
            dead = free_port()
            curl(proxy, f"http://127.0.0.1:{dead}/nothing")
            records = {r["id"]: r for r in proxy.summaries(6, kind="http")}
        spans = receiver.wait_spans(len(records) + sum(r["attempts"] for r in records.values()))
        logs = receiver.wait_logs(7)  # session.didStart, then the six exchanges
    finally:
        receiver.stop()
    servers = {s["attrs"]["lookout.id"]: s for s in spans if kind_of(s) == 2}
    clients = [s for s in spans if kind_of(s) == 3]
    assert set(servers) == set(records)
    for id, record in records.items():
        assert_matches_log(servers[id], record)
        mine = [c for c in clients if c["parentSpanId"] == servers[id]["spanId"]]
        assert len(mine) == record["attempts"], (record, mine)
        assert all(c["traceId"] == record["trace"]["trace_id"] for c in mine)
    ok = next(r for r in records.values() if r["url"].endswith("/ok") and r["redirects"] == 0)
    assert servers[ok["id"]]["attrs"]["user_agent.original"] == "otel-test/1"
    assert servers[ok["id"]]["attrs"]["http.response.status_code"] == 200
    flaky_record = next(r for r in records.values() if r["url"].endswith("/flaky"))
    retried = sorted((c for c in clients if c["parentSpanId"] == servers[flaky_record["id"]]["spanId"]),
                     key=lambda c: int(c["startTimeUnixNano"]))
    assert "http.request.resend_count" not in retried[0]["attrs"] and retried[1]["attrs"]["http.request.resend_count"] == 1
    assert retried[0]["attrs"]["http.response.status_code"] == 503
    assert [e["name"] for e in servers[flaky_record["id"]].get("events", [])].count("retry") == 1
    moved = next(r for r in records.values() if r["url"].endswith("/moved"))
    redirect = next(e for e in servers[moved["id"]]["events"] if e["name"] == "redirect")
    assert redirect["attrs"]["lookout.redirect.to"].endswith("/ok")
    hit = [r for r in records.values() if r.get("cache", {}).get("status") == "hit"]
    assert len(hit) == 1 and servers[hit[0]["id"]]["attrs"]["lookout.cache.status"] == "hit"
    failed = next(r for r in records.values() if "error" in r)
    span = servers[failed["id"]]
    assert span["attrs"]["error.type"] == failed["error"]["code"] and span["status"]["code"] in (2, "STATUS_CODE_ERROR")
    # Log records: the JSON line as the body, the exchange's trace and span ids.
    assert logs[0]["eventName"] == "session.didStart"
    logs = [record for record in logs if record.get("eventName") == "lookout.exchange"]
    assert len(logs) == len(records)
    for record in logs:
        line = __import__("json").loads(record["body"]["stringValue"])
        assert record["traceId"] == line["trace"]["trace_id"] and record["spanId"] == line["trace"]["span_id"]
        assert line == records[line["id"]], "the body is the log's line"
    assert {l["severityText"] for l in logs} >= {"INFO", "ERROR"}
