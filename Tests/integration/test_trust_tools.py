"""Chains made by the tools people use (tool_chains.py: OpenSSL 3 `req -x509` defaults and
`-addext`, `openssl ca`, mkcert, easy-rsa, certtool, trustme), each with a good variant and broken
ones, through interception, pinning with pins from `lookout pin`, upstream mTLS with the tools'
client certificates, and `lookout verify`; and the same decisions as headless Chromium trusting
the same CA from an NSS database."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import socket
from pathlib import Path

import pytest

import origins
import tool_chains
from conftest import curl, free_port, raw_exchange, request_bytes
from tool_chains import EXPECTED_REASON, VARIANTS

NEEDED = {"mkcert": "mkcert", "certtool": "gnutls-bin", "/usr/share/easy-rsa/easyrsa": "easy-rsa"}


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    for program, package in NEEDED.items():
        if not (shutil.which(program) or Path(program).exists()):
            pytest.fail(f"{program} is needed (make deps installs Debian's {package})")
    pytest.importorskip("trustme", reason="make deps installs trustme")
    return tool_chains.make_all(tmp_path_factory.mktemp("tool-chains"))


@pytest.fixture(scope="module")
def served(tools):
    """An HTTPS origin on 127.0.0.1 for every tool's every variant."""
    running = {}
    for name, pki in tools.items():
        for variant, chain in pki.variants.items():
            running[(name, variant)] = origins.HTTPOrigin(tls=(chain.fullchain, chain.key)).start()
    yield running
    for origin in running.values():
        origin.stop()


def verify(lookout_bin, *args):
    done = subprocess.run([str(lookout_bin), "verify", *map(str, args)], capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout.strip()


def test_lookout_verify_decides_each_chain_under_rfc5280(lookout_bin, tools):
    for name, pki in tools.items():
        for variant in VARIANTS:
            chain = pki.variants[variant]
            rc, out = verify(lookout_bin, "--chain", chain.fullchain, "--roots", chain.anchor, "--host", "localhost")
            reason = EXPECTED_REASON[variant]
            if reason is None:
                assert rc == 0 and out.endswith("profile rfc5280"), (name, variant, out)
            else:
                assert rc == 1 and out.startswith(f"invalid: {reason}: ") and out.endswith("(profile rfc5280)"), \
                    (name, variant, out)
    # The Web PKI profile, asked for, still refuses a CA without keyUsage.
    defaults = tools["openssl-req-defaults"].variants["good"]
    rc, out = verify(lookout_bin, "--chain", defaults.fullchain, "--roots", defaults.anchor, "--host", "localhost",
                     "--profile", "webpki")
    assert rc == 1 and "key usage" in out and out.endswith("(profile webpki)"), out


def intercepting(make_proxy, anchor: Path, ports: list[int], **rule):
    return make_proxy({"interception": {"hosts": ["localhost"]}, "connect": {"allowed_ports": ports},
                       "trust": {"rules": [{"hosts": ["localhost"], "ca_files": [str(anchor)], **rule}]}})


def test_interception_accepts_exactly_the_good_chains(make_proxy, tools, served):
    for name, pki in tools.items():
        by_anchor: dict[Path, list[str]] = {}
        for variant, chain in pki.variants.items():
            by_anchor.setdefault(chain.anchor, []).append(variant)
        for anchor, variants in by_anchor.items():
            proxy = intercepting(make_proxy, anchor, [served[(name, v)].port for v in variants])
            for variant in variants:
                port = served[(name, variant)].port
                r = curl(proxy, f"https://localhost:{port}/fixed/16", "--cacert", str(proxy.workdir / "state" / "ca.pem"))
                summary = proxy.summaries(where=lambda rec, p=port: rec.get("url", "").startswith(f"https://localhost:{p}/"),
                                          expected=1)[0]
                trust = summary["upstream"]["tls"]["trust"] if summary.get("upstream", {}).get("tls") else None
                reason = EXPECTED_REASON[variant]
                if reason is None:
                    assert r.status == 200, (name, variant, r)
                    assert trust["result"] == "passed" and trust["profile"] == "rfc5280", (name, variant, trust)
                else:
                    assert r.status == 502 and r.header("X-Lookout-Error") == "server_trust_evaluation_failed", \
                        (name, variant, r)
                    assert summary["error"]["code"] == "server_trust_evaluation_failed", summary
                    assert trust["reason"] == reason and trust["profile"] == "rfc5280", (name, variant, trust)


def pins_from_lookout_pin(lookout_bin, certificate: Path) -> list[str]:
    done = subprocess.run([str(lookout_bin), "pin", "--cert", str(certificate)], capture_output=True, text=True,
                          timeout=30, check=True)
    return re.findall(r"pin:\s+(sha256/\S+)", done.stdout)[:1]


def test_pinning_on_each_tools_chain(make_proxy, lookout_bin, tools, served):
    other = pins_from_lookout_pin(lookout_bin, tools["trustme"].variants["good"].fullchain)
    for name, pki in tools.items():
        good = pki.variants["good"]
        port = served[(name, "good")].port
        pins = pins_from_lookout_pin(lookout_bin, good.fullchain)
        for given, status in ((pins, 200), (other if name != "trustme" else
                                             pins_from_lookout_pin(lookout_bin, tools["mkcert"].variants["good"].fullchain), 502)):
            proxy = intercepting(make_proxy, good.anchor, [port], evaluators=["default", "public-keys"], pins=given)
            r = curl(proxy, f"https://localhost:{port}/fixed/16", "--cacert", str(proxy.workdir / "state" / "ca.pem"))
            assert r.status == status, (name, given, r)
            trust = proxy.only_summary(kind="intercepted")["upstream"]["tls"]["trust"]
            assert trust["profile"] == "rfc5280" and trust["evaluator"] == "composite(default, public-keys)", trust
            if status == 502:
                assert trust["reason"] == "pin_mismatch", (name, trust)


@pytest.fixture
def mtls_origin():
    """`openssl s_server` requiring a client certificate from a given CA, serving a given chain."""
    started = []

    def start(chain: tool_chains.ServerChain, client_ca: Path) -> int:
        port = free_port()
        proc = subprocess.Popen(
            ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", str(chain.fullchain), "-key", str(chain.key),
             "-Verify", "1", "-CAfile", str(client_ca), "-verify_return_error", "-www", "-quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.05)
        raise AssertionError("openssl s_server did not start")

    yield start
    for proc in started:
        proc.kill()
        proc.wait(5)


def test_upstream_mtls_with_each_tools_client_certificate(make_proxy, tools, mtls_origin):
    with_clients = {name: pki for name, pki in tools.items() if pki.client}
    assert set(with_clients) >= {"openssl-req-defaults", "mkcert", "easy-rsa", "certtool", "trustme"}
    for name, pki in with_clients.items():
        port = mtls_origin(pki.variants["good"], pki.ca)
        certificate, key = pki.client
        key.chmod(0o600)
        proxy = make_proxy({"trust": {"rules": [{"hosts": ["localhost"], "ca_files": [str(pki.ca)],
                                                 "client_certificate": str(certificate), "client_key": str(key)}]}})
        resp = raw_exchange(proxy.port, request_bytes("GET", f"https://localhost:{port}/", [("Connection", "close")]))[0]
        assert resp.status == 200, (name, resp.body[:300])
        tls = proxy.only_summary()["upstream"]["tls"]
        assert tls["client_certificate"] is not None and tls["trust"]["profile"] == "rfc5280", (name, tls)


# Where Chromium and Lookout's default for ca_files would decide differently, and why. Empty: they agree.
DISAGREEMENTS: dict[tuple[str, str], str] = {}


def test_chromium_decides_every_chain_as_lookout_does(lookout_bin, tools, served, tmp_path):
    from browser import start_chromium, trusting_home

    seen = {}
    for name, pki in tools.items():
        by_anchor: dict[Path, list[str]] = {}
        for variant, chain in pki.variants.items():
            by_anchor.setdefault(chain.anchor, []).append(variant)
        for index, (anchor, variants) in enumerate(by_anchor.items()):
            home = trusting_home(tmp_path / f"home-{name}-{index}", anchor)
            driver = start_chromium(tmp_path / "downloads", home=home)
            try:
                for variant in variants:
                    driver.get(f"https://localhost:{served[(name, variant)].port}/fixed/16")
                    text = driver.execute_script("return document.body ? document.body.innerText : ''")
                    chromium = "not private" not in text and "ERR_CERT" not in text
                    chain = pki.variants[variant]
                    rc, _ = verify(lookout_bin, "--chain", chain.fullchain, "--roots", anchor, "--host", "localhost")
                    seen[(name, variant)] = (chromium, rc == 0)
            finally:
                driver.quit()
    differing = {key: value for key, value in seen.items() if value[0] != value[1]}
    assert set(differing) == set(DISAGREEMENTS), {k: f"Chromium {'accepts' if v[0] else 'refuses'}" for k, v in differing.items()}
    assert sum(chromium for chromium, _ in seen.values()) == len(tools), seen  # each tool's good chain, no other


def test_config_errors_for_anchors_and_pins(lookout_bin, tools, tmp_path):
    def check(text: str):
        path = tmp_path / "lookout.yaml"
        path.write_text(text)
        return subprocess.run([str(lookout_bin), "config", "check", str(path)], capture_output=True, text=True, timeout=20)

    leaf = tools["openssl-ca"].variants["good"].fullchain
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    done = check(f'trust:\n  rules:\n    - hosts: ["localhost"]\n      ca_files: ["{leaf}"]\n')
    assert done.returncode == 1 and f"{leaf}" in done.stderr and "not a CA certificate" in done.stderr, done.stderr
    assert "trust.rules[0].ca_files[0]" in done.stderr, done.stderr
    done = check(f'trust:\n  ca_files: ["{empty}"]\n')
    assert done.returncode == 1 and "trust.ca_files[0]" in done.stderr and str(empty) in done.stderr, done.stderr
    done = check('trust:\n  rules:\n    - hosts: ["localhost"]\n      pins: ["sha256/not base64!"]\n')
    assert done.returncode == 1 and "trust.rules[0].pins[0]" in done.stderr, done.stderr
    done = check('trust:\n  profile: browser\n')
    assert done.returncode == 1 and "trust.profile" in done.stderr and "webpki or rfc5280" in done.stderr, done.stderr
    done = check('trust:\n  rules:\n    - hosts: ["localhost"]\n      evaluators: [public-keys]\n'
                 '      pins: ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]\n      profile: webpki\n')
    assert done.returncode == 1 and "trust.rules[0].profile" in done.stderr, done.stderr
    # The defaults' CA, listed as users list it, is a CA and passes.
    done = check(f'trust:\n  profile: rfc5280\n  ca_files: ["{tools["openssl-req-defaults"].ca}"]\n')
    assert done.returncode == 0, done.stderr


def test_a_rule_profile_overrides_the_default(make_proxy, tools, served):
    """`profile: webpki` on a rule holds a ca_files chain to the Web PKI profile: the defaults' CA has no keyUsage."""
    good = tools["openssl-req-defaults"].variants["good"]
    port = served[("openssl-req-defaults", "good")].port
    proxy = intercepting(make_proxy, good.anchor, [port], profile="webpki")
    r = curl(proxy, f"https://localhost:{port}/fixed/16", "--cacert", str(proxy.workdir / "state" / "ca.pem"))
    assert r.status == 502 and r.header("X-Lookout-Error") == "server_trust_evaluation_failed", r
    trust = proxy.only_summary(kind="intercepted")["upstream"]["tls"]["trust"]
    assert trust["profile"] == "webpki" and "key usage" in trust["message"], trust
