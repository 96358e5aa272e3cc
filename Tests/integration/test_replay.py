"""`lookout replay RECORDING`: each recorded request sent again through Lookout's upstream side
(the config's trust rules and pins apply), with its captured body, into a new log; `--expect`
compares each answer with the recorded one and exits 1 naming what differs."""

from __future__ import annotations

import json
import subprocess
import time

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
        # Sent in the recorded order: the POST started after the GET had ended.
        sent = site.received[before:]
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


class StatefulSite:
    """A counter, and a login whose session id changes with every login: state a replay must
    meet in the recorded order. ``reset()`` makes it a fresh origin of the same state."""

    def __init__(self, site):
        self.site = site
        self.reset()
        site.route("/counter", self.counter)
        site.route("/login", self.login)
        site.route("/me", self.me)
        site.route("/page", lambda req: (200, {"Content-Type": "text/plain"}, req.target.split(b"?")[1] if b"?" in req.target else b""))

    def reset(self):
        self.count, self.logins, self.session = 0, 0, None

    def counter(self, req):
        self.count += 1
        return 200, {"Content-Type": "text/plain"}, str(self.count).encode()

    def login(self, req):
        self.logins += 1
        self.session = f"s{self.logins}-{id(self)}-{time.monotonic_ns()}"
        return 200, {"Set-Cookie": f"sid={self.session}; Path=/; HttpOnly", "Content-Type": "text/plain"}, b"welcome"

    def me(self, req):
        cookie = req.header("Cookie") or ""
        if self.session and f"sid={self.session}" in cookie:
            return 200, {"Content-Type": "text/plain"}, b"alice"
        return 401, {"Content-Type": "text/plain"}, b"who are you?"


def record_session(make_proxy, tmp_path, site, steps) -> str:
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]},
                        "log": {"include_headers": True, "reveal_secrets": True}})
    jar = tmp_path / "curl-cookies.txt"
    for method, path in steps:
        args = ["-c", str(jar), "-b", str(jar)] + (["-X", "POST", "-d", "user=alice"] if method == "POST" else [])
        assert curl(proxy, site.url(path), *args).status == 200
    proxy.summaries(len(steps), kind="http")
    proxy.stop()
    return str(proxy.log_path)


def test_a_stateful_session_replays_as_recorded_every_time(make_proxy, tmp_path, lookout_bin):
    steps = [("GET", "/counter"), ("GET", "/page?1"), ("GET", "/counter"), ("GET", "/page?2"), ("POST", "/login"),
             ("GET", "/me"), ("GET", "/counter"), ("GET", "/page?3")]
    with ScriptedOrigin() as site:
        state = StatefulSite(site)
        log = record_session(make_proxy, tmp_path, site, steps)
        reports = set()
        for run in range(20):
            state.reset()
            before = len(site.received)
            done = replay(lookout_bin, log, "--expect", "same-body", "--session")
            assert done.returncode == 0, (run, done.stdout + done.stderr)
            reports.add(done.stdout)
            got = [(r.method, r.target.decode()) for r in site.received[before:]]
            assert got == steps, (run, got)
        assert len(reports) == 1, reports
        assert reports.pop().strip().endswith("8 replayed, 0 not as recorded")
        # Without --session the recorded Cookie goes as recorded, and the fresh login's new id is not in it.
        state.reset()
        before = len(site.received)
        plain = replay(lookout_bin, log, "--expect", "same-body")
        assert plain.returncode == 1 and f"#5 GET {site.url('/me')}: status 200 → 401" in plain.stdout, plain.stdout
        me = [r for r in site.received[before:] if r.target == b"/me"][0]
        assert me.header("Cookie").startswith("sid=s1-"), me.headers
        # --order none drops the order: still every request, each once, in the recorded order of start
        # when one is in flight at a time.
        state.reset()
        before = len(site.received)
        loose = replay(lookout_bin, log, "--order", "none", "--concurrency", "1", "--session", "--expect", "same-body")
        assert loose.returncode == 0, loose.stdout + loose.stderr
        assert [(r.method, r.target.decode()) for r in site.received[before:]] == steps


def har(entries) -> dict:
    return {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}


def har_entry(url, started=None, time_ms=10.0, connection=None, version="HTTP/1.1"):
    entry = {"time": time_ms, "request": {"method": "GET", "url": url, "httpVersion": version, "headers": []},
             "response": {"status": 200, "httpVersion": version, "headers": [], "content": {"size": 0, "text": ""}},
             "timings": {"send": 0, "wait": time_ms, "receive": 0}}
    if started:
        entry["startedDateTime"] = started
    if connection:
        entry["connection"] = connection
    return entry


def test_a_har_is_replayed_in_the_order_of_its_times(tmp_path, lookout_bin):
    with ScriptedOrigin() as site:
        state = StatefulSite(site)
        # Listed out of order: the times decide. The second and third overlapped, so they may overlap again.
        entries = [har_entry(site.url("/page?3"), "2026-01-01T00:00:02.000Z"),
                   har_entry(site.url("/page?1"), "2026-01-01T00:00:00.000Z", 100),
                   har_entry(site.url("/page?2"), "2026-01-01T00:00:00.050Z", 100)]
        path = tmp_path / "rec.har"
        path.write_text(json.dumps(har(entries)))
        done = replay(lookout_bin, str(path), "--expect", "same-status")
        assert done.returncode == 0, done.stdout + done.stderr
        got = [r.target.decode() for r in site.received]
        assert got[-1] == "/page?3" and sorted(got[:2]) == ["/page?1", "/page?2"], got
        assert state.count == 0


def test_recordings_that_cannot_be_ordered_are_refused_before_anything_is_sent(tmp_path, lookout_bin, make_proxy):
    with ScriptedOrigin() as site:
        StatefulSite(site)
        untimed = tmp_path / "untimed.har"
        untimed.write_text(json.dumps(har([har_entry(site.url("/page?1"), "2026-01-01T00:00:00Z"),
                                           har_entry(site.url("/page?2"))])))
        done = replay(lookout_bin, str(untimed))
        assert done.returncode == 2 and "entry 1" in done.stderr and "no start time" in done.stderr, done.stderr
        overlapping = tmp_path / "overlapping.har"
        overlapping.write_text(json.dumps(har([har_entry(site.url("/page?1"), "2026-01-01T00:00:00.000Z", 500, "7"),
                                               har_entry(site.url("/page?2"), "2026-01-01T00:00:00.100Z", 10, "7")])))
        done = replay(lookout_bin, str(overlapping))
        assert done.returncode == 2 and "entry 1" in done.stderr and "overlaps entry 0 on connection 7" in done.stderr, done.stderr
        good = tmp_path / "good.har"
        good.write_text(json.dumps(har([har_entry(site.url("/page?1"), "2026-01-01T00:00:00Z")])))
        done = replay(lookout_bin, str(good), "--concurrency", "0")
        assert done.returncode == 2 and "--concurrency must be at least 1" in done.stderr, done.stderr
        broken = tmp_path / "broken.har"
        broken.write_text('{"log": {"entries": [')
        done = replay(lookout_bin, str(broken))
        assert done.returncode == 2 and "broken.har" in done.stderr, done.stderr
        assert site.received == [], "nothing is sent for a recording that cannot be replayed"


def test_hars_from_browsers_replay_with_their_connection_fields(tmp_path, lookout_bin):
    """Chromium names HTTP/2 "h2" and writes one socket id for a connection's overlapping streams;
    Firefox writes the server's port as `connection`, shared by its parallel HTTP/1.1 connections.
    Neither is a recording with overlapping exchanges on one HTTP/1.x connection."""
    with ScriptedOrigin() as site:
        StatefulSite(site)
        port = site.url("/").split(":")[2].split("/")[0]
        for name, version, connection in (("chromium", "h2", "348"), ("firefox", "HTTP/1.1", port)):
            path = tmp_path / f"{name}.har"
            path.write_text(json.dumps(har([
                har_entry(site.url("/page?1"), "2026-01-01T00:00:00.000+01:00", 500, connection, version),
                har_entry(site.url("/page?2"), "2026-01-01T00:00:00.100+01:00", 10, connection, version)])))
            before = len(site.received)
            done = replay(lookout_bin, str(path), "--expect", "same-status")
            assert done.returncode == 0, (name, done.stdout + done.stderr)
            assert len(site.received) - before == 2
