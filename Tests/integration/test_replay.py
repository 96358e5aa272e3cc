"""`lookout replay RECORDING`: each recorded request sent again through Lookout's upstream side
(the config's trust rules and pins apply), with its captured body, into a new log; `--expect`
compares each answer with the recorded one and exits 1 naming what differs."""

from __future__ import annotations

import json
import subprocess

from conftest import client_env, curl, py_request
from origins import ScriptedOrigin
from test_tls_intercept import intercepting


def replay(binary, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "replay", *args], capture_output=True, text=True, timeout=120, env=client_env())


def test_replay_against_the_same_and_a_changed_origin(make_proxy, tmp_path, lookout_bin):
    with ScriptedOrigin() as site:
        site.route("/v", (200, {"Content-Type": "application/json"}, b'{"version": 1}'))
        site.route("/echo", lambda req: (200, {"Content-Type": "text/plain"}, f"got {req.body_length} bytes".encode()))
        proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]},
                            "log": {"include_headers": True}})
        curl(proxy, site.url("/v"))
        py_request(proxy, "POST", site.url("/echo"), body=b"x" * 5000, headers={"X-Token": "t"})
        proxy.summaries(2, kind="http")
        proxy.stop()
        log = str(proxy.log_path)
        before = len(site.received)
        same = replay(lookout_bin, log, "--expect", "same-body", "--log", str(tmp_path / "again.jsonl"))
        assert same.returncode == 0, same.stdout + same.stderr
        assert same.stdout.strip().endswith("2 replayed, 0 not as recorded")
        # Sent concurrently (--concurrency 4): in either order.
        sent = sorted(site.received[before:], key=lambda r: r.method)
        assert [r.method for r in sent] == ["GET", "POST"] and sent[1].body_length == 5000
        assert sent[1].header("X-Token") == "t", "the recorded fields go again"
        again = [json.loads(line) for line in open(tmp_path / "again.jsonl") if '"event":"exchange"' in line]
        assert len(again) == 2 and {r["status"] for r in again} == {200}
        filtered = replay(lookout_bin, log, "--filter", "method:POST", "--expect", "same-status")
        assert filtered.returncode == 0 and "1 replayed" in filtered.stdout
        site.route("/v", (503, {"Content-Type": "application/json"}, b'{"version": 2}'))
        site.route("/echo", (200, {"Content-Type": "text/plain"}, b"something else"))
        changed = replay(lookout_bin, log, "--expect", "same-body")
        assert changed.returncode == 1
        assert f"GET {site.url('/v')}: status 200 → 503" in changed.stdout
        assert f"POST {site.url('/echo')}: body:" in changed.stdout
    bad = replay(lookout_bin, log, "--expect", "same-color")
    assert bad.returncode != 0 and "--expect must be" in bad.stderr


def test_trust_rules_apply_to_replayed_requests(make_proxy, tmp_path, pki, lookout_bin):
    import origins
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        proxy = make_proxy(intercepting(pki, origin, capture={"path": str(tmp_path / "cap"), "rules": [{"hosts": ["**"]}]}))
        from test_tls_intercept import ca_file
        assert curl(proxy, origin.url("/fixed/10"), "--cacert", ca_file(proxy)).status == 200
        proxy.summaries(1, kind="intercepted")
        proxy.stop()
        trusting = tmp_path / "trusting.yaml"
        trusting.write_text(f'trust:\n  system_roots: false\n  ca_files: ["{pki.root.cert}"]\n')
        ok = replay(lookout_bin, str(proxy.log_path), "--config", str(trusting), "--expect", "same-body")
        assert ok.returncode == 0, ok.stdout + ok.stderr
        pinned = tmp_path / "pinned.yaml"
        pinned.write_text(f'trust:\n  system_roots: false\n  ca_files: ["{pki.root.cert}"]\n  rules:\n'
                          f'    - hosts: ["**"]\n      pins: ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]\n')
        mismatch = replay(lookout_bin, str(proxy.log_path), "--config", str(pinned), "--expect", "same-status")
        assert mismatch.returncode == 1 and "server_trust_evaluation_failed" in mismatch.stdout, mismatch.stdout
    finally:
        origin.stop()
