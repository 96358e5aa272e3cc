"""Header rules (headers.rules, headers.forwarded): per-host field edits on requests and responses,
through the proxy with curl against scripted Python origins on 127.0.0.1 (and "localhost" as a host
no rule names), plain and intercepted; refused names and values at load, with their line."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import curl
from origins import ScriptedOrigin


def header_rules(**extra):
    return {"headers": {"rules": [{
        "hosts": ["127.0.0.1"],
        "request": {"set": {"X-Debug": "1", "Authorization": "Bearer rule-secret"},
                    "add": {"X-Trace": "lookout"},
                    "remove": ["X-Internal"]},
        "response": {"set": {"Cache-Control": "no-store"}, "add": {"X-Seen-By": "lookout"},
                     "remove": ["Server"]},
    }], **extra}}


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/", (200, {"Server": "scripted", "Cache-Control": "max-age=60"}, b"hello"))
        yield o


def test_request_and_response_edits_apply_and_are_events(make_proxy, site):
    proxy = make_proxy(header_rules(), verbose_events=True)
    r = curl(proxy, site.url("/"), "-H", "X-Debug: 0", "-H", "X-Trace: client", "-H", "X-Internal: secret")
    assert (r.status, r.body) == (200, b"hello"), r
    [req] = site.received
    assert req.header_all("X-Debug") == ["1"], req.headers  # set replaces the client's
    assert req.header_all("X-Trace") == ["client", "lookout"], req.headers  # add appends
    assert req.header("X-Internal") is None, req.headers
    assert req.header("Authorization") == "Bearer rule-secret"
    # The response: Server removed, Cache-Control replaced, one field added.
    assert r.header("Server") is None, r.headers
    assert r.header("Cache-Control") == "no-store", r.headers
    assert r.header("X-Seen-By") == "lookout", r.headers
    rec = proxy.only_summary()
    [adapted] = proxy.log_records(1, where=lambda e: e["event"] == "request.didAdaptRequest" and e["id"] == rec["id"])
    assert adapted["rule"] == "127.0.0.1", adapted
    assert adapted["set"] == {"x-debug": "1", "authorization": "[redacted]"}, adapted
    assert adapted["added"] == {"x-trace": "lookout"}, adapted
    assert adapted["removed"] == ["x-internal"], adapted
    assert adapted["headers"]["authorization"] == "[redacted]", adapted
    [response] = proxy.log_records(1, where=lambda e: e["event"] == "request.didAdaptResponse" and e["id"] == rec["id"])
    assert response["rule"] == "127.0.0.1"
    assert response["set"] == {"cache-control": "no-store"} and response["removed"] == ["server"], response


def test_a_host_no_rule_names_is_left_alone(make_proxy):
    with ScriptedOrigin(host="localhost") as other:
        other.route("/", (200, {"Server": "scripted"}, b"other"))
        proxy = make_proxy(header_rules(), verbose_events=True)
        r = curl(proxy, other.url("/"), "-H", "X-Internal: kept")
        assert (r.status, r.body) == (200, b"other"), r
        [req] = other.received
        assert req.header("X-Internal") == "kept" and req.header("X-Debug") is None, req.headers
        assert r.header("Server") == "scripted", r.headers
        rec = proxy.only_summary()
        [adapted] = proxy.log_records(1, where=lambda e: e["event"] == "request.didAdaptRequest" and e["id"] == rec["id"])
        assert "rule" not in adapted, adapted
        assert proxy.log_records(0, where=lambda e: e["event"] == "request.didAdaptResponse") == []


def test_rules_apply_inside_intercepted_tunnels(make_proxy, origin_cert):
    with ScriptedOrigin(tls=origin_cert) as secure:
        secure.route("/", (200, {"Server": "scripted"}, b"inside"))
        proxy = make_proxy({**header_rules(), "interception": {"hosts": ["127.0.0.1"]},
                            "connect": {"allowed_ports": [secure.port]},
                            "trust": {"ca_files": [str(origin_cert[0])]}})
        ca = proxy.workdir / "state" / "ca.pem"
        r = curl(proxy, secure.url("/"), "--cacert", str(ca), "-H", "X-Internal: secret")
        assert (r.status, r.body) == (200, b"inside"), r
        [req] = secure.received
        assert req.header("X-Debug") == "1" and req.header("X-Internal") is None, req.headers
        assert r.header("Server") is None and r.header("Cache-Control") == "no-store", r.headers
        assert proxy.only_summary(kind="intercepted")["status"] == 200


def test_forwarded_names_the_client_after_its_own(make_proxy, site):
    proxy = make_proxy({"headers": {"forwarded": True}})
    r = curl(proxy, site.url("/"), "-H", "Forwarded: for=192.0.2.7")
    assert r.status == 200, r
    [req] = site.received
    assert req.header_all("Forwarded") == ["for=192.0.2.7", "for=127.0.0.1;proto=http"], req.headers


def test_forwarded_is_off_by_default(make_proxy, site):
    proxy = make_proxy({})
    assert curl(proxy, site.url("/")).status == 200
    assert site.received[0].header("Forwarded") is None


def config_check(lookout_bin, path):
    return subprocess.run([str(lookout_bin), "config", "check", str(path)], capture_output=True,
                          text=True, timeout=20)


@pytest.mark.parametrize("rule, line, message", [
    ('    request:\n      set: {"Content-Length": "5"}\n', 5,
     r"headers\.rules\[0\]\.request\.set: Content-Length cannot be changed by a header rule"),
    ('    request:\n      remove: ["Host"]\n', 5, r"headers\.rules\[0\]\.request\.remove\[0\]: Host cannot be changed"),
    ('    response:\n      remove: ["Transfer-Encoding"]\n', 5, r"Transfer-Encoding cannot be changed"),
    ('    request:\n      add: {"Bad Name": "x"}\n', 5, r'"Bad Name" is not a valid field name'),
    ('    request:\n      set: {"X-A": "one\\r\\nX-B: two"}\n', 5, r"a field value cannot contain CR or LF"),
    ('    request:\n      set: {"X-A": "nul\\0"}\n', 5, r"a field value cannot contain NUL"),
    ('    request:\n      sett: {"X-A": "1"}\n', 5, r"headers\.rules\[0\]\.request\.sett: unknown key"),
    ('    request:\n      set: {"X-A": ~}\n', 5, r"expected a field value"),
])
def test_config_check_refuses_bad_rules(lookout_bin, tmp_path, rule, line, message):
    f = tmp_path / "bad.yaml"
    f.write_text('headers:\n  rules:\n  - hosts: ["api.example.com"]\n' + rule)
    p = config_check(lookout_bin, f)
    assert p.returncode == 1, p.stdout
    assert re.search(rf"^{re.escape(str(f))}:{line}:\d+: .*{message}", p.stderr, re.M), p.stderr


def test_config_check_accepts_the_documented_shape(lookout_bin, tmp_path):
    f = tmp_path / "good.yaml"
    f.write_text("""headers:
  via: true
  forwarded: false
  rules:
    - hosts: ["api.example.com"]
      request:
        set: {"X-Debug": "1"}
        add: {"X-Trace": "lookout"}
        remove: ["X-Internal"]
      response:
        set: {"Cache-Control": "no-store"}
        remove: ["Server"]
""")
    p = config_check(lookout_bin, f)
    assert p.returncode == 0, p.stderr
