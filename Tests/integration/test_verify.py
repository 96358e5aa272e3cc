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
        rc, out, _ = verify(lookout_bin, bad[name].fullchain, host, "--roots", pki.root.cert)
        assert rc == 1 and out.startswith(f"invalid: {reason}: ") and words in out, (name, out)


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
    extra = ["--roots", folder / "roots.pem"] + (["--time", case["validation_time"]] if case.get("validation_time") else [])
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
    unexpected = [line for line in lines if line.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected)
    assert counts["passed"] >= 150, summary
