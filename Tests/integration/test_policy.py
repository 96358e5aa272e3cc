"""Egress policy (`policy`): roles by proxy-auth user, by source address (127.0.0.2 and 127.0.0.3
with curl --interface) and by default; enforce and report modes; a decision record for every
exchange and tunnel; per-role rate and concurrency limits counted across loops; metrics, log
filters, `lookout log summary --by role`, OpenTelemetry attributes, and `lookout policy
test|explain`. Every refusal code and bad config gets its test."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from conftest import client_env, curl, wait_until
from origins import ScriptedOrigin


def policy_config(**roles_extra) -> dict:
    roles = {
        "ci": {"mode": "report", "allow": ["localhost"]},
        "laptops": {"mode": "enforce", "allow": ["127.0.0.1"], "methods": ["GET"]},
        "unknown": {"mode": "enforce", "allow": []},
    }
    roles.update(roles_extra)
    return {
        "auth": {"users": ["ci-bot:pw", "alice:pw2"]},
        "policy": {
            "identities": [{"role": "ci", "user": "ci-bot"}, {"role": "laptops", "clients": ["127.0.0.2/32"]}],
            "default_role": "unknown",
            "roles": roles,
        },
        "connect": {"allowed_ports": [443]},
    }


@pytest.fixture
def site():
    with ScriptedOrigin() as o:
        o.route("/", (200, {}, b"hello"))
        yield o


def test_roles_by_user_address_and_default_with_their_decisions(make_proxy, site):
    proxy = make_proxy(policy_config())
    laptop = curl(proxy, site.url("/"), "--interface", "127.0.0.2")
    post = curl(proxy, site.url("/"), "--interface", "127.0.0.2", "-d", "x=1")
    stranger = curl(proxy, site.url("/"), "--interface", "127.0.0.3")
    ci = curl(proxy, site.url("/"), "-x", proxy.url.replace("http://", "http://ci-bot:pw@"))
    wrong = curl(proxy, site.url("/"), "-x", proxy.url.replace("http://", "http://ci-bot:nope@"))
    assert (laptop.status, post.status, stranger.status, ci.status, wrong.status) == (200, 403, 403, 200, 407)
    # The refusal says what, never the role or the rule.
    assert stranger.header("X-Lookout-Error") == "policy_denied"
    assert b"unknown" not in stranger.body and b"default" not in stranger.body
    records = {r["id"]: r for r in proxy.summaries(5)}
    by_status = sorted(records.values(), key=lambda r: r["id"])
    laptop_r, post_r, stranger_r, ci_r, wrong_r = by_status
    assert laptop_r["policy"] == {"role": "laptops", "identity": "client:127.0.0.2", "mode": "enforce", "decision": "allow",
                                  "would_deny": False, "rule": "allow:127.0.0.1", "reason": "127.0.0.1 matches an allow pattern"}
    assert post_r["policy"]["rule"] == "methods" and post_r["policy"]["decision"] == "deny"
    assert post_r["error"]["code"] == "policy_denied"
    assert stranger_r["policy"]["role"] == "unknown" and stranger_r["policy"]["identity"] == "default"
    # Report mode forwards what enforce would refuse, and says so.
    assert ci_r["status"] == 200 and ci_r["policy"]["would_deny"] is True and ci_r["policy"]["decision"] == "allow"
    assert ci_r["policy"]["identity"] == "user:ci-bot"
    assert wrong_r["error"]["code"] == "proxy_authentication_required" and "policy" not in wrong_r
    assert len(site.received) == 2  # the laptop's GET and ci's: nothing refused went upstream


def test_credentials_become_mandatory_with_auth_required(make_proxy, site):
    proxy = make_proxy({**policy_config(), "auth": {"users": ["ci-bot:pw", "alice:pw2"], "required": True}})
    assert curl(proxy, site.url("/"), "--interface", "127.0.0.2").status == 407
    assert curl(proxy, site.url("/"), "-x", proxy.url.replace("http://", "http://ci-bot:pw@")).status == 200


def test_tunnels_get_a_decision_too(make_proxy):
    proxy = make_proxy(policy_config(laptops={"mode": "enforce", "allow": ["**.allowed.test"], "deny": ["bad.allowed.test"]}))
    denied = curl(proxy, "https://bad.allowed.test/", "--interface", "127.0.0.2")
    assert denied.status == 403 or "403" in denied.stderr
    record = proxy.only_summary()
    assert record["kind"] == "tunnel" and record["policy"]["rule"] == "deny:bad.allowed.test"
    assert record["error"]["code"] == "policy_denied"


def test_rate_is_exact_across_loops_with_retry_after(make_proxy, site):
    proxy = make_proxy({**policy_config(laptops={"mode": "enforce", "allow": ["127.0.0.1"],
                                                  "rate": {"requests_per_second": 5, "burst": 5}}),
                        "event_loops": 2})
    statuses, retry_after = [], []
    lock = threading.Lock()

    def hammer():
        # 10x the rate for one second, each request on a connection of its own (any loop).
        for _ in range(5):
            r = curl(proxy, site.url("/"), "--interface", "127.0.0.2")
            with lock:
                statuses.append(r.status)
                if r.status == 429:
                    retry_after.append(r.header("Retry-After"))
    start = time.monotonic()
    threads = [threading.Thread(target=hammer) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    passed = statuses.count(200)
    # The burst, plus what the rate refilled while they ran (within one burst).
    assert 5 <= passed <= 5 + 5 * elapsed + 1, (passed, elapsed)
    assert statuses.count(429) == 50 - passed and all(v and int(v) >= 1 for v in retry_after)
    limited = proxy.summaries(50 - passed, where=lambda r: (r.get("error") or {}).get("code") == "rate_limited")
    assert all(r["policy"]["rule"] == "rate" for r in limited)


def test_max_concurrent_counts_exchanges_in_flight(make_proxy):
    release = threading.Event()

    def slow(request):
        release.wait(10)
        return (200, {}, b"slow")
    with ScriptedOrigin() as origin:
        origin.route("/slow", slow, slow, slow)
        origin.route("/", (200, {}, b"fast"))
        proxy = make_proxy(policy_config(laptops={"mode": "enforce", "allow": ["127.0.0.1"], "max_concurrent": 2}))
        results = []
        threads = [threading.Thread(target=lambda: results.append(curl(proxy, origin.url("/slow"), "--interface", "127.0.0.2")))
                   for _ in range(2)]
        for t in threads:
            t.start()
        wait_until(lambda: len(origin.received) == 2, message="two slow requests upstream")
        third = curl(proxy, origin.url("/"), "--interface", "127.0.0.2")
        assert third.status == 503 and third.header("X-Lookout-Error") == "concurrency_limited"
        release.set()
        for t in threads:
            t.join()
        assert [r.status for r in results] == [200, 200]
        assert curl(proxy, origin.url("/"), "--interface", "127.0.0.2").status == 200  # the places came back


def test_metrics_filters_summary_and_spans_show_the_decisions(make_proxy, site, tmp_path):
    pytest.importorskip("opentelemetry.proto", reason="make deps installs opentelemetry-proto")
    from otlp_receiver import Receiver
    receiver = Receiver()
    try:
        proxy = make_proxy({**policy_config(), "otel": {"endpoint": receiver.endpoint, "timeout_ms": 2000,
                                                        "batch": {"max_records": 8, "max_delay_ms": 50, "max_queue": 100}}})
        curl(proxy, site.url("/"), "--interface", "127.0.0.2")
        curl(proxy, site.url("/"), "--interface", "127.0.0.3")
        curl(proxy, site.url("/"), "-x", proxy.url.replace("http://", "http://ci-bot:pw@"))
        proxy.summaries(3)
        metrics = curl(proxy, f"{proxy.url}/metrics", "--noproxy", "*").body.decode()
        assert 'lookout_policy_decisions_total{role="laptops",decision="allow",mode="enforce"} 1' in metrics
        assert 'lookout_policy_decisions_total{role="unknown",decision="deny",mode="enforce"} 1' in metrics
        assert 'lookout_policy_decisions_total{role="ci",decision="allow",mode="report"} 1' in metrics
        assert 'lookout_policy_would_deny_total{role="ci"} 1' in metrics
        spans = receiver.wait_spans(3)
        roles = {s["attrs"].get("lookout.policy.role"): s["attrs"] for s in spans if s["attrs"].get("lookout.policy.role")}
        assert roles["ci"]["lookout.policy.would_deny"] is True and roles["unknown"]["lookout.policy.decision"] == "deny"
    finally:
        receiver.stop()
    log = str(proxy.log_path)
    env = client_env()

    def lookout(*args):
        return subprocess.run([str(proxy.binary), *args], capture_output=True, text=True, timeout=30, env=env)
    shown = lookout("log", "show", log, "--filter", "policy.role:laptops or would_deny:true", "--format", "json")
    assert shown.returncode == 0 and shown.stdout.count('"policy"') == 2, shown.stdout + shown.stderr
    denied = lookout("log", "show", log, "--filter", "policy.decision:deny", "--format", "json")
    assert denied.stdout.count('"role":"unknown"') == 1
    summary = lookout("log", "summary", log, "--by", "role")
    lines = {line.split()[0]: line.split() for line in summary.stdout.splitlines()[1:]}
    assert lines["laptops"][1:5] == ["1", "1", "0", "0"] and lines["unknown"][1:5] == ["1", "0", "1", "0"]
    assert lines["ci"][1:5] == ["1", "1", "0", "1"] and "127.0.0.1 (1)" in summary.stdout


def test_policy_test_and_explain_without_a_proxy(lookout_bin, tmp_path):
    from conftest import to_yaml
    config = tmp_path / "lookout.yaml"
    config.write_text(to_yaml(policy_config()))
    cases = tmp_path / "cases.yaml"
    cases.write_text('- {identity: "user:ci-bot", method: GET, url: "http://localhost/", expect: allow}\n'
                     '- {identity: "client:127.0.0.2", method: GET, url: "http://127.0.0.1/", expect: allow}\n'
                     '- {identity: "client:127.0.0.2", method: POST, url: "http://127.0.0.1/", expect: deny}\n'
                     '- {identity: "", url: "https://example.com/", expect: deny}\n')
    run = lambda *a: subprocess.run([str(lookout_bin), *a], capture_output=True, text=True, timeout=30)
    ok = run("policy", "test", "--config", str(config), str(cases))
    assert ok.returncode == 0 and "4 of 4 cases as expected" in ok.stdout, ok.stdout + ok.stderr
    cases.write_text('- {identity: "user:ci-bot", url: "https://pypi.org/", expect: allow}\n')
    bad = run("policy", "test", "--config", str(config), str(cases))
    assert bad.returncode == 1 and "expected allow, got deny (role ci, rule default" in bad.stdout
    explained = run("policy", "explain", "--config", str(config), "--user", "ci-bot", "https://x.example/")
    assert explained.returncode == 0
    assert "role:     ci (user:ci-bot)" in explained.stdout and "rule:     default" in explained.stdout
    assert "would_deny" in explained.stdout


@pytest.mark.parametrize("policy, message", [
    ({"default_role": "nobody", "roles": {"a": {"allow": []}}}, "policy.default_role: names role \"nobody\""),
    ({"identities": [{"role": "ghost", "user": "ci-bot"}], "default_role": "a", "roles": {"a": {}}}, "names role \"ghost\""),
    ({"default_role": "a", "roles": {"a": {"rate": {"requests_per_second": 0}}}}, "requests_per_second: must be a number above 0"),
    ({"default_role": "a", "roles": {"a": {"allow": ["**.co.uk"]}}}, "covers every domain under the public suffix co.uk"),
    ({"identities": [{"role": "a", "client_cert_subject": "CN=x"}], "default_role": "a", "roles": {"a": {}}},
     "no listener asks clients for a certificate"),
    ({"identities": [{"role": "a", "user": "mallory"}], "default_role": "a", "roles": {"a": {}}}, "is not one of auth.users"),
])
def test_bad_policies_are_config_errors(lookout_bin, tmp_path, policy, message):
    from conftest import to_yaml
    f = tmp_path / "bad.yaml"
    f.write_text(to_yaml({"auth": {"users": ["ci-bot:pw"]}, "policy": policy}))
    p = subprocess.run([str(lookout_bin), "config", "check", str(f)], capture_output=True, text=True, timeout=20)
    assert p.returncode == 1 and message in p.stderr, p.stderr


def test_socks_users_get_their_role(make_proxy, site):
    config = policy_config()
    config["listen"] = ["127.0.0.1:0", {"address": "127.0.0.1:0", "mode": "socks5"}]
    proxy = make_proxy(config, listen=())
    wait_until(lambda: len(proxy.ports) > 1)
    env = {k: v for k, v in client_env().items() if "proxy" not in k.lower()}
    ok = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--socks5-hostname",
                         f"ci-bot:pw@127.0.0.1:{proxy.ports[1]}", f"http://localhost:{site.port}/"],
                        capture_output=True, text=True, timeout=30, env=env)
    assert ok.stdout == "200", ok.stderr
    record = proxy.only_summary()
    assert record["policy"]["role"] == "ci" and record["policy"]["rule"] == "allow:localhost" and record["capture"] == "socks5"


CLIENT_EXTENSIONS = """
[ leaf ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = {san}
"""


def test_client_certificates_on_a_tls_listener_name_the_role(make_proxy, pki, site, tmp_path):
    from tls_pki import self_signed
    server = pki.root.issue("proxy-listener")  # localhost, 127.0.0.1
    billing = pki.root.issue("billing-client", common_name="billing", extensions=CLIENT_EXTENSIONS,
                             san="DNS:billing.client")  # its key, signed again below with O=corp
    # The subject names the role in RFC 2253 order: "CN=billing,O=corp" needs O in the certificate.
    subprocess.run(["openssl", "req", "-new", "-key", str(billing.key), "-out", str(tmp_path / "b.csr"),
                    "-subj", "/O=corp/CN=billing"], check=True, capture_output=True)
    (tmp_path / "b.ext").write_text(CLIENT_EXTENSIONS.format(san="DNS:billing.client"))
    subprocess.run(["openssl", "x509", "-req", "-in", str(tmp_path / "b.csr"), "-CA", str(pki.root.cert),
                    "-CAkey", str(pki.root.dir / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", str(tmp_path / "b.ext"),
                    "-extensions", "leaf", "-out", str(tmp_path / "billing.pem")], check=True, capture_output=True)
    (tmp_path / "stranger").mkdir()
    stranger = self_signed(tmp_path / "stranger")  # a certificate no client_ca issued
    config = policy_config(billing={"mode": "enforce", "allow": ["127.0.0.1"]})
    config["policy"]["identities"].insert(0, {"role": "billing", "client_cert_subject": "CN=billing,O=corp"})
    config["listen"] = [{"address": "127.0.0.1:0", "tls": {"cert": str(server.cert), "key": str(server.key),
                                                          "client_ca": str(pki.root.cert)}}]
    proxy = make_proxy(config, listen=())
    port = proxy.port
    env = {k: v for k, v in client_env().items() if "proxy" not in k.lower()}

    def through(*cert):
        return subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", f"https://localhost:{port}",
                               "--proxy-cacert", str(pki.root.cert), *cert, site.url("/")],
                              capture_output=True, text=True, timeout=30, env=env)
    with_cert = through("--proxy-cert", str(tmp_path / "billing.pem"), "--proxy-key", str(billing.key))
    without = through()
    refused = through("--proxy-cert", str(stranger.cert), "--proxy-key", str(stranger.key))
    assert with_cert.stdout == "200", with_cert.stderr
    assert without.stdout == "403"  # no certificate: the default role
    assert refused.stdout in ("000", "") and refused.returncode != 0  # the handshake fails
    records = proxy.summaries(3)
    allowed = next(r for r in records if r.get("status") == 200)
    assert allowed["policy"]["role"] == "billing" and allowed["policy"]["identity"] == "cert:CN=billing,O=corp"
    assert next(r for r in records if r.get("status") == 403)["policy"]["role"] == "unknown"
    failed = next(r for r in records if (r.get("error") or {}).get("code") == "client_tls_handshake_failed")
    assert "certificate" in failed["error"]["message"]


def test_http2_streams_inside_interception_each_get_a_decision(make_proxy, pki):
    """An h2 client through an intercepted CONNECT: every stream is checked for its method and
    counted against the role's rate, as HTTP/1.1 requests inside the tunnel are."""
    import asyncio
    import ssl

    import httpx

    import origins
    from test_tls_intercept import ca_file, intercepting

    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        config = intercepting(pki, origin, policy={
            "default_role": "devs",
            "roles": {"devs": {"mode": "enforce", "allow": ["127.0.0.1"], "methods": ["GET"],
                               "rate": {"requests_per_second": 0.001, "burst": 3}}},
        })
        proxy = make_proxy(config)
        context = ssl.create_default_context(cafile=ca_file(proxy))

        async def run():
            async with httpx.AsyncClient(http2=True, proxy=proxy.url, verify=context, timeout=30) as client:
                posted = await client.post(origin.url("/echo"), content=b"x")
                gets = [await client.get(origin.url(f"/fixed/{n}")) for n in range(1, 5)]
                return posted, gets

        posted, gets = asyncio.run(run())
        assert posted.http_version == "HTTP/2" and posted.status_code == 403
        assert posted.headers["x-lookout-error"] == "policy_denied"
        # A refused method takes no token: the burst of 3 lets three GETs through, the fourth waits.
        assert [r.status_code for r in gets] == [200, 200, 200, 429]
        assert int(gets[-1].headers["retry-after"]) >= 1
        streams = proxy.summaries(5, kind="intercepted")
        decisions = [(r["method"], r["policy"]["decision"], r["policy"]["rule"]) for r in streams]
        assert decisions == [("POST", "deny", "methods")] + [("GET", "allow", "allow:127.0.0.1")] * 3 + [
            ("GET", "deny", "rate")], decisions
        assert all(r["http_version"] == "HTTP/2" and r["policy"]["role"] == "devs" for r in streams)
    finally:
        origin.stop()
