"""What a reload changes besides `auth` and `policy`: per-host rules, trust (and the pooled
connections it judged), interception, cache rules, breakpoints and hooks. Each takes effect for the
next exchange, on open keep-alive connections too; an exchange that started finishes under the
configuration it started with; replaced hook programs stop; the cache store and the breakpoint
bounds wait for a restart, and the answer says so."""

from __future__ import annotations

import json
import os
import threading
import time

from conftest import curl, raw_exchange, read_response, request_bytes, to_yaml, wait_until, Reader, connect
from origins import HTTPOrigin, ScriptedOrigin
from test_breakpoints import admin, wait_held, Background
from test_hooks import hook, write_hook
from test_tls_intercept import ca_file, intercepting

WRONG_PIN = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


def reload(proxy, **sections) -> dict:
    """Writes the proxy's config with `sections` replaced, reloads it and returns the answer."""
    proxy.config = {**proxy.config, **sections}
    proxy.config_path.write_text(to_yaml(proxy.config))
    answer = curl(proxy, f"{proxy.url}/admin/reload", "-X", "POST", "--noproxy", "*")
    assert answer.status == 200, answer.body
    return json.loads(answer.body)


def header_rule(value: str) -> dict:
    return {"rules": [{"hosts": ["127.0.0.1"], "response": {"set": {"X-Rule": value}}}]}


def test_rules_change_for_the_next_exchange_and_a_started_one_keeps_its_own(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/", (200, {}, b"quick"))
        site.route("/slow", lambda r: (time.sleep(1.5), (200, {}, b"slow"))[1])
        proxy = make_proxy({"headers": header_rule("one")})
        kept = connect(proxy.port)
        reader = Reader(kept)
        kept.sendall(request_bytes("GET", site.url("/")))
        assert read_response(reader).header("X-Rule") == "one"
        slow = Background(lambda: curl(proxy, site.url("/slow")))
        wait_until(lambda: site.requests_for("/slow"), message="the slow exchange started")
        answer = reload(proxy, headers=header_rule("two"))
        assert answer["reloaded"] == ["headers"] and answer["restart_needed"] == []
        assert curl(proxy, site.url("/")).header("X-Rule") == "two"
        # A connection opened before the reload: its next exchange runs under the new rules.
        kept.sendall(request_bytes("GET", site.url("/")))
        assert read_response(reader).header("X-Rule") == "two"
        kept.close()
        started_before = slow.join()
        assert started_before.status == 200 and started_before.header("X-Rule") == "one"


def test_trust_reload_judges_again_and_retires_pooled_connections(make_proxy, pki):
    with HTTPOrigin(tls=pki.good.tls) as site:
        trusting = {"system_roots": False, "ca_files": [str(pki.root.cert)]}
        proxy = make_proxy({"trust": trusting})
        url = f"https://localhost:{site.port}/fixed/10"

        def fetch():
            resp, _ = raw_exchange(proxy.port, request_bytes("GET", url, headers=[("Connection", "close")]))
            return resp

        assert fetch().status == 200  # its upstream connection stays in the pool
        pinned = {**trusting, "rules": [{"name": "pinned", "hosts": ["localhost"],
                                         "evaluators": ["default", "public-keys"], "pins": [WRONG_PIN]}]}
        assert reload(proxy, trust=pinned)["reloaded"] == ["trust"]
        refused = fetch()
        assert refused.status == 502 and refused.header("X-Lookout-Error") == "server_trust_evaluation_failed"
        assert refused.body.decode().startswith("lookout: server_trust_evaluation_failed: pin_mismatch: ")
        reload(proxy, trust=trusting)
        assert fetch().status == 200
        trusts = [r["upstream"]["tls"]["trust"] for r in proxy.summaries(3, kind="http") if r.get("upstream", {}).get("tls")]
        assert [t["result"] for t in trusts] == ["passed", "failed", "passed"], trusts


def test_interception_starts_and_stops_on_reload(make_proxy, pki):
    with HTTPOrigin(tls=pki.good.tls) as site:
        config = intercepting(pki, site, hosts=())
        proxy = make_proxy(config)
        url = f"https://localhost:{site.port}/fixed/10"
        assert curl(proxy, url, "--cacert", str(pki.root.cert)).status == 200
        assert proxy.summaries(1, kind="tunnel")
        assert reload(proxy, interception={"hosts": ["localhost"]})["reloaded"] == ["interception"]
        assert curl(proxy, url, "--cacert", ca_file(proxy)).status == 200
        [inside] = proxy.summaries(1, kind="intercepted")
        assert inside["url"] == url
        reload(proxy, interception={"hosts": []})
        assert curl(proxy, url, "--cacert", str(pki.root.cert)).status == 200
        assert len(proxy.summaries(2, kind="tunnel")) == 2


def test_cache_rules_reload_and_the_store_waits_for_a_restart(make_proxy):
    with ScriptedOrigin() as site:
        site.route("/c", (200, {"Cache-Control": "max-age=600"}, b"cacheable"))
        proxy = make_proxy({"cache": {"enabled": True, "rules": [{"hosts": ["**"], "store": False}]}})
        for _ in range(2):
            assert curl(proxy, site.url("/c")).status == 200
        assert len(site.requests_for("/c")) == 2
        answer = reload(proxy, cache={"enabled": True, "rules": [{"hosts": ["**"], "store": True}]})
        assert answer["reloaded"] == ["cache.rules"] and answer["restart_needed"] == []
        for _ in range(2):
            assert curl(proxy, site.url("/c")).body == b"cacheable"
        assert len(site.requests_for("/c")) == 3, "the second one after the reload is a hit"
        assert [r["cache"]["status"] for r in proxy.summaries(4, kind="http")][-2:] == ["miss", "hit"]
        moved = reload(proxy, cache={"enabled": True, "path": str(proxy.workdir / "elsewhere"),
                                     "rules": [{"hosts": ["**"], "store": True}]})
        assert moved["reloaded"] == [] and moved["restart_needed"] == ["cache.path"]
        assert curl(proxy, site.url("/c")).body == b"cacheable"
        assert len(site.requests_for("/c")) == 3, "the running store still answers"


def test_breakpoint_rules_reload_and_their_bounds_wait(make_proxy, origin):
    proxy = make_proxy()
    answer = reload(proxy, breakpoints={"rules": [{"filter": "url~/held", "on": ["request"], "timeout": 60}]})
    assert answer["reloaded"] == ["breakpoints.rules"]
    status, listed = admin(proxy, "GET", "/breakpoints")
    assert status == 200 and [r["filter"] for r in listed["breakpoints"]] == ["url~/held"]
    client = Background(lambda: curl(proxy, origin.url("/echo/held")))
    [entry] = wait_held(proxy)
    assert admin(proxy, "POST", f"/exchanges/{entry['id']}/resume")[0] == 200
    assert client.join().status == 200
    bounded = reload(proxy, breakpoints={"max_held": 3, "rules": []})
    assert bounded["reloaded"] == ["breakpoints.rules"] and bounded["restart_needed"] == ["breakpoints.max_held"]
    assert admin(proxy, "GET", "/breakpoints")[1]["breakpoints"] == []
    assert curl(proxy, origin.url("/echo/held")).status == 200


def test_hooks_reload_and_the_replaced_program_stops(make_proxy, origin, tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    answering = write_hook(tmp_path, "answering", f"""
open({str(pids)!r} + "/" + str(os.getpid()), "w").close()
return {{"id": call["id"], "action": "answer", "status": 203, "headers": {{}}, "body": "from the hook"}}
""")
    proxy = make_proxy()
    assert curl(proxy, origin.url("/echo")).status == 200
    answer = reload(proxy, hooks=[hook("answering", answering, on=["request"], timeout_ms=5000)])
    assert answer["reloaded"] == ["hooks"]
    result = curl(proxy, origin.url("/echo"))
    assert result.status == 203 and result.body == b"from the hook"
    [pid] = [int(p.name) for p in pids.iterdir()]
    reload(proxy, hooks=[])
    assert curl(proxy, origin.url("/echo")).status == 200

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A stopped child stays a zombie until reaped; its state says it ended.
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[1].split()[0] == "Z"
    wait_until(gone, timeout=10, message="the replaced hook's program stopped")
