"""The RFC 9111 shared cache (cache.*), through the proxy with curl and Python clients against
scripted origins on 127.0.0.1 that count what they receive: storing and refusing, freshness and
age, validation, invalidation, Vary, HEAD, request and response directives, persistence, damage
to the store, and the events and summary fields each decision writes."""

from __future__ import annotations

import email.utils
import hashlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from conftest import curl, py_request, wait_until
from origins import ScriptedOrigin


def cached(path: Path | None = None, **extra):
    config = {"enabled": True, **extra}
    if path is not None:
        config["path"] = str(path)
    return {"cache": config}


def http_date(offset: float = 0) -> str:
    return email.utils.formatdate(time.time() + offset, usegmt=True)


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        yield o


def lookups(proxy, rid):
    return proxy.log_records(where=lambda e: e["event"] == "request.didLookUpCache" and e.get("id") == rid)


def decisions(proxy, rid):
    return proxy.log_records(where=lambda e: e["event"] == "task.willCacheResponse" and e.get("id") == rid)


def summary_for(proxy, n):
    """The n-th exchange summary (1-based), waiting for it."""
    return proxy.summaries(n)[n - 1]


def test_fresh_response_is_stored_then_served_with_age_and_cache_status(make_proxy, site):
    site.route("/f", (200, {"Cache-Control": "max-age=60", "Date": http_date(), "ETag": '"a"'}, b"fresh body"))
    proxy = make_proxy(cached(), verbose_events=True)
    first = curl(proxy, site.url("/f"))
    assert (first.status, first.body) == (200, b"fresh body")
    assert first.header("Cache-Status") == "Lookout; fwd=uri-miss; fwd-status=200; stored", first.headers
    second = curl(proxy, site.url("/f"))
    assert (second.status, second.body) == (200, b"fresh body")
    assert second.header("Cache-Status").startswith("Lookout; hit; ttl="), second.headers
    assert int(second.header("Age")) >= 0 and second.header("Content-Length") == "10"
    assert second.header("ETag") == '"a"'
    assert len(site.requests_for("/f")) == 1
    miss, hit = proxy.summaries(2)
    assert miss["cache"] == {"status": "miss", "stored": True}, miss
    assert hit["cache"]["status"] == "hit" and hit["cache"]["stored"] is False and 55 <= hit["cache"]["ttl"] <= 60, hit
    assert hit["attempts"] == 0 and "upstream" not in hit and hit["status"] == 200
    assert [e["result"] for e in lookups(proxy, miss["id"])] == ["miss"]
    assert lookups(proxy, miss["id"])[0]["reason"] == "uri_miss"
    assert [e["stored"] for e in decisions(proxy, miss["id"])] == [True]
    assert [e["result"] for e in lookups(proxy, hit["id"])] == ["hit"]


@pytest.mark.parametrize("fields,reason", [
    ({"Cache-Control": "no-store, max-age=60"}, "no_store"),
    ({"Cache-Control": "private, max-age=60"}, "private"),
    ({"Cache-Control": "max-age=60", "Vary": "*"}, "vary_star"),
    ({}, "no_freshness"),  # no freshness, no validator
])
def test_responses_that_must_not_be_stored(make_proxy, site, fields, reason):
    site.route("/n", (200, fields, b"x"))
    proxy = make_proxy(cached(), verbose_events=True)
    for _ in range(2):
        r = curl(proxy, site.url("/n"))
        assert r.status == 200 and r.header("Cache-Status") == "Lookout; fwd=uri-miss; fwd-status=200", r.headers
    assert len(site.requests_for("/n")) == 2
    first = summary_for(proxy, 1)
    assert [(e["stored"], e.get("reason")) for e in decisions(proxy, first["id"])] == [(False, reason)]


def test_authorization_needs_a_shared_directive(make_proxy, site):
    site.route("/auth", (200, {"Cache-Control": "max-age=60"}, b"secret"))
    site.route("/pub", (200, {"Cache-Control": "public, max-age=60"}, b"shared"))
    proxy = make_proxy(cached(), verbose_events=True)
    for _ in range(2):
        curl(proxy, site.url("/auth"), "-H", "Authorization: Bearer t")
        curl(proxy, site.url("/pub"), "-H", "Authorization: Bearer t")
    assert len(site.requests_for("/auth")) == 2
    assert len(site.requests_for("/pub")) == 1
    reasons = [e.get("reason") for e in proxy.log_records(3, where=lambda e: e["event"] == "task.willCacheResponse")]
    assert "authorization" in reasons


def test_etag_validation_merges_the_304(make_proxy, site):
    site.route("/e", (200, {"Cache-Control": "max-age=0", "ETag": '"v1"', "X-Version": "1"}, b"entity"),
               lambda req: (304, {"ETag": '"v1"', "Cache-Control": "max-age=60", "X-Version": "2"}, b"")
               if req.header("If-None-Match") == '"v1"' else (500, {}, b"no validator sent"))
    proxy = make_proxy(cached(), verbose_events=True)
    assert curl(proxy, site.url("/e")).body == b"entity"
    second = curl(proxy, site.url("/e"))
    assert (second.status, second.body) == (200, b"entity"), second
    assert second.header("X-Version") == "2" and second.header("Cache-Control") == "max-age=60", second.headers
    assert second.header("Cache-Status").startswith("Lookout; fwd=stale; fwd-status=304;"), second.headers
    # Now fresh (the 304 gave max-age=60): served without asking.
    third = curl(proxy, site.url("/e"))
    assert third.body == b"entity" and third.header("Cache-Status").startswith("Lookout; hit"), third.headers
    assert third.header("X-Version") == "2"
    assert len(site.requests_for("/e")) == 2
    rec = summary_for(proxy, 2)
    assert rec["cache"]["status"] == "revalidated" and rec["cache"]["stored"] is True, rec
    assert [e["result"] for e in lookups(proxy, rec["id"])] == ["stale", "revalidated"]


def test_last_modified_validation(make_proxy, site):
    modified = http_date(-3600)
    site.route("/lm", (200, {"Cache-Control": "no-cache", "Last-Modified": modified}, b"lm body"),
               lambda req: (304, {}, b"") if req.header("If-Modified-Since") == modified else (200, {}, b"changed"))
    proxy = make_proxy(cached())
    assert curl(proxy, site.url("/lm")).body == b"lm body"
    r = curl(proxy, site.url("/lm"))
    assert r.body == b"lm body" and "fwd-status=304" in r.header("Cache-Status"), r.headers
    assert [q.header("If-Modified-Since") for q in site.requests_for("/lm")] == [None, modified]


def test_qualified_no_cache_fields_are_not_served_from_the_store(make_proxy, site):
    site.route("/q", (200, {"Cache-Control": 'max-age=60, no-cache="Set-Cookie"', "Set-Cookie": "s=1",
                            "X-Kept": "yes"}, b"q"))
    proxy = make_proxy(cached())
    assert curl(proxy, site.url("/q")).header("Set-Cookie") == "s=1"
    hit = curl(proxy, site.url("/q"))
    assert hit.header("Cache-Status").startswith("Lookout; hit") and hit.header("Set-Cookie") is None, hit.headers
    assert hit.header("X-Kept") == "yes"


def test_private_with_field_names_is_stored_without_them(make_proxy, site):
    site.route("/pf", (200, {"Cache-Control": 'max-age=60, private="X-User"', "X-User": "alice"}, b"pf"))
    proxy = make_proxy(cached())
    assert curl(proxy, site.url("/pf")).header("X-User") == "alice"
    hit = curl(proxy, site.url("/pf"))
    assert hit.header("Cache-Status").startswith("Lookout; hit") and hit.header("X-User") is None, hit.headers


def test_client_conditionals_are_answered_from_a_fresh_entry(make_proxy, site):
    site.route("/c", (200, {"Cache-Control": "max-age=60", "ETag": 'W/"x"', "Content-Type": "text/plain"}, b"body"))
    proxy = make_proxy(cached())
    curl(proxy, site.url("/c"))
    r = curl(proxy, site.url("/c"), "-H", 'If-None-Match: "y", "x"')
    assert r.status == 304 and r.body == b"" and r.header("ETag") == 'W/"x"', r.headers
    assert r.header("Content-Type") is None
    r = curl(proxy, site.url("/c"), "-H", 'If-None-Match: "other"')
    assert r.status == 200 and r.body == b"body"
    assert len(site.requests_for("/c")) == 1


def test_request_directives(make_proxy, site):
    site.route("/r", (200, {"Cache-Control": "max-age=60", "ETag": '"r"'}, b"r"))
    proxy = make_proxy(cached(), verbose_events=True)
    curl(proxy, site.url("/r"))
    # no-cache: validated with the origin first.
    r = curl(proxy, site.url("/r"), "-H", "Cache-Control: no-cache")
    assert r.header("Cache-Status").startswith("Lookout; fwd=request"), r.headers
    assert site.requests_for("/r")[-1].header("If-None-Match") == '"r"'
    # HTTP/1.0 Pragma: no-cache without Cache-Control, likewise.
    curl(proxy, site.url("/r"), "-0", "-H", "Pragma: no-cache")
    assert len(site.requests_for("/r")) == 3
    # max-age=0 from the client: too old for it.
    curl(proxy, site.url("/r"), "-H", "Cache-Control: max-age=0")
    assert len(site.requests_for("/r")) == 4
    # min-fresh beyond what is left.
    curl(proxy, site.url("/r"), "-H", "Cache-Control: min-fresh=3600")
    assert len(site.requests_for("/r")) == 5
    reasons = [e.get("reason") for e in proxy.log_records(5, where=lambda e: e["event"] == "request.didLookUpCache")]
    assert {"request_no_cache", "request_max_age", "request_min_fresh"} <= set(reasons), reasons
    # no-store from the client: not stored, though the response allows it.
    site.route("/ns", (200, {"Cache-Control": "max-age=60"}, b"ns"))
    curl(proxy, site.url("/ns"), "-H", "Cache-Control: no-store")
    curl(proxy, site.url("/ns"))
    assert len(site.requests_for("/ns")) == 2


def test_only_if_cached(make_proxy, site):
    site.route("/o", (200, {"Cache-Control": "max-age=60"}, b"o"))
    proxy = make_proxy(cached())
    r = curl(proxy, site.url("/o"), "-H", "Cache-Control: only-if-cached")
    assert r.status == 504 and b"only_if_cached" in r.body, r
    assert site.requests_for("/o") == []
    curl(proxy, site.url("/o"))
    r = curl(proxy, site.url("/o"), "-H", "Cache-Control: only-if-cached")
    assert (r.status, r.body) == (200, b"o")
    assert summary_for(proxy, 1)["error"]["code"] == "only_if_cached"


def test_max_stale_and_must_revalidate(make_proxy, site):
    past = http_date(-100)
    site.route("/s", (200, {"Cache-Control": "max-age=10", "Date": past}, b"stale ok"))
    site.route("/m", (200, {"Cache-Control": "max-age=10, must-revalidate", "Date": past}, b"must"))
    proxy = make_proxy(cached())
    curl(proxy, site.url("/s"))
    curl(proxy, site.url("/m"))
    r = curl(proxy, site.url("/s"), "-H", "Cache-Control: max-stale=3600")
    assert r.body == b"stale ok" and "ttl=-" in r.header("Cache-Status"), r.headers
    assert int(r.header("Age")) >= 100
    assert len(site.requests_for("/s")) == 1
    curl(proxy, site.url("/m"), "-H", "Cache-Control: max-stale=3600")
    assert len(site.requests_for("/m")) == 2


def test_stale_if_error(make_proxy, site):
    past = http_date(-100)
    site.route("/sie", (200, {"Cache-Control": "max-age=10, stale-if-error=3600", "Date": past, "ETag": '"s"'}, b"old"),
               (503, {}, b"down"))
    proxy = make_proxy(cached(), verbose_events=True)
    curl(proxy, site.url("/sie"))
    r = curl(proxy, site.url("/sie"))
    assert (r.status, r.body) == (200, b"old"), r
    assert "detail=stale-if-error" in r.header("Cache-Status"), r.headers
    rec = summary_for(proxy, 2)
    assert rec["cache"]["status"] == "stale" and rec["status"] == 200, rec
    assert "stale_if_error" in [e.get("reason") for e in lookups(proxy, rec["id"])]
    # Without stale-if-error the 503 goes to the client.
    site.route("/plain", (200, {"Cache-Control": "max-age=10", "Date": past}, b"old"), (503, {}, b"down"))
    curl(proxy, site.url("/plain"))
    assert curl(proxy, site.url("/plain")).status == 503


def test_unsafe_methods_invalidate(make_proxy, site):
    def answer(req):
        if req.method != "GET" and req.header("X-Fail"):
            return 500, {}, b"failed"
        fields = {"Cache-Control": "max-age=60"}
        if req.method != "GET":
            fields["Content-Location"] = "/other"
        return 200, fields, b"i"
    site.route("/i", answer)
    site.route("/other", (200, {"Cache-Control": "max-age=60"}, b"other"))
    proxy = make_proxy(cached())
    curl(proxy, site.url("/i"))
    curl(proxy, site.url("/other"))
    # §4.4: only a non-error response invalidates.
    assert py_request(proxy, "POST", site.url("/i"), body=b"x", headers={"X-Fail": "1"})[0] == 500
    curl(proxy, site.url("/i"))
    assert len(site.requests_for("/i")) == 2  # the GET and the POST; the second GET was a hit
    for method in ("POST", "PUT", "DELETE"):
        before = len(site.requests_for("/i"))
        assert py_request(proxy, method, site.url("/i"), body=b"x")[0] == 200
        curl(proxy, site.url("/i"))
        assert len(site.requests_for("/i")) == before + 2, method
    curl(proxy, site.url("/other"))
    assert len(site.requests_for("/other")) == 2  # Content-Location on the same origin was invalidated


def test_head_is_served_from_a_stored_get(make_proxy, site):
    site.route("/h", (200, {"Cache-Control": "max-age=60"}, b"0123456789"))
    proxy = make_proxy(cached())
    curl(proxy, site.url("/h"))
    status, headers, body = py_request(proxy, "HEAD", site.url("/h"))
    assert status == 200 and body == b"" and dict(headers)["Content-Length"] == "10", headers
    assert len(site.requests_for("/h")) == 1


def test_vary_keeps_one_entry_per_variant(make_proxy, site):
    site.route("/v", lambda req: (200, {"Cache-Control": "max-age=60", "Vary": "Accept-Language"},
                                  f"lang={req.header('Accept-Language')}".encode()))
    proxy = make_proxy(cached(), verbose_events=True)
    assert curl(proxy, site.url("/v"), "-H", "Accept-Language: en").body == b"lang=en"
    assert curl(proxy, site.url("/v"), "-H", "Accept-Language: de").body == b"lang=de"
    assert curl(proxy, site.url("/v"), "-H", "Accept-Language: en").body == b"lang=en"
    assert curl(proxy, site.url("/v"), "-H", "Accept-Language:  de").body == b"lang=de"  # whitespace normalised
    assert curl(proxy, site.url("/v")).body == b"lang=None"
    assert len(site.requests_for("/v")) == 3
    reasons = [e.get("reason") for e in proxy.log_records(5, where=lambda e: e["event"] == "request.didLookUpCache")]
    assert reasons.count("vary_mismatch") == 2, reasons


def test_garbage_freshness_fields_are_handled_as_the_rfc_says(make_proxy, site):
    site.route("/exp0", (200, {"Expires": "0", "Last-Modified": http_date(-86400)}, b"a"))
    site.route("/badage", (200, {"Cache-Control": "max-age=60", "Age": "banana"}, b"b"))
    site.route("/dup", (200, {"Cache-Control": "max-age=60, max-age=5, ,, =x, max-age=\"60\""}, b"c"))
    site.route("/hugeage", (200, {"Cache-Control": "max-age=60", "Age": "99999999999999999999"}, b"d"))
    proxy = make_proxy(cached())
    for path in ("/exp0", "/badage", "/dup", "/hugeage"):
        for _ in range(2):
            assert curl(proxy, site.url(path)).status == 200
    assert len(site.requests_for("/exp0")) == 2     # invalid Expires = already expired
    assert len(site.requests_for("/badage")) == 1   # invalid Age ignored: fresh
    assert len(site.requests_for("/dup")) == 2      # conflicting max-age: stale
    assert len(site.requests_for("/hugeage")) == 2  # Age beyond any freshness: stale


def test_rules_forbid_storing_or_give_a_default_ttl(make_proxy):
    with ScriptedOrigin() as a, ScriptedOrigin(host="localhost") as b:
        a.route("/x", (200, {"Last-Modified": http_date(-10)}, b"a"))
        b.route("/x", (200, {"Cache-Control": "max-age=60"}, b"b"))
        proxy = make_proxy(cached(rules=[{"hosts": ["127.0.0.1"], "default_ttl": 300},
                                         {"hosts": ["localhost"], "store": False}]), verbose_events=True)
        for _ in range(2):
            assert curl(proxy, a.url("/x")).body == b"a"
            assert curl(proxy, b.url("/x")).body == b"b"
        assert len(a.requests_for("/x")) == 1  # heuristics alone would give 1 s; default_ttl gives 300
        assert len(b.requests_for("/x")) == 2
        hit = [r for r in proxy.summaries(4) if r["url"] == a.url("/x")][1]
        assert hit["cache"]["ttl"] >= 295, hit
        refused = proxy.log_records(1, where=lambda e: e["event"] == "task.willCacheResponse" and not e["stored"])
        assert refused and refused[0]["reason"] == "rule" and refused[0]["rule"] == "localhost", refused


def test_objects_over_max_object_bytes_are_relayed_not_stored(make_proxy, site):
    big = os.urandom(300_000)
    site.route("/big", (200, {"Cache-Control": "max-age=60"}, big))
    proxy = make_proxy(cached(max_object_bytes=100_000, max_size_bytes=1_000_000), verbose_events=True)
    for _ in range(2):
        r = curl(proxy, site.url("/big"))
        assert r.body == big
    assert len(site.requests_for("/big")) == 2
    reasons = [e.get("reason") for e in proxy.log_records(2, where=lambda e: e["event"] == "task.willCacheResponse")]
    assert reasons == ["too_large", "too_large"], reasons


def test_large_objects_stream_from_disk(make_proxy, site):
    big = os.urandom(3_000_000)
    site.route("/disk", (200, {"Cache-Control": "max-age=60"}, big))
    proxy = make_proxy(cached(memory_bytes=0))
    assert curl(proxy, site.url("/disk")).body == big
    r = curl(proxy, site.url("/disk"))
    assert r.body == big and r.header("Cache-Status").startswith("Lookout; hit"), r.headers
    assert len(site.requests_for("/disk")) == 1


def test_store_survives_a_restart(make_proxy, site, tmp_path):
    store = tmp_path / "store"
    site.route("/p", (200, {"Cache-Control": "max-age=60"}, b"persisted"))
    first = make_proxy(cached(store))
    curl(first, site.url("/p"))
    first.stop()
    second = make_proxy(cached(store))
    r = curl(second, site.url("/p"))
    assert r.body == b"persisted" and r.header("Cache-Status").startswith("Lookout; hit"), r.headers
    assert len(site.requests_for("/p")) == 1


def test_eviction_keeps_the_store_under_its_bound(make_proxy, site, tmp_path):
    store = tmp_path / "store"
    for i in range(8):
        site.route(f"/e{i}", (200, {"Cache-Control": "max-age=60"}, bytes([i]) * 30_000))
    proxy = make_proxy(cached(store, max_size_bytes=100_000, max_object_bytes=50_000, memory_bytes=0), verbose_events=True)
    for i in range(8):
        curl(proxy, site.url(f"/e{i}"))
    total = sum(f.stat().st_size for f in (store / "objects").rglob("*.obj"))
    assert total <= 100_000, total
    evicted = proxy.log_records(1, where=lambda e: e["event"] == "cache.didEvict")
    assert evicted and evicted[0]["reason"] == "size_limit" and evicted[0]["url"] == site.url("/e0"), evicted
    assert curl(proxy, site.url("/e7")).header("Cache-Status").startswith("Lookout; hit")
    curl(proxy, site.url("/e0"))
    assert len(site.requests_for("/e0")) == 2


def test_damaged_and_planted_files_are_ignored_and_removed(make_proxy, site, tmp_path):
    store = tmp_path / "store"
    site.route("/d", (200, {"Cache-Control": "max-age=60"}, b"d" * 50_000))
    proxy = make_proxy(cached(store, memory_bytes=0))
    curl(proxy, site.url("/d"))
    proxy.stop()
    [obj] = list((store / "objects").rglob("*.obj"))
    data = obj.read_bytes()
    obj.write_bytes(data[:-100])  # truncated
    (store / "objects" / "zz-not-an-object").write_text("planted")
    (store / "tmp" / "half.part").write_bytes(b"LKCACHE1")
    proxy = make_proxy(cached(store, memory_bytes=0), verbose_events=True)
    assert not (store / "objects" / "zz-not-an-object").exists()
    assert list((store / "tmp").iterdir()) == []
    r = curl(proxy, site.url("/d"))
    assert r.body == b"d" * 50_000 and "fwd-status=200" in r.header("Cache-Status"), r.headers
    assert len(site.requests_for("/d")) == 2
    corrupt = proxy.log_records(1, where=lambda e: e["event"] == "cache.didEvict")
    assert corrupt and corrupt[0]["reason"].startswith("corrupt"), corrupt


def test_a_store_that_cannot_be_written_skips_storing(make_proxy, site, tmp_path):
    store = tmp_path / "store"
    (store / "objects").mkdir(parents=True)
    (store / "tmp").write_text("a file where the store's tmp folder should be")
    site.route("/w", (200, {"Cache-Control": "max-age=60"}, b"w"))
    proxy = make_proxy(cached(store), verbose_events=True)
    for _ in range(2):
        r = curl(proxy, site.url("/w"))
        assert (r.status, r.body) == (200, b"w")
    assert len(site.requests_for("/w")) == 2
    reasons = [e.get("reason") for e in proxy.log_records(2, where=lambda e: e["event"] == "task.willCacheResponse")]
    assert reasons == ["write_failed", "write_failed"], reasons


def test_sigkill_during_concurrent_stores_reopens_clean(make_proxy, site, tmp_path):
    store = tmp_path / "store"
    bodies = {f"/k{i}": hashlib.sha256(str(i).encode()).digest() * 2000 for i in range(200)}
    for path, body in bodies.items():
        site.route(path, (200, {"Cache-Control": "max-age=600"}, body))
    proxy = make_proxy(cached(store, memory_bytes=0))
    threads = [threading.Thread(target=curl, args=(proxy, site.url(path)), kwargs={"timeout": 30}) for path in bodies]
    for t in threads:
        t.start()
    time.sleep(0.3)
    proxy.proc.send_signal(signal.SIGKILL)
    proxy.expected_exit = -9
    for t in threads:
        t.join()
    proxy.wait_exit(10)
    again = make_proxy(cached(store, memory_bytes=0))
    for path, body in bodies.items():
        r = curl(again, site.url(path))
        assert hashlib.sha256(r.body).hexdigest() == hashlib.sha256(body).hexdigest(), path
    # Everything is now stored: a second read-back is all hits, still byte-exact.
    served = 0
    for path, body in bodies.items():
        r = curl(again, site.url(path))
        assert r.body == body, path
        served += r.header("Cache-Status").startswith("Lookout; hit")
    assert served == len(bodies)


def test_ranges_are_answered_from_a_stored_complete_response(make_proxy, site):
    body = bytes(range(256)) * 400  # 102,400 bytes: on disk, not in memory
    site.route("/rg", (200, {"Cache-Control": "max-age=60", "ETag": '"rg"', "Content-Type": "application/octet-stream"},
                       body))
    proxy = make_proxy(cached(memory_bytes=0))
    curl(proxy, site.url("/rg"))
    r = curl(proxy, site.url("/rg"), "-H", "Range: bytes=100-199")
    assert r.status == 206 and r.body == body[100:200], r.headers
    assert r.header("Content-Range") == f"bytes 100-199/{len(body)}"
    r = curl(proxy, site.url("/rg"), "-H", "Range: bytes=-10")
    assert r.status == 206 and r.body == body[-10:]
    r = curl(proxy, site.url("/rg"), "-H", "Range: bytes=0-9, 50000-50009")
    assert r.status == 206, r.headers
    content_type = r.header("Content-Type")
    assert content_type.startswith("multipart/byteranges; boundary="), r.headers
    boundary = content_type.split("boundary=")[1].encode()
    parts = [p for p in r.body.split(b"--" + boundary) if p.strip(b"\r\n") and p.strip(b"\r\n") != b"--"]
    assert len(parts) == 2 and int(r.header("Content-Length")) == len(r.body)
    for part, (start, end) in zip(parts, [(0, 9), (50000, 50009)]):
        head, _, data = part.partition(b"\r\n\r\n")
        assert f"Content-Range: bytes {start}-{end}/{len(body)}".encode() in head, head
        assert b"Content-Type: application/octet-stream" in head
        assert data.rstrip(b"\r\n") == body[start:end + 1] or data[:end - start + 1] == body[start:end + 1]
    r = curl(proxy, site.url("/rg"), "-H", f"Range: bytes={len(body)}-")
    assert r.status == 416 and r.header("Content-Range") == f"bytes */{len(body)}", r.headers
    # If-Range that does not name the stored representation: the whole of it.
    r = curl(proxy, site.url("/rg"), "-H", "Range: bytes=0-9", "-H", 'If-Range: "other"')
    assert r.status == 200 and r.body == body
    r = curl(proxy, site.url("/rg"), "-H", "Range: bytes=0-9", "-H", 'If-Range: "rg"')
    assert r.status == 206 and r.body == body[:10]
    assert len(site.requests_for("/rg")) == 1


def test_a_partial_response_is_never_stored_as_complete(make_proxy, site):
    body = b"0123456789" * 10
    def answer(req):
        if req.header("Range") == "bytes=0-9":
            return 206, {"Cache-Control": "max-age=60", "Content-Range": f"bytes 0-9/{len(body)}"}, body[:10]
        return 200, {"Cache-Control": "max-age=60"}, body
    site.route("/part", answer)
    proxy = make_proxy(cached(), verbose_events=True)
    r = curl(proxy, site.url("/part"), "-H", "Range: bytes=0-9")
    assert (r.status, r.body) == (206, body[:10])
    r = curl(proxy, site.url("/part"))
    assert (r.status, r.body) == (200, body) and "fwd=uri-miss" in r.header("Cache-Status")
    reasons = [e.get("reason") for e in proxy.log_records(2, where=lambda e: e["event"] == "task.willCacheResponse")]
    assert reasons[0] == "status", reasons


def test_concurrent_misses_collapse_into_one_fetch(make_proxy, site):
    body = os.urandom(2_000_000)
    release = threading.Event()
    def slow(req):
        release.wait(10)
        return 200, {"Cache-Control": "max-age=60"}, body
    site.route("/col", slow)
    proxy = make_proxy(cached(), verbose_events=True)
    results = [None] * 20
    def fetch(i):
        results[i] = curl(proxy, site.url("/col"))
    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    wait_until(lambda: len(proxy.log_records(where=lambda e: e["event"] == "request.didLookUpCache")) == 20,
               timeout=10, message="20 lookups")
    release.set()
    for t in threads:
        t.join()
    assert all(r.status == 200 and r.body == body for r in results), [r.status for r in results]
    assert len(site.requests_for("/col")) == 1
    statuses = sorted(r.header("Cache-Status") for r in results)
    assert statuses.count("Lookout; fwd=uri-miss; fwd-status=200; collapsed") == 19, statuses
    results_by = [e["result"] for e in proxy.log_records(20, where=lambda e: e["event"] == "request.didLookUpCache")]
    assert sorted(results_by) == ["collapsed"] * 19 + ["miss"], results_by
    assert sorted(r["cache"]["status"] for r in proxy.summaries(20)) == ["collapsed"] * 19 + ["miss"]


def test_collapsed_followers_fetch_themselves_when_the_response_is_not_storable(make_proxy, site):
    release = threading.Event()
    def slow(req):
        release.wait(10)
        return 200, {"Cache-Control": "no-store"}, b"personal"
    site.route("/ns2", slow)
    proxy = make_proxy(cached())
    results = [None] * 5
    def fetch(i):
        results[i] = curl(proxy, site.url("/ns2"))
    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    release.set()
    for t in threads:
        t.join()
    assert all(r.body == b"personal" for r in results)
    assert len(site.requests_for("/ns2")) == 5


def test_stale_while_revalidate_serves_stale_and_refreshes_in_the_background(make_proxy, site):
    past = http_date(-100)
    site.route("/swr", (200, {"Cache-Control": "max-age=10, stale-while-revalidate=3600", "Date": past, "ETag": '"1"'},
                        b"old"),
               (200, {"Cache-Control": "max-age=60, stale-while-revalidate=3600", "ETag": '"2"'}, b"new"))
    proxy = make_proxy(cached(), verbose_events=True)
    assert curl(proxy, site.url("/swr")).body == b"old"
    r = curl(proxy, site.url("/swr"))
    assert r.body == b"old" and "detail=stale-while-revalidate" in r.header("Cache-Status"), r.headers
    wait_until(lambda: len(site.requests_for("/swr")) == 2, message="the background revalidation")
    assert site.requests_for("/swr")[1].header("If-None-Match") == '"1"'
    background = proxy.summaries(1, where=lambda r: r["client"] == "background", timeout=5)[0]
    assert background["status"] == 200 and background["cache"]["stored"] is True, background
    r = curl(proxy, site.url("/swr"))
    assert r.body == b"new" and r.header("Cache-Status").startswith("Lookout; hit"), r.headers
    assert len(site.requests_for("/swr")) == 2


def lookout_cache(proxy, *args):
    import subprocess
    from conftest import client_env
    p = subprocess.run([str(proxy.binary), "cache", *args, "--config", str(proxy.config_path)],
                       capture_output=True, text=True, timeout=30, env=client_env())
    return p.returncode, p.stdout, p.stderr


def test_cache_command_against_the_running_proxy_and_the_store(make_proxy, site, tmp_path):
    from conftest import free_port
    store = tmp_path / "store"
    site.route("/a", (200, {"Cache-Control": "max-age=60"}, b"a"))
    site.route("/b", (200, {"Cache-Control": "max-age=60"}, b"bb"))
    proxy = make_proxy(cached(store))
    for path in ("/a", "/b", "/a"):
        curl(proxy, site.url(path))
    at = f"127.0.0.1:{proxy.port}"
    rc, out, err = lookout_cache(proxy, "stats", "--proxy", at)
    assert rc == 0, err
    stats = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert stats["objects"] == "2" and stats["hits"] == "1" and stats["misses"] == "2", stats
    assert float(stats["hit_ratio"]) == pytest.approx(1 / 3, abs=0.01)
    rc, out, _ = lookout_cache(proxy, "list", "--proxy", at, "--host", "127.0.0.1")
    assert [line.split("\t")[2] for line in out.strip().splitlines()] == [site.url("/a"), site.url("/b")], out
    rc, out, _ = lookout_cache(proxy, "list", "--proxy", at, "--host", "elsewhere.test")
    assert out.strip() == ""
    rc, out, _ = lookout_cache(proxy, "purge", "--proxy", at, site.url("/a"))
    assert (rc, out.strip()) == (0, "removed 1")
    assert "fwd=uri-miss" in curl(proxy, site.url("/a")).header("Cache-Status")
    # While it runs, the store is its own: a second process may not open it.
    rc, _, err = lookout_cache(proxy, "stats", "--proxy", f"127.0.0.1:{free_port()}")
    assert rc == 1 and "in use" in err, err
    proxy.stop()
    rc, out, err = lookout_cache(proxy, "stats")
    assert rc == 0 and "objects: 2" in out and "not running" in out, (out, err)
    rc, out, _ = lookout_cache(proxy, "clear")
    assert (rc, out.strip()) == (0, "removed 2")
    rc, out, _ = lookout_cache(proxy, "list")
    assert out.strip() == ""


def test_changing_the_store_needs_the_proxy_credentials(make_proxy, site, tmp_path):
    from conftest import raw_exchange
    site.route("/a", (200, {"Cache-Control": "max-age=60"}, b"a"))
    proxy = make_proxy({**cached(tmp_path / "store"), "auth": {"users": ["ops:secret"]}})
    curl(proxy, site.url("/a"), "--proxy-user", "ops:secret")
    resp, _ = raw_exchange(proxy.port, f"POST /cache/clear HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n"
                                       f"Content-Length: 0\r\n\r\n".encode())
    assert resp.status == 407, resp
    rc, out, err = lookout_cache(proxy, "clear", "--proxy", f"127.0.0.1:{proxy.port}")
    assert (rc, out.strip()) == (0, "removed 1"), err
    resp, _ = raw_exchange(proxy.port, f"GET /cache/stats HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
    assert resp.status == 200 and b'"objects":0' in resp.body


def test_cache_endpoints_when_the_cache_is_off(proxy):
    from conftest import raw_exchange
    resp, _ = raw_exchange(proxy.port, f"GET /cache/stats HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n\r\n".encode())
    assert resp.status == 404 and b"cache.enabled" in resp.body


@pytest.mark.parametrize("path,fields,expect_origin_requests", [
    # must-understand with a status this cache implements: stored despite no-store (RFC 9111 §5.2.2.3).
    ("/mu", {"Cache-Control": "max-age=60, no-store, must-understand"}, 1),
    # s-maxage wins over max-age for a shared cache (§5.2.2.10).
    ("/sm", {"Cache-Control": "max-age=0, s-maxage=60"}, 1),
    # public lets a status that is not heuristically cacheable use the heuristic (§4.2.2).
    ("/pub302", {"Cache-Control": "public", "Location": "/x", "Last-Modified": "Sat, 06 Nov 1993 08:49:37 GMT"}, 1),
    # no-transform: stored and served byte for byte, Content-Encoding untouched (§5.2.2.6).
    ("/nt", {"Cache-Control": "max-age=60, no-transform", "Content-Encoding": "gzip", "Content-Type": "text/plain"}, 1),
])
def test_more_response_directives(make_proxy, site, path, fields, expect_origin_requests):
    body = b"\x1f\x8b\x08\x00payload" if path == "/nt" else b"body"
    status = 302 if path == "/pub302" else 200
    site.route(path, (status, fields, body))
    proxy = make_proxy(cached())
    for _ in range(2):
        r = curl(proxy, site.url(path))
        assert (r.status, r.body) == (status, body)
        if path == "/nt":
            assert r.header("Content-Encoding") == "gzip" and r.header("Content-Type") == "text/plain"
    assert len(site.requests_for(path)) == expect_origin_requests


def test_proxy_revalidate_forbids_serving_stale(make_proxy, site):
    past = http_date(-100)
    site.route("/pr", (200, {"Cache-Control": "max-age=10, proxy-revalidate", "Date": past}, b"pr"))
    proxy = make_proxy(cached())
    curl(proxy, site.url("/pr"))
    curl(proxy, site.url("/pr"), "-H", "Cache-Control: max-stale=3600")
    assert len(site.requests_for("/pr")) == 2


def test_a_stored_body_that_cannot_be_read_back_breaks_off(make_proxy, site, tmp_path):
    from conftest import read_slowly_to_end, request_bytes, small_window_connect
    store = tmp_path / "store"
    big = os.urandom(32 << 20)
    site.route("/gone", (200, {"Cache-Control": "max-age=60"}, big))
    proxy = make_proxy(cached(store, memory_bytes=0))
    assert curl(proxy, site.url("/gone")).body == big
    [obj] = list((store / "objects").rglob("*.obj"))
    s = small_window_connect(proxy.port)
    s.sendall(request_bytes("GET", site.url("/gone"), host=f"127.0.0.1:{site.port}"))
    time.sleep(0.5)  # the hit has begun and waits for the slow client
    os.truncate(obj, 1 << 20)  # the same file, cut short under the reader
    data, reset = read_slowly_to_end(s, start_after=0)
    s.close()
    assert reset and len(data) < len(big), (reset, len(data))
    rec = proxy.summaries(2)[1]
    assert rec["cache"]["status"] == "hit" and rec["error"]["code"] == "cache_read_failed", rec
    assert len(site.requests_for("/gone")) == 1


def test_an_interim_response_is_relayed_but_never_stored(make_proxy):
    """The cache-tests case `interim-not-cached` (RFC 9111 §3: only a final response is stored): the
    103 reaches the client that caused it; the stored 200 answers the next one without any 1xx."""
    import socket
    from conftest import raw_exchange, request_bytes
    served = []
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(4096)
                served.append(data)
                conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload; as=style\r\n\r\n"
                             b"HTTP/1.1 200 OK\r\nCache-Control: max-age=100000\r\nDate: " + http_date().encode()
                             + b"\r\nContent-Length: 5\r\n\r\nhello")

    threading.Thread(target=serve, daemon=True).start()
    proxy = make_proxy(cached())
    url = f"http://127.0.0.1:{server.getsockname()[1]}/interim"
    try:
        first, _ = raw_exchange(proxy.port, request_bytes("GET", url))
        assert first.status == 200 and [s for s, _ in first.interim] == [103], first.interim
        second, _ = raw_exchange(proxy.port, request_bytes("GET", url))
        assert second.status == 200 and second.body == b"hello" and second.interim == [], second.interim
    finally:
        server.close()
    assert len(served) == 1, "the second answer came from the store"
    assert [r["cache"]["status"] for r in proxy.summaries(2)] == ["miss", "hit"]
