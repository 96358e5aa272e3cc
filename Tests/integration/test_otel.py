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
        logs = wait_exchange_logs(receiver, len(records))
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
    # Log records: the JSON line as the body, the exchange's trace and span ids. The log opens with
    # session.didStart; a change of the machine's route may add a session.reachabilityDidChange.
    assert logs[0]["eventName"] == "session.didStart"
    logs = [record for record in logs if record.get("eventName") == "lookout.exchange"]
    assert len(logs) == len(records)
    for record in logs:
        line = __import__("json").loads(record["body"]["stringValue"])
        assert record["traceId"] == line["trace"]["trace_id"] and record["spanId"] == line["trace"]["span_id"]
        assert line == records[line["id"]], "the body is the log's line"
        # Its attributes name the exchange as the line does (the status and error code when it has them).
        expected = {"lookout.kind": line["kind"], "lookout.id": line["id"], "http.request.method": line["method"],
                    "url.full": line["url"]}
        if "status" in line:
            expected["http.response.status_code"] = line["status"]
        if "error" in line:
            expected["error.type"] = line["error"]["code"]
        assert record["attrs"] == expected
    assert {l["severityText"] for l in logs} >= {"INFO", "ERROR"}


def wait_exchange_logs(receiver, count, timeout=10):
    """Every log record once `count` exchange summaries are among them."""
    deadline = time.monotonic() + timeout
    while True:
        logs = receiver.wait_logs(1, timeout=max(0.1, deadline - time.monotonic()))
        if sum(record.get("eventName") == "lookout.exchange" for record in logs) >= count:
            return logs
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(logs)} log records arrived, {count} exchange summaries expected")
        time.sleep(0.05)


def test_trace_context_joins_an_instrumented_client_lookout_and_an_instrumented_origin(make_proxy):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import requests
    from opentelemetry import propagate, trace
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("origin")
    seen = {}

    class Origin(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            seen["traceparent"] = self.headers.get("traceparent")
            context = propagate.extract(dict(self.headers.items()))
            with tracer.start_as_current_span("origin GET", context=context, kind=trace.SpanKind.SERVER):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
    origin = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    receiver = Receiver()
    instrumentor = RequestsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        proxy = make_proxy(otel(receiver))
        url = f"http://127.0.0.1:{origin.server_address[1]}/traced"
        response = requests.get(url, proxies={"http": proxy.url}, timeout=10, headers={"tracestate": "vendor=1"})
        assert response.status_code == 200
        record = proxy.only_summary(kind="http")
        spans = receiver.wait_spans(2)
    finally:
        instrumentor.uninstrument()
        origin.shutdown()
        receiver.stop()
    client_span = next(s for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.CLIENT)
    origin_span = next(s for s in exporter.get_finished_spans() if s.name == "origin GET")
    trace_id = format(client_span.context.trace_id, "032x")
    server = next(s for s in spans if kind_of(s) == 2)
    attempt = next(s for s in spans if kind_of(s) == 3)
    # One trace: the client's span → Lookout's exchange → Lookout's attempt → the origin's span.
    assert server["traceId"] == attempt["traceId"] == trace_id == format(origin_span.context.trace_id, "032x")
    assert server["parentSpanId"] == format(client_span.context.span_id, "016x")
    assert attempt["parentSpanId"] == server["spanId"]
    assert format(origin_span.parent.span_id, "016x") == attempt["spanId"]
    assert seen["traceparent"] == f"00-{trace_id}-{attempt['spanId']}-01"
    assert server.get("traceState") == "vendor=1" and record["trace"]["parent_span_id"] == server["parentSpanId"]


def test_a_receiver_down_then_up_loses_nothing_within_the_queue_and_counts_drops_beyond(make_proxy):
    port = free_port()
    receiver_later = type("Later", (), {"endpoint": f"http://127.0.0.1:{port}"})
    with ScriptedOrigin() as origin:
        origin.route("/x", (200, {}, b"x"))
        proxy = make_proxy(otel(receiver_later, logs=False, batch={"max_records": 4, "max_delay_ms": 50, "max_queue": 10}))
        for index in range(25):
            curl(proxy, origin.url(f"/x?n={index}"))
        proxy.summaries(25, kind="http")
        time.sleep(0.5)
        receiver = Receiver(port)
        try:
            receiver.wait_spans(1, timeout=15)
            time.sleep(1.5)
            spans = list(receiver.spans)
            page = urllib.request.urlopen(f"{proxy.url}/metrics", timeout=10).read().decode()
            # With the receiver back, nothing more is lost.
            for index in range(5):
                curl(proxy, origin.url(f"/x?after={index}"))
            receiver.wait_spans(len(spans) + 10)
        finally:
            receiver.stop()
    # 50 spans (a server and an attempt span each) met a queue of 10 plus a batch of 4 being retried.
    assert 10 <= len(spans) <= 14, len(spans)
    dropped = next(int(float(line.split()[-1])) for line in page.splitlines()
                   if line.startswith('lookout_otel_dropped_total{signal="traces"}'))
    assert dropped + len(spans) == 50, (dropped, len(spans))
    status = urllib.request.urlopen(f"{proxy.url}/", timeout=10).read().decode()
    assert f"otel: to {receiver_later.endpoint}; exported" in status and f"dropped {dropped} spans" in status, status


@pytest.mark.parametrize("close_after", [0, 2])
def test_batches_share_a_kept_connection_and_a_closed_one_loses_nothing(make_proxy, close_after):
    """An HTTP/1.1 Collector's connection carries batch after batch; one it closes between
    batches (silently, as on an idle timeout) is found closed and the batch goes on a new one."""
    receiver = Receiver(keep_alive=True, close_after=close_after)
    try:
        with ScriptedOrigin() as origin:
            origin.route("/x", (200, {}, b"x"))
            proxy = make_proxy(otel(receiver, batch={"max_records": 4, "max_delay_ms": 50, "max_queue": 1000}))
            for index in range(12):
                curl(proxy, origin.url(f"/x?n={index}"))
                time.sleep(0.12)  # a batch or two leaves between requests
            proxy.summaries(12, kind="http")
            receiver.wait_spans(24)
            wait_exchange_logs(receiver, 12)
            time.sleep(0.3)
            page = urllib.request.urlopen(f"{proxy.url}/metrics", timeout=10).read().decode()
            stderr = proxy.stderr
    finally:
        receiver.stop()
    # A closed kept connection is not an export failure: the batch went on a new one at once.
    assert "cannot export" not in stderr, stderr
    assert len(receiver.spans) == 24, "each span once"
    assert len({span["spanId"] for span in receiver.spans}) == 24
    posts = receiver.requests
    connections = len({request["peer"] for request in posts})
    assert len(posts) >= 12, len(posts)
    if close_after:
        # Every connection carried close_after batches at most, and none was lost in between.
        assert connections >= len(posts) / close_after, (connections, len(posts))
    else:
        assert connections == 1, (connections, len(posts))
    for signal in ("traces", "logs"):
        line = next(line for line in page.splitlines() if line.startswith(f'lookout_otel_dropped_total{{signal="{signal}"}}'))
        assert float(line.split()[-1]) == 0, line


def test_429_with_retry_after_is_honoured_and_gzip_can_be_off(make_proxy):
    receiver = Receiver()
    receiver.script = [(429, {"Retry-After": "1"})]
    try:
        with ScriptedOrigin() as origin:
            origin.route("/x", (200, {}, b"x"))
            proxy = make_proxy(otel(receiver, logs=False, compression="none"))
            curl(proxy, origin.url("/x"))
            receiver.wait_spans(2, timeout=10)
    finally:
        receiver.stop()
    first, second = receiver.requests[0], receiver.requests[1]
    assert second["time"] - first["time"] >= 0.95, "waited as Retry-After said"
    assert "content-encoding" not in second["headers"] and second["headers"]["content-type"] == "application/x-protobuf"


def test_the_standard_environment_variables_win_over_the_file(make_proxy):
    receiver = Receiver()
    try:
        with ScriptedOrigin() as origin:
            origin.route("/x", (200, {}, b"x"))
            proxy = make_proxy({"otel": {"endpoint": "http://127.0.0.1:9", "resource": {"service.name": "from-file"},
                                         "batch": {"max_delay_ms": 50}, "timeout_ms": 2000}},
                               env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "from-env",
                                    "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,team=net%20ops",
                                    "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20s3cret,x-tenant=7"})
            curl(proxy, origin.url("/x"))
            receiver.wait_spans(2)
    finally:
        receiver.stop()
    assert receiver.resources[0]["service.name"] == "from-env"
    assert receiver.resources[0]["deployment.environment"] == "ci" and receiver.resources[0]["team"] == "net ops"
    headers = receiver.requests[0]["headers"]
    assert headers["authorization"] == "Bearer s3cret" and headers["x-tenant"] == "7"
    assert headers["content-encoding"] == "gzip"
    assert "s3cret" not in proxy.stderr, "the headers are secrets"


def test_the_sample_collector_config_wires_every_pipeline():
    import pathlib

    import yaml
    sample = yaml.safe_load((pathlib.Path(__file__).resolve().parents[2] / "config" / "otel-collector.yaml").read_text())
    assert sample["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    for name in ("traces", "logs"):
        pipeline = sample["service"]["pipelines"][name]
        assert set(pipeline["receivers"]) <= set(sample["receivers"]) and set(pipeline["processors"]) <= set(sample["processors"])
        assert set(pipeline["exporters"]) == {"kafka", "clickhouse", "file"} <= set(sample["exporters"])


def test_an_https_collector_is_trusted_as_origins_are(make_proxy, pki):
    # A kept TLS connection carries two batches, then the Collector closes it and the third goes
    # on a new one (a new handshake), nothing reported as a failure.
    receiver = Receiver(tls=pki.good.tls, keep_alive=True, close_after=2)
    untrusted = Receiver(tls=pki.self_signed.tls)
    try:
        with ScriptedOrigin() as origin:
            origin.route("/x", (200, {}, b"x"))
            proxy = make_proxy({**otel(receiver, logs=False), "trust": {"ca_files": [str(pki.root.cert)]}})
            for index in range(3):
                curl(proxy, origin.url(f"/x?n={index}"))
                receiver.wait_spans(2 * (index + 1))
            assert {kind_of(s) for s in receiver.spans} == {2, 3} and len(receiver.spans) == 6
            peers = [request["peer"] for request in receiver.requests]
            assert len(peers) == 3 and len(set(peers)) == 2 and peers[0] == peers[1] != peers[2], peers
            assert "cannot export" not in proxy.stderr, proxy.stderr
            # A Collector whose certificate chains to no trusted root gets nothing, and says why.
            refused = make_proxy({**otel(untrusted, logs=False), "trust": {"ca_files": [str(pki.root.cert)]}})
            curl(refused, origin.url("/x"))
            wait_until(lambda: "not trusted" in refused.stderr, timeout=10, message="the refusal reported")
            assert untrusted.spans == [] and untrusted.requests == []
    finally:
        receiver.stop()
        untrusted.stop()
