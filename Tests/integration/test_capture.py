"""Body capture (capture.*): request and response bodies written to files as they stream, per host,
through the proxy with curl and Python clients against scripted origins on 127.0.0.1."""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from conftest import curl, curl_sha256, py_request, rss_kib
from origins import ScriptedOrigin


def capturing(path: Path, max_total_bytes=None, **rule):
    rule = {"hosts": ["127.0.0.1"], **rule}
    config = {"capture": {"path": str(path), "rules": [rule]}}
    if max_total_bytes is not None:
        config["capture"]["max_total_bytes"] = max_total_bytes
    return config


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        yield o


def test_bodies_are_written_and_the_summary_points_at_them(make_proxy, site, tmp_path):
    site.route("/up", lambda req: (200, {"Content-Type": "text/plain"}, f"got {req.body_length} bytes".encode()))
    proxy = make_proxy(capturing(tmp_path / "cap"))
    body = os.urandom(100_000)
    status, _, data = py_request(proxy, "POST", site.url("/up"), body=body, headers={"Content-Type": "application/octet-stream"})
    assert (status, data) == (200, b"got 100000 bytes")
    rec = proxy.only_summary()
    cap = rec["capture"]
    assert cap["truncated"] is False and "error" not in cap, cap
    assert Path(cap["request"]).read_bytes() == body
    assert Path(cap["response"]).read_bytes() == b"got 100000 bytes"
    assert cap["request"] == str(tmp_path / "cap" / f"{rec['id']}.request")
    # Capturing turns on the headers for the exchange.
    assert rec["request_headers"]["content-type"] == "application/octet-stream", rec
    assert rec["response_headers"]["content-type"] == "text/plain", rec


def test_hosts_without_a_rule_and_bodies_not_asked_for_are_not_captured(make_proxy, tmp_path):
    with ScriptedOrigin() as a, ScriptedOrigin(host="localhost") as b:
        a.route("/x", (200, {}, b"from a"))
        b.route("/x", (200, {}, b"from b"))
        proxy = make_proxy(capturing(tmp_path / "cap", request_bodies=False))
        py_request(proxy, "POST", a.url("/x"), body=b"request")
        py_request(proxy, "POST", b.url("/x"), body=b"request")
        recs = proxy.summaries(2)
        captured = [r for r in recs if r["url"] == a.url("/x")][0]
        other = [r for r in recs if r["url"] == b.url("/x")][0]
        assert "request" not in captured["capture"] and Path(captured["capture"]["response"]).read_bytes() == b"from a"
        assert "capture" not in other and "request_headers" not in other
        assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == [f"{captured['id']}.response"]


def test_bodies_over_the_limit_are_cut_and_marked(make_proxy, site, tmp_path):
    big = os.urandom(50_000)
    site.route("/big", (200, {}, big))
    proxy = make_proxy(capturing(tmp_path / "cap", max_body_bytes=10_000))
    r = curl(proxy, site.url("/big"))
    assert r.body == big  # the client gets everything
    cap = proxy.only_summary()["capture"]
    assert cap["truncated"] is True and Path(cap["response"]).read_bytes() == big[:10_000]


def test_content_codings_are_kept_as_received(make_proxy, site, tmp_path):
    packed = gzip.compress(b"hello " * 1000)
    site.route("/gz", (200, {"Content-Encoding": "gzip"}, packed))
    proxy = make_proxy(capturing(tmp_path / "cap"))
    curl(proxy, site.url("/gz"))
    assert Path(proxy.only_summary()["capture"]["response"]).read_bytes() == packed


def test_the_oldest_captures_go_beyond_max_total_bytes(make_proxy, site, tmp_path):
    site.route("/b", (200, {}, b"x" * 30_000))
    proxy = make_proxy(capturing(tmp_path / "cap", max_total_bytes=100_000))
    for _ in range(6):
        curl(proxy, site.url("/b"))
    recs = proxy.summaries(6)
    files = sorted((tmp_path / "cap").iterdir())
    assert sum(f.stat().st_size for f in files) <= 100_000
    assert [f.name for f in files] == [f"{r['id']}.response" for r in recs[-3:]], files


def test_a_capture_folder_that_cannot_be_written_never_affects_traffic(make_proxy, site, tmp_path):
    folder = tmp_path / "cap"
    folder.mkdir()
    site.route("/ro", (200, {}, b"still served"))
    proxy = make_proxy(capturing(folder), verbose_events=True)
    # A directory where the response's file would go: the open fails.
    (folder / "1.response").mkdir()
    r = curl(proxy, site.url("/ro"))
    assert (r.status, r.body) == (200, b"still served")
    rec = proxy.only_summary()
    assert rec["capture"]["error"].startswith("response:"), rec
    [failed] = proxy.log_records(1, where=lambda e: e["event"] == "capture.didFail")
    assert failed["body"] == "response" and failed["path"].endswith("1.response") and failed["error"], failed


def test_hundred_mib_bodies_stream_with_bounded_memory(make_proxy, tmp_path):
    size = 100 << 20
    with ScriptedOrigin() as site:
        blob = os.urandom(1 << 20) * 100
        site.route("/huge", (200, {}, blob))
        proxy = make_proxy(capturing(tmp_path / "cap", max_body_bytes=size))
        before = rss_kib(proxy.proc.pid)
        rc, n, digest, _, err = curl_sha256(proxy, site.url("/huge"))
        after = rss_kib(proxy.proc.pid)
        assert rc == 0 and n == size, err
        cap = proxy.only_summary()["capture"]
        h = hashlib.sha256()
        with open(cap["response"], "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        assert h.hexdigest() == digest == hashlib.sha256(blob).hexdigest()
        assert after - before < 32 * 1024, (before, after)


def test_cache_hits_are_captured_too(make_proxy, site, tmp_path):
    site.route("/c", (200, {"Cache-Control": "max-age=60"}, b"cached body"))
    proxy = make_proxy({**capturing(tmp_path / "cap"), "cache": {"enabled": True, "path": str(tmp_path / "store")}})
    curl(proxy, site.url("/c"))
    r = curl(proxy, site.url("/c"))
    assert r.header("Cache-Status").startswith("Lookout; hit")
    miss, hit = proxy.summaries(2)
    assert hit["cache"]["status"] == "hit" and Path(hit["capture"]["response"]).read_bytes() == b"cached body"
    assert Path(miss["capture"]["response"]).read_bytes() == b"cached body"


def test_intercepted_bodies_are_captured(make_proxy, pki, tmp_path):
    with ScriptedOrigin(host="localhost", tls=pki.good.tls) as tls_site:
        tls_site.route("/s", lambda req: (200, {}, f"secret {req.body_length}".encode()))
        proxy = make_proxy({
            "connect": {"allowed_ports": [tls_site.port]},
            "interception": {"hosts": ["**"]},
            "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]},
            "capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["localhost"]}]},
        })
        r = curl(proxy, tls_site.url("/s"), "--cacert", str(proxy.workdir / "state" / "ca.pem"), "--data-binary", "abc")
        assert r.body == b"secret 3"
        rec = proxy.only_summary(kind="intercepted")
        assert Path(rec["capture"]["request"]).read_bytes() == b"abc"
        assert Path(rec["capture"]["response"]).read_bytes() == b"secret 3"
