"""Redirect policy (redirects.rules): following, passing, refusing and rewriting, through the proxy
with curl and raw clients against scripted Python origins on 127.0.0.1 (and "localhost" as the
other host)."""

from __future__ import annotations

import hashlib
import os

import pytest

from conftest import (assert_error_response, assert_error_summary, curl, raw_exchange, request_bytes,
                      py_request)
from origins import ScriptedOrigin, echo


def follow_rule(hosts=("127.0.0.1", "localhost"), **extra):
    return {"redirects": {"rules": [{"hosts": list(hosts), "follow": True, **extra}]}}


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        yield o


@pytest.fixture
def other_site():
    """A second origin, addressed by another host name: "localhost"."""
    with ScriptedOrigin(host="localhost") as o:
        yield o


def redirect(status, location):
    return (status, {"Location": location}, b"moved")


def test_follows_relative_and_absolute_locations(make_proxy, site):
    site.route("/a", redirect(302, "b?x=1"))
    site.route("/b", redirect(301, site.url("/c")))
    site.route("/c", (200, {}, b"final"))
    proxy = make_proxy(follow_rule(), verbose_events=True)
    r = curl(proxy, site.url("/a"))
    assert (r.status, r.body) == (200, b"final"), r
    rec = proxy.only_summary(url=site.url("/a"))
    assert rec["status"] == 200 and rec["attempts"] == 3 and rec["redirects"] == 2, rec
    assert rec["final_url"] == site.url("/c")
    assert [t["url"] for t in rec["transactions"]] == [site.url("/a"), site.url("/b?x=1"), site.url("/c")]
    assert [t["status"] for t in rec["transactions"]] == [302, 301, 200]
    assert rec["upstream"]["reused"] is True  # hops to one origin use the pool
    events = proxy.log_records(2, where=lambda e: e["event"] == "task.willPerformRedirect" and e["id"] == rec["id"])
    assert [(e["from"], e["to"], e["status"], e["decision"], e["reason"]) for e in events] == [
        (site.url("/a"), site.url("/b?x=1"), 302, "follow", "rule"),
        (site.url("/b?x=1"), site.url("/c"), 301, "follow", "rule"),
    ]
    assert [r.target for r in site.received] == [b"/a", b"/b?x=1", b"/c"]
    tasks = proxy.log_records(3, where=lambda e: e["event"] == "task.didCreateTask" and e["id"] == rec["id"])
    assert [t["attempt"] for t in tasks] == [1, 2, 3]
    metrics = proxy.log_records(3, where=lambda e: e["event"] == "task.didGatherMetrics" and e["id"] == rec["id"])
    assert [len(m["metrics"]["transactions"]) for m in metrics] == [1, 2, 3]
    assert metrics[-1]["metrics"]["redirects"] == 2


def test_no_rule_passes_the_redirect_unchanged(make_proxy, site):
    site.route("/a", redirect(302, "/b"))
    proxy = make_proxy(verbose_events=True)
    r = curl(proxy, site.url("/a"))
    assert r.status == 302 and r.header("Location") == "/b", r
    rec = proxy.only_summary(url=site.url("/a"))
    assert rec["redirects"] == 0 and rec["attempts"] == 1 and "transactions" not in rec and "final_url" not in rec
    [event] = proxy.log_records(1, where=lambda e: e["event"] == "task.willPerformRedirect")
    assert (event["decision"], event["reason"], event["to"]) == ("pass", "no_rule", site.url("/b"))


def test_follow_false_passes(make_proxy, site):
    site.route("/a", redirect(307, "/b"))
    proxy = make_proxy({"redirects": {"rules": [{"hosts": ["127.0.0.1"]}]}})
    r = curl(proxy, site.url("/a"))
    assert r.status == 307 and r.header("Location") == "/b"
    assert len(site.received) == 1


def test_cross_host_follow_strips_credentials(make_proxy, site, other_site):
    site.route("/login", redirect(302, other_site.url("/landing")))
    other_site.route("/landing", echo)
    proxy = make_proxy(follow_rule())
    r = curl(proxy, site.url("/login"), "-H", "Authorization: Bearer s3cret", "-H", "Cookie: sid=1")
    assert r.status == 200, r
    assert b"authorization=None cookie=None" in r.body, r.body
    first = site.received[0]
    assert first.header("Authorization") == "Bearer s3cret" and first.header("Cookie") == "sid=1"
    rec = proxy.only_summary(url=site.url("/login"))
    assert rec["final_url"] == other_site.url("/landing") and rec["redirects"] == 1


def test_same_host_follow_keeps_credentials(make_proxy, site):
    site.route("/a", redirect(302, "/b"))
    site.route("/b", echo)
    proxy = make_proxy(follow_rule())
    r = curl(proxy, site.url("/a"), "-H", "Authorization: Bearer s3cret")
    assert b"authorization=Bearer s3cret" in r.body, r.body


def test_cross_host_not_allowed_passes(make_proxy, site, other_site):
    site.route("/a", redirect(302, other_site.url("/x")))
    proxy = make_proxy(follow_rule(allow_cross_host=False), verbose_events=True)
    r = curl(proxy, site.url("/a"))
    assert r.status == 302 and r.header("Location") == other_site.url("/x")
    assert other_site.received == []
    [event] = proxy.log_records(1, where=lambda e: e["event"] == "task.willPerformRedirect")
    assert (event["decision"], event["reason"]) == ("pass", "cross_host")


def test_http_to_https_is_followed_over_tls(make_proxy, site, origin_cert):
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/s", (200, {}, b"over tls"))
        site.route("/a", redirect(301, secure.url("/s")))
        proxy = make_proxy({**follow_rule(), "trust": {"ca_files": [str(origin_cert[0])]}})
        r = curl(proxy, site.url("/a"))
        assert (r.status, r.body) == (200, b"over tls"), r
        rec = proxy.only_summary(url=site.url("/a"))
        assert rec["final_url"] == secure.url("/s")
        assert rec["upstream"]["tls"]["trust"]["result"] == "passed"
        assert rec["transactions"][1]["tls"]["version"].startswith("TLSv1.")


@pytest.mark.parametrize("follow", [True, False])
def test_https_to_http_is_refused_by_default(make_proxy, site, origin_cert, follow):
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/s", redirect(302, site.url("/plain")))
        site.route("/plain", (200, {}, b"plain"))
        rule = {"redirects": {"rules": [{"hosts": ["127.0.0.1"], "follow": follow}]}}
        proxy = make_proxy({**rule, "trust": {"ca_files": [str(origin_cert[0])]}}, verbose_events=True)
        resp, reader = raw_exchange(proxy.port, request_bytes("GET", secure.url("/s")))
        reader.sock.close()
        assert_error_response(resp, 502, "redirect_downgrade_refused")
        rec = proxy.only_summary(url=secure.url("/s"))
        assert_error_summary(rec, 502, "redirect_downgrade_refused")
        assert site.received == []
        [event] = proxy.log_records(1, where=lambda e: e["event"] == "task.willPerformRedirect")
        assert (event["decision"], event["reason"]) == ("refuse", "downgrade")


def test_https_to_http_allowed(make_proxy, site, origin_cert):
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/s", redirect(302, site.url("/plain")))
        site.route("/plain", (200, {}, b"plain"))
        proxy = make_proxy({**follow_rule(allow_downgrade=True), "trust": {"ca_files": [str(origin_cert[0])]}})
        resp, reader = raw_exchange(proxy.port, request_bytes("GET", secure.url("/s")))
        reader.sock.close()
        assert (resp.status, resp.body) == (200, b"plain")


@pytest.mark.parametrize("status,method,expected", [
    (301, "POST", "GET"), (302, "POST", "GET"), (303, "POST", "GET"), (303, "PUT", "GET"),
    (303, "HEAD", "HEAD"), (302, "PUT", "PUT"), (307, "POST", "POST"), (308, "PUT", "PUT"),
])
def test_method_rules(make_proxy, site, status, method, expected):
    site.route("/from", redirect(status, "/to"))
    site.route("/to", echo)
    proxy = make_proxy(follow_rule())
    body = b"x" * 100 if method in ("POST", "PUT") else None
    headers = {"Content-Type": "application/x-test"} if body else {}
    st, _, data = py_request(proxy, method, site.url("/from"), body=body, headers=headers)
    assert st == 200
    # Every hop's request was complete (a dropped body does not leave the next hop unfinished).
    rec = proxy.only_summary(url=site.url("/from"))
    assert all(t["timings_ms"]["send"] >= 0 for t in rec["transactions"]), rec
    [arrived] = site.requests_for("/to")
    assert arrived.method == expected
    if expected in ("GET", "HEAD"):
        # The content and the fields describing it are dropped (RFC 9110 §15.4).
        assert arrived.body_length == 0 and arrived.header("Content-Length") is None
        assert arrived.header("Content-Type") is None
    else:
        assert arrived.body_length == 100 and arrived.header("Content-Type") == "application/x-test"


@pytest.mark.parametrize("status", [307, 308])
def test_large_body_is_replayed_from_disk(make_proxy, site, status, tmp_path):
    body = os.urandom(5 * 1024 * 1024)
    site.route("/upload", redirect(status, "/store"))
    site.route("/store", echo)
    proxy = make_proxy(follow_rule())
    payload = tmp_path / "body"
    payload.write_bytes(body)
    r = curl(proxy, site.url("/upload"), "-X", "POST", "--data-binary", f"@{payload}",
             "-H", "Content-Type: application/octet-stream", "-H", "Expect:")
    assert r.status == 200, r
    assert f"method=POST length={len(body)} sha256={hashlib.sha256(body).hexdigest()}".encode() in r.body
    assert site.requests_for("/upload")[0].body_length == len(body)
    rec = proxy.only_summary(url=site.url("/upload"))
    assert rec["redirects"] == 1 and rec["bytes"]["request_body"] == len(body)
    assert [t["bytes"]["request_body"] for t in rec["transactions"]] == [len(body), len(body)]
    # The spill file was unlinked at creation: nothing is left in the state folder.
    tmp = proxy.workdir / "state" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []


def test_307_without_a_kept_body_is_passed(make_proxy, site):
    site.route("/upload", redirect(307, "/store"))
    # Bodies over replay_body_bytes are streamed and not kept: the 307 goes to the client.
    proxy = make_proxy({**follow_rule(), "retry": {"rules": [{"hosts": ["**"], "replay_body_bytes": 10}]}},
                       verbose_events=True)
    st, headers, _ = py_request(proxy, "POST", site.url("/upload"), body=b"y" * 100)
    assert st == 307 and dict(headers)["Location"] == "/store"
    [event] = proxy.log_records(1, where=lambda e: e["event"] == "task.willPerformRedirect")
    assert (event["decision"], event["reason"]) == ("pass", "body_not_replayable")


def test_loop_is_502(make_proxy, site):
    site.route("/l1", redirect(302, "/l2"))
    site.route("/l2", redirect(302, "/l1"))
    proxy = make_proxy(follow_rule())
    r = curl(proxy, site.url("/l1"))
    assert_error_response(r, 502, "redirect_loop")
    rec = proxy.only_summary(url=site.url("/l1"))
    assert_error_summary(rec, 502, "redirect_loop")
    assert rec["redirects"] == 1 and rec["attempts"] == 2


def test_chain_over_max_hops_is_502(make_proxy, site):
    for i in range(5):
        site.route(f"/h{i}", redirect(302, f"/h{i + 1}"))
    proxy = make_proxy(follow_rule(max_hops=3))
    r = curl(proxy, site.url("/h0"))
    assert_error_response(r, 502, "redirect_limit_exceeded")
    rec = proxy.only_summary(url=site.url("/h0"))
    assert rec["redirects"] == 3 and rec["attempts"] == 4
    assert [x.target for x in site.received] == [b"/h0", b"/h1", b"/h2", b"/h3"]


def test_rewrite_when_passing(make_proxy, site):
    site.route("/a", redirect(302, "http://old.example.invalid/path?q=1"))
    proxy = make_proxy({"redirects": {"rules": [{"hosts": ["127.0.0.1"], "rewrite": [
        {"from": "http://old.example.invalid/", "to": site.url("/new/")}]}]}})
    r = curl(proxy, site.url("/a"))
    assert r.status == 302 and r.header("Location") == site.url("/new/path?q=1")


def test_rewrite_when_following(make_proxy, site):
    site.route("/a", redirect(302, "http://old.example.invalid/path"))
    site.route("/new/path", (200, {}, b"rewritten"))
    proxy = make_proxy(follow_rule(rewrite=[{"from": "http://old.example.invalid/", "to": site.url("/new/")}]))
    r = curl(proxy, site.url("/a"))
    assert (r.status, r.body) == (200, b"rewritten")
    assert proxy.only_summary(url=site.url("/a"))["final_url"] == site.url("/new/path")


def test_intercepted_redirect_is_followed(make_proxy, origin_cert, tmp_path):
    """Inside an intercepted CONNECT, a followed hop uses the same trust rules."""
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/a", redirect(302, "/b"))
        secure.route("/b", (200, {}, b"inside"))
        proxy = make_proxy({**follow_rule(), "interception": {"hosts": ["127.0.0.1"]},
                            "connect": {"allowed_ports": [secure.port]},
                            "trust": {"ca_files": [str(origin_cert[0])]}})
        ca = proxy.workdir / "state" / "ca.pem"
        r = curl(proxy, secure.url("/a"), "--cacert", str(ca))
        assert (r.status, r.body) == (200, b"inside"), r
        rec = proxy.only_summary(kind="intercepted")
        assert rec["redirects"] == 1 and rec["final_url"] == secure.url("/b")
