"""h2spec 2.0 (RFC 7540/7541 conformance, 146 cases) against Lookout's client-facing HTTP/2
side. h2spec connects straight to a TLS server, so a small relay in front sends CONNECT to
Lookout first and then passes bytes both ways; Lookout intercepts and speaks h2 to h2spec."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import origins
from test_tls_intercept import intercepting

REPO = Path(__file__).resolve().parents[2]


def find_h2spec() -> Path:
    """$LOOKOUT_H2SPEC, the workplace's shared tools beside the repository, or one on PATH."""
    candidates = [os.environ.get("LOOKOUT_H2SPEC"), REPO.parent / "shared" / "tools" / "h2spec",
                  "/work/shared/tools/h2spec", shutil.which("h2spec")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return Path("h2spec")


H2SPEC = find_h2spec()


@pytest.mark.skipif(not H2SPEC.is_file(), reason=f"h2spec not found at {H2SPEC} (set LOOKOUT_H2SPEC)")
def test_h2spec_passes_every_case(make_proxy, pki, tmp_path):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        proxy = make_proxy(intercepting(pki, origin))
        # The relay's port stands in :authority; Lookout compares only the host with the CONNECT's.
        relay = origins.ConnectRelay(proxy.port, "127.0.0.1", origin.port)
        report = tmp_path / "h2spec.xml"
        # A response larger than the default window lets h2spec test a negative window (§6.9.2).
        result = subprocess.run([str(H2SPEC), "-t", "-k", "-h", "127.0.0.1", "-p", str(relay.port),
                                 "-P", "/fixed/100000", "-o", "5", "-j", str(report)],
                                capture_output=True, text=True, timeout=600)
        relay.close()
        out = result.stdout
        print(out[-6000:])
        summary = re.search(r"(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed", out)
        assert summary, out[-3000:]
        total, passed, skipped, failed = map(int, summary.groups())
        assert (passed, failed) == (total, 0), out[-6000:]
        assert proxy.running
    finally:
        origin.stop()
