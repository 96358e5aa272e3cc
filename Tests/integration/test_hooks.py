"""External hooks: a kept command (one JSON call per line in, one reply per line out) or an HTTP
endpoint sees the exchanges its filter matches and lets them go on, changes them, answers or
aborts them. Tested with the shipped example (config/hooks/sign.py), an HTTP hook, and hooks that
hang, crash, reply garbage, or are kept busy past their concurrency and queue bounds."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, curl, py_request, wait_until
from origins import ScriptedOrigin
from test_breakpoints import Background

SIGN = REPO_ROOT / "config" / "hooks" / "sign.py"


def hook(name: str, script: Path | None = None, url: str | None = None, **settings) -> dict:
    entry = {"name": name, **settings}
    if script is not None:
        entry["command"] = ["python3", str(script)]
    else:
        entry["url"] = url
    return entry


def write_hook(tmp_path: Path, name: str, body: str) -> Path:
    """A command hook: `body` handles one `call` (a dict) and returns the reply (a dict)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import base64, json, sys, time, os\n"
                    "def handle(call):\n" + "".join(f"    {line}\n" for line in body.strip().splitlines())
                    + "for line in sys.stdin:\n    print(json.dumps(handle(json.loads(line))), flush=True)\n")
    return path


def runs(proxy, name: str, expected: int = 1) -> list[dict]:
    return proxy.log_records(expected, lambda r: r.get("event") == "hook.didRun" and r["hook"] == name, timeout=10)


def test_the_shipped_example_signs_requests_and_rewrites_json(make_proxy, origin):
    # A cold Python start can take longer than the default 500 ms on a loaded machine; the timeout
    # itself is tested with a hook that hangs.
    proxy = make_proxy({"hooks": [hook("sign-requests", SIGN, filter="method:POST", on=["request"], timeout_ms=5000)]})
    code, _, data = py_request(proxy, "POST", origin.url("/echo?body=1"), body=b'{"order": 7}',
                               headers={"Content-Type": "application/json"})
    echoed = json.loads(data)
    assert code == 200 and json.loads(echoed["body"]) == {"order": 7, "signed": True}
    signature = dict(echoed["headers"])["X-Signature"]
    expected = hmac.new(b"change-me", b"POST " + origin.url("/echo?body=1").encode() + b"\n" + echoed["body"].encode(),
                        hashlib.sha256).hexdigest()
    assert signature == expected
    assert dict(echoed["headers"])["Content-Length"] == str(len(echoed["body"]))
    [run] = runs(proxy, "sign-requests")
    assert run["action"] == "modify" and run["phase"] == "request" and "error" not in run
    assert sorted(run["changes"]) == ["body", "header:x-signature"] and run["ms"] >= 0
    summary = proxy.only_summary(method="POST", kind="http")
    assert summary["modified_by"] == ["hook:sign-requests"]
    assert curl(proxy, origin.url("/echo")).status == 200
    assert len(runs(proxy, "sign-requests")) == 1, "the filter keeps GETs from the hook"


def test_an_http_hook_changes_a_response_and_answers_a_request(make_proxy, origin):
    with ScriptedOrigin() as endpoint:
        def decide(req):
            call = json.loads(req.body)
            if call["phase"] == "request":
                if call["request"]["url"].endswith("/answer-me"):
                    return 200, {"Content-Type": "application/json"}, json.dumps(
                        {"action": "answer", "status": 203, "headers": {"X-By": "hook"}, "body": "from the hook"}).encode()
                return 200, {}, b'{"action": "continue"}'
            response = call["response"]
            assert base64.b64decode(response["body_base64"]) == b"status 404\n"
            return 200, {}, json.dumps({"action": "modify", "status": 200, "headers": {"set": {"X-Fixed": "1"}},
                                        "body": "fixed\n"}).encode()
        endpoint.route("/hook", decide)
        proxy = make_proxy({"hooks": [hook("fixer", url=endpoint.url("/hook"), on=["request", "response"])]})
        fixed = curl(proxy, origin.url("/status/404"))
        assert fixed.status == 200 and fixed.body == b"fixed\n" and fixed.header("X-Fixed") == "1"
        answered = curl(proxy, origin.url("/echo/answer-me"))
        assert answered.status == 203 and answered.body == b"from the hook" and answered.header("X-By") == "hook"
        assert not any(target.endswith("/answer-me") for _, target, _ in origin.requests)
        calls = [json.loads(r.body) for r in endpoint.requests_for("/hook")]
        assert [c["phase"] for c in calls] == ["request", "response", "request"], "the answer is not shown again"
        assert calls[0]["hook"] == "fixer" and calls[0]["request"]["method"] == "GET"
        assert [r["action"] for r in runs(proxy, "fixer", 3)] == ["continue", "modify", "answer"]


def test_a_hook_that_hangs_costs_its_timeout_and_follows_on_failure(make_proxy, origin, tmp_path):
    hang = write_hook(tmp_path, "hang", "time.sleep(60)")
    proxy = make_proxy({"hooks": [hook("slow-open", hang, filter="url~/open", timeout_ms=300),
                                  hook("slow-closed", hang, filter="url~/closed", timeout_ms=300, on_failure="abort")]})
    start = time.monotonic()
    opened = curl(proxy, origin.url("/echo/open"))
    assert opened.status == 200 and time.monotonic() - start < 5
    [run] = runs(proxy, "slow-open")
    assert run["action"] == "continue" and "no reply within 300 ms" in run["error"] and run["ms"] >= 290
    closed = curl(proxy, origin.url("/echo/closed"))
    assert closed.status == 502 and closed.header("X-Lookout-Error") == "hook_failed"
    assert b"slow-closed" in closed.body and b"no reply within 300 ms" in closed.body
    assert not any(target.endswith("/closed") for _, target, _ in origin.requests)


def test_a_crashed_hook_is_restarted_and_garbage_is_a_failure(make_proxy, origin, tmp_path):
    crash = write_hook(tmp_path, "crash", """
if call["request"]["url"].endswith("/die"):
    os._exit(3)
if call["request"]["url"].endswith("/garbage"):
    return "not an object"
return {"action": "modify", "headers": {"set": {"X-Alive": str(os.getpid())}}}
""")
    proxy = make_proxy({"hooks": [hook("fragile", crash, timeout_ms=2000)]})
    before = curl(proxy, origin.url("/echo?body=1"))
    assert before.status == 200
    died = curl(proxy, origin.url("/echo/die"))
    assert died.status == 200, "on_failure: continue"
    assert "exited with status 3" in runs(proxy, "fragile", 2)[1]["error"]
    [restart] = proxy.log_records(1, lambda r: r.get("event") == "hook.didRestart", timeout=10)
    assert restart["hook"] == "fragile" and "status 3" in restart["reason"] and restart["backoff_ms"] >= 200
    def alive_again():
        result = curl(proxy, origin.url("/echo?body=1"))
        last = runs(proxy, "fragile", 1)[-1]
        return result.status == 200 and last["action"] == "modify" and last not in runs(proxy, "fragile")[:2] and last
    wait_until(alive_again, timeout=10, interval=0.3, message="the hook works again")
    garbage = curl(proxy, origin.url("/echo/garbage"))
    assert garbage.status == 200
    wait_until(lambda: any("unusable" in r.get("error", "") for r in runs(proxy, "fragile")), message="garbage recorded")


def test_concurrency_and_queue_bounds(make_proxy, origin, tmp_path):
    slow = write_hook(tmp_path, "slow", 'time.sleep(0.6)\nreturn {"action": "continue", "id": call["id"], "phase": call["phase"]}')
    proxy = make_proxy({"hooks": [hook("narrow", slow, timeout_ms=5000, concurrency=1, queue_limit=1)]})
    clients = [Background(lambda i=i: curl(proxy, origin.url(f"/echo/{i}"))) for i in range(4)]
    results = [c.join(30) for c in clients]
    assert all(r.status == 200 for r in results), "on_failure: continue lets every one go on"
    records = runs(proxy, "narrow", 4)
    refused = [r for r in records if "queue_limit" in r.get("error", "")]
    assert len(refused) == 2, records
    served = [r for r in records if "error" not in r]
    assert len(served) == 2 and max(r["ms"] for r in served) >= 1000, "the second waited for the first"


def test_a_body_over_the_hooks_limit_is_sent_as_its_head(make_proxy, origin, tmp_path):
    greedy = write_hook(tmp_path, "greedy", """
request = call["request"]
assert "body_base64" not in request and request["body_truncated"] is True
return {"action": "modify", "body": "replaced"}
""")
    proxy = make_proxy({"hooks": [hook("greedy", greedy, max_body_bytes=10, timeout_ms=2000)]})
    code, _, data = py_request(proxy, "POST", origin.url("/echo?body=1"), body=b"x" * 100)
    assert code == 200 and json.loads(data)["body"] == "x" * 100, "the body went on as it came"
    [run] = runs(proxy, "greedy")
    assert run["error"].startswith("body:") and run["action"] == "continue"


def test_bad_hooks_in_the_config_name_their_key(make_proxy):
    for entry, key in [({"name": "x"}, "hooks[0].command"), ({"name": "x", "url": "ftp://h/"}, "hooks[0].url"),
                       ({"name": "x", "url": "http://127.0.0.1:1/", "command": ["a"]}, "hooks[0].command"),
                       ({"name": "x", "url": "http://127.0.0.1:1/", "on_failure": "explode"}, "hooks[0].on_failure"),
                       ({"name": "x", "url": "http://127.0.0.1:1/", "filter": "status:"}, "hooks[0].filter"),
                       ({"name": "x", "url": "http://127.0.0.1:1/", "concurrency": 0}, "hooks[0].concurrency")]:
        proxy = make_proxy({"hooks": [entry]}, start=False)
        import subprocess
        from conftest import client_env
        check = subprocess.run([str(proxy.binary), "config", "check", str(proxy.config_path)], capture_output=True,
                               text=True, timeout=30, env=client_env())
        assert check.returncode != 0 and key in check.stderr + check.stdout, (entry, check.stderr)


def test_a_reply_over_the_limit_is_a_failure_and_the_next_call_is_fine(make_proxy, origin, tmp_path):
    chatty = write_hook(tmp_path, "chatty", """
if call["request"]["url"].endswith("/long"):
    return {"action": "modify", "headers": {"set": {"X-Long": "x" * 200000}}}
return {"action": "modify", "headers": {"set": {"X-Short": "1"}}}
""")
    proxy = make_proxy({"hooks": [hook("chatty", chatty, max_body_bytes=10, timeout_ms=3000)]})
    assert curl(proxy, origin.url("/echo/long")).status == 200
    assert "longer than" in runs(proxy, "chatty")[0]["error"]
    code, _, data = py_request(proxy, "GET", origin.url("/echo?body=1"))
    assert code == 200 and ["X-Short", "1"] in json.loads(data)["headers"], "the stream stayed in step"


def test_an_http_hook_that_answers_an_error_follows_on_failure(make_proxy, origin):
    with ScriptedOrigin() as endpoint:
        endpoint.route("/hook", (500, {}, b"broken"))
        proxy = make_proxy({"hooks": [hook("down", url=endpoint.url("/hook"), on_failure="abort")]})
        refused = curl(proxy, origin.url("/echo"))
        assert refused.status == 502 and refused.header("X-Lookout-Error") == "hook_failed"
        [run] = runs(proxy, "down")
        assert run["action"] == "abort" and "answered 500" in run["error"]
