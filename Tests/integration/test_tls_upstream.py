"""Upstream TLS and trust evaluation end to end: a plain-HTTP client sends absolute-form
https:// requests, Lookout originates TLS to Python `ssl` origins serving certificates made by
tls_pki, and every trust rule's outcome is checked in the response, the summary record and the
verbose events."""

import ssl
import subprocess

import pytest

import origins
from conftest import (assert_error_response, assert_error_summary, assert_timings, raw_exchange,
                      request_bytes, wait_until)
from origins import RawOrigin, reply_and_hold

WRONG_PIN = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


@pytest.fixture(scope="module")
def tls_origins(pki):
    """A running HTTPS origin per leaf, serving leaf + intermediate."""
    started = {}
    for name in ("good", "expired", "not_yet_valid", "wrong_host", "other_key", "self_signed", "other_root_leaf"):
        started[name] = origins.HTTPOrigin(tls=getattr(pki, name).tls).start()
    yield started
    for origin in started.values():
        origin.stop()


def trusting(pki, **extra) -> dict:
    """Config trusting only the test root, plus ``extra`` top-level sections."""
    config = {"trust": {"system_roots": False, "ca_files": [str(pki.root.cert)]}}
    for key, value in extra.items():
        if key == "trust":
            config["trust"].update(value)
        else:
            config[key] = value
    return config


def fetch(proxy, origin, path="/fixed/10", host="localhost", headers=()):
    url = f"https://{host}:{origin.port}{path}"
    resp, reader = raw_exchange(proxy.port, request_bytes("GET", url, headers=[("Connection", "close"), *headers]))
    return resp, url


def trust_of(rec) -> dict:
    return rec["upstream"]["tls"]["trust"]


def assert_refused(proxy, origin, reason, *, host="localhost"):
    resp, url = fetch(proxy, origin, host=host)
    assert_error_response(resp, 502, "server_trust_evaluation_failed")
    assert resp.body.decode().startswith(f"lookout: server_trust_evaluation_failed: {reason}: "), resp.body
    rec = proxy.only_summary(url=url)
    assert_error_summary(rec, 502, "server_trust_evaluation_failed", kind="http", method="GET", url=url)
    assert rec["error"]["message"].startswith(f"{reason}: "), rec
    trust = trust_of(rec)
    assert trust["result"] == "failed" and trust["reason"] == reason, trust
    assert trust["message"], trust
    return rec


# MARK: - the default evaluator

def test_a_good_chain_passes_with_tls_details_in_the_log(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki))
    resp, url = fetch(proxy, tls_origins["good"])
    assert resp.status == 200 and resp.body == origins.pattern(10), resp.body
    rec = proxy.only_summary(url=url)
    assert rec["kind"] == "http" and rec["status"] == 200, rec
    tls = rec["upstream"]["tls"]
    assert tls["version"] in ("TLSv1.3", "TLSv1.2"), tls
    assert tls["cipher"], tls
    assert tls["sni"] == "localhost", tls
    assert tls["resumed"] is False, tls
    assert tls["trust"] == {"rule": "default", "evaluator": "default", "profile": "rfc5280", "result": "passed",
                            "presented_pins": [pki.good.pin, pki.intermediate.pin]}, tls
    assert_timings(rec["timings_ms"])
    assert rec["timings_ms"]["tls"] > 0, rec


@pytest.mark.parametrize("leaf, reason", [
    ("expired", "expired"),
    ("not_yet_valid", "not_yet_valid"),
    ("wrong_host", "hostname_mismatch"),
    ("self_signed", "self_signed"),
    ("other_root_leaf", "untrusted_root"),
])
def test_the_default_evaluator_refuses(make_proxy, pki, tls_origins, leaf, reason):
    proxy = make_proxy(trusting(pki), verbose_events=True)
    rec = assert_refused(proxy, tls_origins[leaf], reason)
    challenge = proxy.log_records(1, lambda r: r["event"] == "task.didReceiveChallenge" and r.get("id") == rec["id"])[0]
    assert challenge["host"] == "localhost" and challenge["rule"] == "default" and challenge["evaluator"] == "default", challenge
    evaluated = proxy.log_records(1, lambda r: r["event"] == "task.didEvaluateServerTrust" and r.get("id") == rec["id"])[0]
    assert evaluated["result"] == "failed" and evaluated["reason"] == reason and evaluated["enforced"] is True, evaluated
    assert evaluated["presented_pins"] == [getattr(pki, leaf).pin] + (
        [pki.intermediate.pin] if leaf in ("expired", "not_yet_valid", "wrong_host") else []), evaluated


def test_the_system_roots_alone_do_not_trust_the_test_root(make_proxy, tls_origins):
    proxy = make_proxy()
    assert_refused(proxy, tls_origins["good"], "untrusted_root")


def test_an_ip_literal_is_checked_against_ip_names(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki))
    resp, url = fetch(proxy, tls_origins["good"], host="127.0.0.1")
    assert resp.status == 200, resp.body
    assert proxy.only_summary(url=url)["upstream"]["tls"].get("sni") is None


# MARK: - pins

def pin_rule(pins, **more) -> dict:
    return {"name": "local", "hosts": ["localhost"], "evaluators": ["default", "public-keys"], "pins": pins, **more}


@pytest.mark.parametrize("which", ["leaf", "intermediate", "backup", "curl-spelling"])
def test_a_matching_pin_passes(make_proxy, pki, tls_origins, which):
    pins = {
        "leaf": [pki.good.pin],
        "intermediate": [pki.intermediate.pin],
        "backup": [WRONG_PIN, pki.good.pin],
        "curl-spelling": ["sha256//" + pki.good.pin.split("/", 1)[1]],
    }[which]
    proxy = make_proxy(trusting(pki, trust={"rules": [pin_rule(pins)]}))
    resp, url = fetch(proxy, tls_origins["good"])
    assert resp.status == 200, resp.body
    trust = trust_of(proxy.only_summary(url=url))
    assert trust["rule"] == "local" and trust["evaluator"] == "composite(default, public-keys)", trust
    assert trust["result"] == "passed", trust


def test_a_mismatching_pin_is_refused_with_the_presented_pins(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, trust={"rules": [pin_rule([pki.other_key.pin])]}), verbose_events=True)
    rec = assert_refused(proxy, tls_origins["good"], "pin_mismatch")
    assert pki.good.pin in rec["error"]["message"] and pki.other_key.pin in rec["error"]["message"], rec
    evaluated = proxy.log_records(1, lambda r: r["event"] == "task.didEvaluateServerTrust")[0]
    assert evaluated["rule"] == "local" and evaluated["enforced"] is True, evaluated
    assert evaluated["presented_pins"] == [pki.good.pin, pki.intermediate.pin], evaluated


def test_an_expired_pin_set_is_reported_not_enforced(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, trust={"rules": [pin_rule([WRONG_PIN], expires="2020-01-31")]}),
                       verbose_events=True)
    resp, url = fetch(proxy, tls_origins["good"])
    assert resp.status == 200, resp.body
    trust = trust_of(proxy.only_summary(url=url))
    assert trust["result"] == "reported" and trust["reason"] == "pin_mismatch", trust
    evaluated = proxy.log_records(1, lambda r: r["event"] == "task.didEvaluateServerTrust")[0]
    assert evaluated["enforced"] is False, evaluated


def test_a_pin_set_expiring_in_the_future_is_enforced(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, trust={"rules": [pin_rule([WRONG_PIN], expires="2099-12-31")]}))
    assert_refused(proxy, tls_origins["good"], "pin_mismatch")


def test_an_expired_pin_set_still_enforces_the_chain(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, trust={"rules": [pin_rule([WRONG_PIN], expires="2020-01-31")]}))
    assert_refused(proxy, tls_origins["expired"], "expired")


def test_report_only_lets_a_violation_pass_and_logs_it(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, trust={"rules": [pin_rule([WRONG_PIN], mode="report-only")]}),
                       verbose_events=True)
    resp, url = fetch(proxy, tls_origins["good"])
    assert resp.status == 200, resp.body
    trust = trust_of(proxy.only_summary(url=url))
    assert trust["result"] == "reported" and trust["reason"] == "pin_mismatch", trust
    evaluated = proxy.log_records(1, lambda r: r["event"] == "task.didEvaluateServerTrust")[0]
    assert evaluated["result"] == "reported" and evaluated["enforced"] is False, evaluated
    wait_until(lambda: "trust rule local reported localhost: pin_mismatch" in proxy.stderr,
               message="report-only violations are warned about on stderr")


def test_pinned_certificates(make_proxy, pki, tls_origins):
    rule = {"name": "certs", "hosts": ["localhost"], "evaluators": ["default", "pinned-certificates"],
            "certificates": [str(pki.good.cert)]}
    proxy = make_proxy(trusting(pki, trust={"rules": [rule]}))
    resp, url = fetch(proxy, tls_origins["good"])
    assert resp.status == 200, resp.body
    assert trust_of(proxy.only_summary(url=url))["evaluator"] == "composite(default, pinned-certificates)"
    assert_refused(proxy, tls_origins["other_key"], "pin_mismatch")


def test_the_most_specific_rule_wins(make_proxy, pki, tls_origins):
    rules = [
        {"name": "everything", "hosts": ["**"], "pins": [WRONG_PIN]},
        {"name": "exact", "hosts": ["localhost"], "evaluators": ["default"]},
    ]
    proxy = make_proxy(trusting(pki, trust={"rules": rules}))
    resp, url = fetch(proxy, tls_origins["good"])
    assert resp.status == 200, resp.body
    assert trust_of(proxy.only_summary(url=url))["rule"] == "exact"
    rec = assert_refused(proxy, tls_origins["good"], "pin_mismatch", host="127.0.0.1")
    assert trust_of(rec)["rule"] == "everything", rec


def test_the_disabled_evaluator_passes_anything_with_a_warning(make_proxy, pki, tls_origins):
    proxy = make_proxy({"trust": {"default": {"evaluators": ["disabled"]}}})
    assert "disabled evaluator" in proxy.stderr, proxy.stderr
    resp, url = fetch(proxy, tls_origins["self_signed"])
    assert resp.status == 200, resp.body
    assert trust_of(proxy.only_summary(url=url))["evaluator"] == "disabled"
    wait_until(lambda: "trust evaluation is disabled for localhost" in proxy.stderr,
               message="every use of the disabled evaluator is warned about")


# MARK: - reuse and resumption

def test_a_pooled_connection_keeps_its_tls_details(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, event_loops=1))  # the pool is per event loop
    first, url = fetch(proxy, tls_origins["good"])
    second, _ = fetch(proxy, tls_origins["good"])
    assert first.status == second.status == 200
    recs = proxy.summaries(2, url=url)
    assert [r["upstream"]["reused"] for r in recs] == [False, True], recs
    assert recs[1]["upstream"]["tls"]["trust"]["result"] == "passed", recs[1]


def test_a_new_connection_resumes_the_tls_session(make_proxy, pki, tls_origins):
    proxy = make_proxy(trusting(pki, pool={"max_idle_per_origin": 0}, event_loops=1))
    fetch(proxy, tls_origins["good"])
    fetch(proxy, tls_origins["good"])
    recs = proxy.summaries(2)
    assert [r["upstream"]["reused"] for r in recs] == [False, False], recs
    assert [r["upstream"]["tls"]["resumed"] for r in recs] == [False, True], recs
    # A resumed session is still evaluated: the chain comes with the session.
    assert recs[1]["upstream"]["tls"]["trust"]["presented_pins"] == [pki.good.pin, pki.intermediate.pin]


# MARK: - handshake failures

@pytest.fixture
def raw_peer():
    peers = []

    def make(reply):
        peers.append(RawOrigin(reply_and_hold(reply)).start())
        return peers[-1]

    yield make
    for peer in peers:
        peer.stop()


def test_an_upstream_alert_is_a_502_with_openssls_reason(make_proxy, pki, raw_peer):
    # A TLS 1.2 record: fatal (2) handshake_failure (40).
    peer = raw_peer(bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]))
    proxy = make_proxy(trusting(pki))
    resp, url = fetch(proxy, peer)
    assert_error_response(resp, 502, "upstream_tls_handshake_failed")
    rec = proxy.only_summary(url=url)
    assert_error_summary(rec, 502, "upstream_tls_handshake_failed", url=url)
    assert "handshake failure" in rec["error"]["message"], rec


def test_garbage_instead_of_a_server_hello_is_a_502(make_proxy, pki, raw_peer):
    peer = raw_peer(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    proxy = make_proxy(trusting(pki))
    resp, url = fetch(proxy, peer)
    assert_error_response(resp, 502, "upstream_tls_handshake_failed")
    assert "wrong version number" in proxy.only_summary(url=url)["error"]["message"]


def test_a_silent_upstream_times_the_handshake_out(make_proxy, pki, raw_peer):
    peer = raw_peer(None)
    proxy = make_proxy(trusting(pki, timeouts={"tls_handshake": 0.5, "shutdown_grace": 5}))
    resp, url = fetch(proxy, peer)
    assert_error_response(resp, 504, "upstream_tls_handshake_timed_out")
    assert_error_summary(proxy.only_summary(url=url), 504, "upstream_tls_handshake_timed_out", url=url)


def test_minimum_version_refuses_an_older_origin(make_proxy, pki):
    origin = origins.HTTPOrigin(tls=pki.good.tls)
    origin.server.tls_context.maximum_version = ssl.TLSVersion.TLSv1_2
    origin.start()
    try:
        proxy = make_proxy(trusting(pki, tls={"minimum_version": "1.3"}))
        resp, url = fetch(proxy, origin)
        assert_error_response(resp, 502, "upstream_tls_handshake_failed")
        assert "protocol version" in proxy.only_summary(url=url)["error"]["message"]
        relaxed = make_proxy(trusting(pki))
        resp, url = fetch(relaxed, origin)
        assert resp.status == 200
        assert relaxed.only_summary(url=url)["upstream"]["tls"]["version"] == "TLSv1.2"
    finally:
        origin.stop()


# MARK: - config

def test_config_check_names_the_line_of_a_bad_rule(lookout_bin, tmp_path):
    config = tmp_path / "lookout.yaml"
    config.write_text("trust:\n  rules:\n    - hosts: [api.example.com]\n      evaluators: [default, public-key]\n")
    done = subprocess.run([str(lookout_bin), "config", "check", str(config)], capture_output=True, text=True)
    assert done.returncode == 1
    assert f"{config}:4:" in done.stderr and "trust.rules[0].evaluators" in done.stderr, done.stderr
    assert "did you mean 'public-keys'?" in done.stderr, done.stderr


def test_a_bad_config_does_not_start(lookout_bin, tmp_path):
    config = tmp_path / "lookout.yaml"
    config.write_text("listen: [\"127.0.0.1:0\"]\ntrust:\n  rules:\n    - hosts: [a.example]\n      pins: [\"sha256/short\"]\n")
    done = subprocess.run([str(lookout_bin), "run", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 78, done
    assert "trust.rules[0].pins[0]" in done.stderr, done.stderr
