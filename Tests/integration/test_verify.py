"""`lookout verify`: a chain judged exactly as a trust rule's `default` evaluator judges it —
OpenSSL's RFC 5280 path validation plus the Web PKI profile it does not check — on chains made
with the openssl CLI, and over the public x509-limbo suite when its `limbo.json` is present."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from tls_pki import LEAF_EXTENSIONS, PKI

REPO = Path(__file__).resolve().parents[2]
LIMBO = Path(os.environ.get("LIMBO_JSON", REPO / ".build" / "x509-limbo" / "limbo.json"))


def verify(lookout_bin, chain, host, *extra):
    p = subprocess.run([str(lookout_bin), "verify", "--chain", str(chain), "--host", host, *map(str, extra)],
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    pki = PKI(tmp_path_factory.mktemp("verify-pki"))
    ca = pki.intermediate
    no_eku = LEAF_EXTENSIONS.replace("extendedKeyUsage = serverAuth\n", "")
    bad = {
        "no-eku": ca.issue("no-eku", extensions=no_eku),
        "any-eku": ca.issue("any-eku", extensions=no_eku + "extendedKeyUsage = serverAuth, anyExtendedKeyUsage\n"),
        "ca-leaf": ca.issue("ca-leaf", extensions=LEAF_EXTENSIONS.replace("CA:FALSE", "CA:TRUE")),
        "cn-not-in-san": ca.issue("cn-not-in-san", common_name="other.example", san="DNS:localhost"),
        "public-suffix-wildcard": ca.issue("psl", common_name="*.co.uk", san="DNS:*.co.uk"),
    }
    return pki, bad


def test_a_good_chain_is_valid_and_each_fault_has_its_reason(lookout_bin, chains):
    pki, _ = chains
    root = pki.root.cert
    assert verify(lookout_bin, pki.good.fullchain, "localhost", "--roots", root)[0] == 0
    assert verify(lookout_bin, pki.good.fullchain, "127.0.0.1", "--roots", root)[0] == 0
    cases = [
        (pki.expired.fullchain, "localhost", "expired"),
        (pki.not_yet_valid.fullchain, "localhost", "not_yet_valid"),
        (pki.good.fullchain, "other.example", "hostname_mismatch"),
        (pki.other_root_leaf.fullchain, "localhost", "untrusted_root"),
        (pki.good.cert, "localhost", "untrusted_root"),  # the intermediate missing
    ]
    for chain, host, reason in cases:
        rc, out, _ = verify(lookout_bin, chain, host, "--roots", root)
        assert rc == 1 and out.startswith(f"invalid: {reason}: "), (chain, out)
    # --time: judged at another moment, the good chain has expired.
    rc, out, _ = verify(lookout_bin, pki.good.fullchain, "localhost", "--roots", root, "--time", "2099-01-01T00:00:00Z")
    assert rc == 1 and out.startswith("invalid: expired: "), out
    # The system bundle by default: the test root is not in it.
    rc, out, _ = verify(lookout_bin, pki.good.fullchain, "localhost")
    assert rc == 1 and out.startswith("invalid: untrusted_root"), out
    # A self-signed server certificate added as an anchor is trusted as it is.
    assert verify(lookout_bin, pki.self_signed.cert, "localhost", "--roots", pki.self_signed.cert)[0] == 0


def test_the_web_pki_profile_beyond_openssl(lookout_bin, chains):
    """Under --profile webpki (the default for system-bundle roots) the Baseline Requirements apply."""
    pki, bad = chains
    expected = {
        "no-eku": ("invalid_chain", "no extendedKeyUsage"),
        "any-eku": ("invalid_chain", "anyExtendedKeyUsage"),
        "ca-leaf": ("invalid_chain", "the leaf is a CA certificate"),
        "cn-not-in-san": ("invalid_chain", "commonName \"other.example\""),
        "public-suffix-wildcard": ("hostname_mismatch", "public suffix"),
    }
    for name, (reason, words) in expected.items():
        host = "example.co.uk" if name == "public-suffix-wildcard" else "localhost"
        rc, out, _ = verify(lookout_bin, bad[name].fullchain, host, "--roots", pki.root.cert, "--profile", "webpki")
        assert rc == 1 and out.startswith(f"invalid: {reason}: ") and words in out, (name, out)
        assert out.endswith("(profile webpki)"), out


def test_roots_a_user_adds_are_judged_under_rfc5280(lookout_bin, chains):
    """--roots is judged like ca_files: RFC 5280 without the BR's own rules, as browsers judge a
    root a user installed; the verdict names the profile that decided."""
    pki, bad = chains
    for name in ("no-eku", "cn-not-in-san"):
        rc, out, _ = verify(lookout_bin, bad[name].fullchain, "localhost", "--roots", pki.root.cert)
        assert rc == 0 and out.endswith("profile rfc5280"), (name, out)
    # A CA leaf and a wildcard over a public suffix stay refused under either profile.
    rc, out, _ = verify(lookout_bin, bad["public-suffix-wildcard"].fullchain, "example.co.uk", "--roots", pki.root.cert)
    assert rc == 1 and out.startswith("invalid: hostname_mismatch: ") and out.endswith("(profile rfc5280)"), out
    # The system bundle's chains are judged under webpki unless told otherwise.
    rc, out, _ = verify(lookout_bin, pki.good.fullchain, "localhost")
    assert rc == 1 and out.endswith("(profile webpki)"), out
    rc, out, _ = verify(lookout_bin, pki.good.fullchain, "localhost", "--roots", pki.root.cert, "--profile", "webpki")
    assert rc == 0 and out.endswith("profile webpki"), out
    rc, _, err = verify(lookout_bin, pki.good.fullchain, "localhost", "--profile", "browser")
    assert rc != 0 and "--profile" in err, err


def test_bad_arguments(lookout_bin, chains, tmp_path):
    pki, _ = chains
    rc, _, err = verify(lookout_bin, tmp_path / "missing.pem", "localhost")
    assert rc == 2 and "missing.pem" in err, err
    (tmp_path / "junk.pem").write_text("not a certificate")
    assert verify(lookout_bin, tmp_path / "junk.pem", "localhost")[0] == 2
    rc, _, err = verify(lookout_bin, pki.good.fullchain, "localhost", "--time", "yesterday")
    assert rc != 0 and "--time" in err, err
    rc, _, err = verify(lookout_bin, pki.good.fullchain, "localhost", "--purpose", "client")
    assert rc != 0 and "--purpose" in err, err


# The rejections x509-limbo does not expect that remain, each with its reason. Any other is a failure.
EXPLAINED_REJECTIONS = {
    # The suite contradicts itself: rfc5280::aki::cross-signed-root-missing-aki expects a trusted
    # certificate issued by another CA and lacking authorityKeyIdentifier to be refused (RFC 5280
    # §4.2.1.1), and this case's trusted "Root A" is exactly that. Lookout refuses both.
    "cve::cve-2024-0567": "trust anchor issued by another CA without authorityKeyIdentifier",
    # A CA certificate in the leaf's place whose keyUsage allows only keyCertSign and cRLSign:
    # path validation alone accepts it, but it cannot sign a TLS handshake (RFC 8446 §4.4.3 with
    # RFC 5280 §4.2.1.3), so OpenSSL's TLS-server purpose check refuses it, as a live connection must.
    "pathlen::validation-ignores-pathlen-in-leaf": "CA leaf whose keyUsage cannot sign a handshake",
    "rfc5280::ca-as-leaf": "CA leaf whose keyUsage cannot sign a handshake",
    # BR §7.1.4.3: a commonName must be one of the subjectAltNames as written. The suite's
    # webpki::cn::* cases expect that rule (nine refusals); these three were built with the suite's
    # default commonName example.com beside other names, and expect it ignored.
    "webpki::nc::nc-permits-dns-san-pattern": "commonName example.com is not one of the subjectAltNames",
    "webpki::san::exact-localhost-ip-san": "commonName example.com is not one of the subjectAltNames",
    "webpki::san::leftmost-wildcard-san": "commonName example.com is not one of the subjectAltNames",
}


# Acceptances x509-limbo does not expect, each where the browsers the rfc5280 profile follows accept
# the same: a root a user installed whose basicConstraints is not critical is what easy-rsa makes,
# and Chromium accepts its chains (test_trust_tools.py checks that agreement).
EXPLAINED_ACCEPTANCES = {
    "rfc5280::root-non-critical-basic-constraints": "trust anchor with non-critical basicConstraints (easy-rsa's CA)",
}


def limbo_verdict(lookout_bin, case, folder: Path):
    """(verdict, detail): SKIPPED for what the default evaluator does not judge, else the match."""
    if case["validation_kind"] != "SERVER":
        return "SKIPPED", "client validation"
    for key, why in (("signature_algorithms", "signature algorithms"), ("key_usage", "key usages"),
                     ("expected_peer_names", "several peer names"), ("crls", "CRLs (the revocation evaluator's)")):
        if case.get(key):
            return "SKIPPED", why
    if case.get("max_chain_depth") is not None:
        return "SKIPPED", "a chain depth limit"
    if (case.get("extended_key_usage") or ["serverAuth"]) != ["serverAuth"]:
        return "SKIPPED", "a purpose other than server"
    name = case.get("expected_peer_name")
    if not name or name["kind"] not in ("DNS", "IP"):
        return "SKIPPED", "no DNS or IP peer name"
    (folder / "chain.pem").write_text(case["peer_certificate"] + "".join(case["untrusted_intermediates"]))
    (folder / "roots.pem").write_text("".join(case["trusted_certs"]))
    # The harness picks the profile per testcase: the Web PKI's own cases under webpki, the rest
    # (RFC 5280's, pathbuilding, online chains) under rfc5280, as a browser judges a user's roots.
    profile = "webpki" if case["id"].startswith("webpki::") else "rfc5280"
    extra = ["--roots", folder / "roots.pem", "--profile", profile]
    extra += ["--time", case["validation_time"]] if case.get("validation_time") else []
    rc, out, err = verify(lookout_bin, folder / "chain.pem", name["value"], *extra)
    assert rc in (0, 1), (case["id"], err)
    accepted = rc == 0
    if accepted == (case["expected_result"] == "SUCCESS"):
        return "passed", out
    return ("UNEXPECTED ACCEPTANCE" if accepted else "failed"), out


def test_x509_limbo(lookout_bin, tmp_path):
    if not LIMBO.exists():
        pytest.skip(f"x509-limbo: no limbo.json at {LIMBO} (`make deps` fetches it when the network allows; "
                    "or set LIMBO_JSON)")
    cases = json.loads(LIMBO.read_text())["testcases"]
    counts, lines = collections.Counter(), []
    for case in cases:
        with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
            verdict, detail = limbo_verdict(lookout_bin, case, Path(folder))
        counts[verdict] += 1
        lines.append(f"{verdict}\t{case['id']}\t{detail}")
    report = REPO / ".build" / "test-results" / "x509-limbo.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    report.write_text(f"{len(cases)} cases from {LIMBO}: {summary}\n" + "\n".join(sorted(lines)) + "\n")
    print(f"x509-limbo: {summary} (report: {report})")
    unexpected = [line for line in lines if line.startswith("UNEXPECTED")
                  and line.split("\t")[1] not in EXPLAINED_ACCEPTANCES]
    assert not unexpected, "\n".join(unexpected)
    unexplained = [line for line in lines if line.startswith("failed") and line.split("\t")[1] not in EXPLAINED_REJECTIONS]
    assert not unexplained, "\n".join(unexplained)
    assert counts["passed"] >= 170, summary
