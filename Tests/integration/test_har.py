"""HAR 1.2 export (`lookout har`, `lookout log --format har`) read back by an independent HAR reader
(haralyzer, from PyPI): plain, intercepted, tunnelled, failed, retried and redirected exchanges,
captured bodies with their content codings decoded, and each timing checked against the log
record it came from."""

from __future__ import annotations

import base64
import ctypes
import gzip
import json
import os
import subprocess
import zlib
from pathlib import Path

import jsonschema
import pytest
from haralyzer import HarParser

from conftest import client_env, curl, py_request
from origins import ScriptedOrigin

TEXT = "hello, lookout " * 200
HAR_SCHEMA = json.loads((Path(__file__).parent / "har-1.2.schema.json").read_text())


def brotli_compress(data: bytes) -> bytes:
    lib = ctypes.CDLL("libbrotlienc.so.1")
    out = ctypes.create_string_buffer(len(data) + 1024)
    size = ctypes.c_size_t(len(out))
    assert lib.BrotliEncoderCompress(5, 22, 0, ctypes.c_size_t(len(data)), data, ctypes.byref(size), out) == 1
    return out.raw[:size.value]


def har_of(proxy, *args):
    out = proxy.workdir / "out.har"
    p = subprocess.run([str(proxy.binary), "har", "--log", str(proxy.log_path), "--output", str(out), *args],
                       capture_output=True, text=True, timeout=60, env=client_env())
    assert p.returncode == 0, p.stderr
    har = json.loads(out.read_text())
    # Every export is checked against a JSON Schema written from the HAR 1.2 specification.
    jsonschema.validate(har, HAR_SCHEMA, format_checker=jsonschema.FormatChecker())
    return har


def records(proxy):
    return {r["id"]: r for r in (json.loads(line) for line in proxy.log_path.read_text().splitlines())
            if r.get("event") == "exchange"}


def check_timings(entry, record):
    """HAR 1.2: connect includes ssl, -1 where a phase did not happen — but send, wait and receive
    are never negative (0 then) — and time = the sum without ssl."""
    t, log = entry["timings"], record["timings_ms"]
    for name in ("dns", "send", "wait", "receive", "blocked"):
        absent = 0 if name in ("send", "wait", "receive") else -1
        assert t[name] == pytest.approx(log[name] if log[name] >= 0 else absent, abs=1e-9), (name, t, log)
        assert name not in ("send", "wait", "receive") or t[name] >= 0
    assert t["ssl"] == pytest.approx(log["tls"] if log["tls"] >= 0 else -1)
    expected_connect = -1 if log["connect"] < 0 else log["connect"] + max(0, log["tls"])
    assert t["connect"] == pytest.approx(expected_connect)
    assert entry["time"] == pytest.approx(sum(v for k, v in t.items() if k != "ssl" and v >= 0))


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        yield o


def test_plain_exchanges_with_bodies_and_codings(make_proxy, site, tmp_path):
    site.route("/gz", (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip.compress(TEXT.encode())))
    site.route("/br", (200, {"Content-Type": "text/plain", "Content-Encoding": "br"}, brotli_compress(TEXT.encode())))
    site.route("/deflate", (200, {"Content-Type": "text/plain", "Content-Encoding": "deflate"}, zlib.compress(TEXT.encode())))
    site.route("/bin", (200, {"Content-Type": "application/octet-stream", "Set-Cookie": "s=1; Path=/"}, bytes(range(256))))
    site.route("/post", lambda req: (201, {"Content-Type": "application/json"}, b'{"ok":true}'))
    # Cookie values are secrets the log redacts unless told otherwise.
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]},
                        "log": {"reveal_secrets": True}})
    for path in ("/gz", "/br", "/deflate"):
        curl(proxy, site.url(path))
    curl(proxy, site.url("/bin") + "?a=1&b=two%20words", "-H", "Cookie: c1=v1; c2=v2")
    py_request(proxy, "POST", site.url("/post"), body=b'{"q":1}', headers={"Content-Type": "application/json"})
    proxy.summaries(5)
    har = har_of(proxy)
    parser = HarParser(har)  # the independent reader accepts it
    entries = parser.har_data["entries"]
    assert har["log"]["version"] == "1.2" and har["log"]["creator"]["name"] == "Lookout" and len(entries) == 5
    logged = records(proxy)
    by_path = {e["request"]["url"].split("?")[0].rsplit("/", 1)[1]: e for e in entries}
    for name in ("gz", "br", "deflate"):
        content = by_path[name]["response"]["content"]
        assert content["text"] == TEXT and content["size"] == len(TEXT), (name, content.get("_undecoded"))
        assert content["compression"] == len(TEXT) - by_path[name]["response"]["bodySize"], name
    binary = by_path["bin"]
    assert base64.b64decode(binary["response"]["content"]["text"]) == bytes(range(256))
    assert binary["response"]["content"]["encoding"] == "base64"
    assert {(q["name"], q["value"]) for q in binary["request"]["queryString"]} == {("a", "1"), ("b", "two words")}
    assert {(c["name"], c["value"]) for c in binary["request"]["cookies"]} == {("c1", "v1"), ("c2", "v2")}
    assert [(c["name"], c["value"]) for c in binary["response"]["cookies"]] == [("s", "1")]
    post = by_path["post"]
    assert post["request"]["postData"]["text"] == '{"q":1}' and post["request"]["postData"]["mimeType"] == "application/json"
    assert post["response"]["status"] == 201
    for entry in entries:
        record = logged[entry["_lookout"]["id"]]
        check_timings(entry, record)
        assert entry["serverIPAddress"] == "127.0.0.1" and entry["connection"] == str(record["conn"])
        assert entry["_lookout"]["kind"] == "http" and entry["_lookout"]["attempts"] == 1
    # The same through `lookout log --format har` with a filter.
    p = subprocess.run([str(proxy.binary), "log", str(proxy.log_path), "--format", "har", "--filter", "status:201"],
                       capture_output=True, text=True, timeout=60, env=client_env())
    assert [e["response"]["status"] for e in json.loads(p.stdout)["log"]["entries"]] == [201]


def test_failed_retried_and_redirected_exchanges(make_proxy, site):
    site.route("/flaky", (503, {}, b"busy"), (200, {}, b"ok"))
    site.route("/old", (301, {"Location": "/new"}, b""))
    site.route("/new", (200, {}, b"moved"))
    proxy = make_proxy({
        "retry": {"rules": [{"hosts": ["127.0.0.1"], "limit": 2, "backoff": {"base": 0, "jitter": False}}]},
        "redirects": {"rules": [{"hosts": ["127.0.0.1"], "follow": True}]},
    })
    curl(proxy, site.url("/flaky"))
    curl(proxy, site.url("/old"))
    curl(proxy, "http://127.0.0.1:9/refused")
    proxy.summaries(3)
    entries = HarParser(har_of(proxy)).har_data["entries"]
    logged = records(proxy)
    retried, redirected, failed = entries
    assert retried["_lookout"]["attempts"] == 2 and len(retried["_lookout"]["transactions"]) == 2
    assert retried["response"]["status"] == 200
    assert redirected["_lookout"]["redirects"] == 1 and redirected["_lookout"]["final_url"] == site.url("/new")
    assert failed["response"]["status"] == 502 and failed["_lookout"]["error"]["code"] == "upstream_connect_failed"
    for entry in entries:
        check_timings(entry, logged[entry["_lookout"]["id"]])


def test_intercepted_and_tunnelled_exchanges(make_proxy, pki):
    with ScriptedOrigin(host="localhost", tls=pki.good.tls) as tls_site:
        tls_site.route("/s", (200, {"Content-Type": "text/plain"}, b"secret"))
        proxy = make_proxy({
            "connect": {"allowed_ports": [tls_site.port]},
            "interception": {"hosts": ["localhost"]},
            "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]},
        })
        ca = str(proxy.workdir / "state" / "ca.pem")
        curl(proxy, tls_site.url("/s"), "--cacert", ca)
        # 127.0.0.1 is not intercepted: a blind tunnel (the client checks the origin itself).
        curl(proxy, f"https://127.0.0.1:{tls_site.port}/s", "--cacert", str(pki.root.cert), "--resolve",
             f"localhost:{tls_site.port}:127.0.0.1", "-k")
        proxy.summaries(2)
        entries = HarParser(har_of(proxy)).har_data["entries"]
        logged = records(proxy)
        intercepted = next(e for e in entries if e["_lookout"]["kind"] == "intercepted")
        tunnel = next(e for e in entries if e["_lookout"]["kind"] == "tunnel")
        assert intercepted["request"]["url"] == tls_site.url("/s")
        assert intercepted["_lookout"]["trust"]["result"] == "passed" and intercepted["timings"]["ssl"] >= 0
        assert intercepted["timings"]["connect"] >= intercepted["timings"]["ssl"]
        assert tunnel["request"]["method"] == "CONNECT"
        for entry in entries:
            check_timings(entry, logged[entry["_lookout"]["id"]])


def test_a_websocket_exchange(make_proxy, raw_origin):
    from test_upgrade import echo_round_trip, open_websocket
    import origins
    proxy = make_proxy()
    o = raw_origin("websocket_echo")
    s, r, resp = open_websocket(proxy, o)
    assert resp.status == 101
    assert r.read_exact(len(origins.WS_GREETING)) == origins.WS_GREETING
    assert echo_round_trip(s, r, b"x" * 1000) == b"x" * 1000
    s.close()
    [record] = proxy.summaries(1)
    [entry] = HarParser(har_of(proxy)).har_data["entries"]
    assert entry["response"]["status"] == 101 and entry["_lookout"]["upgrade"] == "websocket", entry
    assert entry["request"]["method"] == "GET" and entry["_lookout"]["id"] == record["id"]
    check_timings(entry, record)


def test_every_kind_of_record_validates_against_har_1_2(make_proxy, site):
    """Admin pages, refusals, cookies both ways, form and binary bodies, a 304, a HEAD, a failed
    upstream: the export stays valid HAR 1.2 (the schema in har-1.2.schema.json) for all of them."""
    site.route("/form", (200, {"Set-Cookie": "a=1; Path=/; HttpOnly", "Content-Type": "text/html"}, b"<p>ok</p>"))
    site.route("/bin", (200, {"Content-Type": "application/octet-stream"}, bytes(range(256))))
    site.route("/nm", (304, {"ETag": '"x"'}, b""))
    proxy = make_proxy({"capture": {"rules": [{"hosts": ["**"]}]}})
    py_request(proxy, "POST", site.url("/form?q=1&r=%20two"), body=b"x=1&y=%C3%A9",
               headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": "s=1; t=2"})
    curl(proxy, site.url("/bin"))
    curl(proxy, site.url("/nm"), "-H", 'If-None-Match: "x"')
    curl(proxy, site.url("/form"), "-I")
    curl(proxy, "http://127.0.0.1:1/refused")
    curl(proxy, "ftp://127.0.0.1/nope")
    for page in ("/healthz", "/metrics", "/exchanges"):
        curl(proxy, f"http://127.0.0.1:{proxy.port}{page}", "--noproxy", "*")
    proxy.summaries(9)
    logged = records(proxy)
    entries = har_of(proxy)["log"]["entries"]
    assert len(entries) == len(logged) == 9, (len(entries), len(logged))
    assert {e["request"]["url"].split("?")[0].rsplit("/", 1)[-1] for e in entries} >= {"healthz", "metrics", "form"}
    for entry in entries:
        check_timings(entry, logged[entry["_lookout"]["id"]])
