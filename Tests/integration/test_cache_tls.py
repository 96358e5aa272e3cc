"""The cache with TLS: intercepted HTTPS responses are stored under their https URLs, and every
upstream connection the cache still makes (a revalidation) is judged by the host's trust rule."""

from __future__ import annotations

import pytest

from conftest import curl
from origins import ScriptedOrigin
from test_cache import lookout_cache

WRONG_PIN = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="


def intercepting_cache(pki, origin, store, **trust):
    return {
        "connect": {"allowed_ports": [origin.port]},
        "interception": {"hosts": ["**"]},
        "trust": {"system_roots": False, "ca_files": [str(pki.root.cert)], **trust},
        "cache": {"enabled": True, "path": str(store)},
    }


@pytest.fixture
def tls_site(pki):
    with ScriptedOrigin(host="localhost", tls=pki.good.tls) as o:
        yield o


def test_intercepted_responses_are_cached_under_https_urls(make_proxy, pki, tls_site, tmp_path):
    tls_site.route("/i", (200, {"Cache-Control": "max-age=60"}, b"secret page"))
    proxy = make_proxy(intercepting_cache(pki, tls_site, tmp_path / "store"))
    ca = str(proxy.workdir / "state" / "ca.pem")
    first = curl(proxy, tls_site.url("/i"), "--cacert", ca)
    second = curl(proxy, tls_site.url("/i"), "--cacert", ca)
    assert first.body == second.body == b"secret page"
    assert second.header("Cache-Status").startswith("Lookout; hit"), second.headers
    assert len(tls_site.requests_for("/i")) == 1
    miss, hit = proxy.summaries(2, kind="intercepted")
    assert miss["url"] == hit["url"] == tls_site.url("/i") and hit["cache"]["status"] == "hit"
    assert miss["upstream"]["tls"]["trust"]["result"] == "passed"
    rc, out, _ = lookout_cache(proxy, "list", "--proxy", f"127.0.0.1:{proxy.port}")
    assert out.split("\t")[2].strip() == tls_site.url("/i"), out


def test_a_revalidation_is_judged_by_the_trust_rule(make_proxy, pki, tls_site, tmp_path):
    store = tmp_path / "store"
    tls_site.route("/fresh", (200, {"Cache-Control": "max-age=600"}, b"fresh"))
    tls_site.route("/stale", (200, {"Cache-Control": "max-age=0, stale-if-error=600", "ETag": '"s"'}, b"stale"))
    first = make_proxy(intercepting_cache(pki, tls_site, store))
    ca = str(first.workdir / "state" / "ca.pem")
    for path in ("/fresh", "/stale"):
        assert curl(first, tls_site.url(path), "--cacert", ca).status == 200
    first.stop()
    # Now the host is pinned to a key it does not have.
    pinned = intercepting_cache(pki, tls_site, store, rules=[{"name": "pinned", "hosts": ["localhost"], "pins": [WRONG_PIN]}])
    pinned["state_dir"] = str(first.workdir / "state")  # the same CA, so curl trusts the leaves
    second = make_proxy(pinned)
    # A fresh hit makes no upstream connection: nothing to judge.
    r = curl(second, tls_site.url("/fresh"), "--cacert", ca)
    assert (r.status, r.body) == (200, b"fresh") and r.header("Cache-Status").startswith("Lookout; hit")
    # A revalidation connects, is refused by the pin, and the stale copy does not stand in for it.
    r = curl(second, tls_site.url("/stale"), "--cacert", ca)
    assert r.status == 502 and b"server_trust_evaluation_failed" in r.body, (r.status, r.body)
    rec = [s for s in second.summaries(2) if s["url"] == tls_site.url("/stale")][0]
    assert rec["error"]["code"] == "server_trust_evaluation_failed", rec
    assert len(tls_site.requests_for("/stale")) == 1
