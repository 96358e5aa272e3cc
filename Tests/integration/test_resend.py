"""Resend and edit-and-resend (`POST /exchanges/ID/resend`, `lookout resend`): a recent exchange's
request goes again as a new exchange through the whole pipeline, with its body from the capture
file, and the new record links the first (`resent_from`, `resent_by`). A body that was not
captured cannot be guessed: a 409 says why."""

from __future__ import annotations

import hashlib
import json
import subprocess

import origins
from conftest import client_env, curl, py_request, wait_until
from test_breakpoints import admin
from test_capture import capturing
from test_tls_intercept import ca_file, intercepting


def resent(proxy, new_id: int) -> dict:
    return proxy.only_summary(where=lambda r: r["id"] == new_id)


def test_a_captured_post_is_sent_again_with_its_body_and_linked(make_proxy, origin, tmp_path):
    proxy = make_proxy(capturing(tmp_path / "cap", request_bodies=True, response_bodies=True))
    payload = origins.pattern(200_000)
    code, _, _ = py_request(proxy, "POST", origin.url("/echo"), body=payload,
                            headers={"Authorization": "Bearer kept-secret", "Content-Type": "application/octet-stream"})
    assert code == 200
    first = proxy.only_summary(method="POST")
    status, answer = admin(proxy, "POST", f"/exchanges/{first['id']}/resend")
    assert status == 202 and answer["resent_from"] == first["id"] and answer["resent_by"].startswith("127.0.0.1:")
    record = resent(proxy, answer["id"])
    assert record["status"] == 200 and record["resent_from"] == first["id"] and record["resent_by"] == answer["resent_by"]
    assert record["client"] == answer["resent_by"] and "modified_by" not in record
    assert record["method"] == "POST" and record["url"] == first["url"]
    method, target, headers = origin.requests[-1]
    assert method == "POST" and target == "/echo"
    sent = dict((k.lower(), v) for k, v in headers)
    assert sent["authorization"] == "Bearer kept-secret", "credentials go again, though the log redacts them"
    reply = json.loads(open(record["capture"]["response"], "rb").read())
    assert reply["body_length"] == len(payload) and reply["body_sha256"] == hashlib.sha256(payload).hexdigest()


def test_edit_and_resend_changes_what_goes(make_proxy, origin, tmp_path):
    proxy = make_proxy(capturing(tmp_path / "cap", request_bodies=True))
    py_request(proxy, "PUT", origin.url("/echo?body=1"), body=b'{"v":1}', headers={"X-Old": "1"})
    first = proxy.only_summary(method="PUT")
    status, answer = admin(proxy, "POST", f"/exchanges/{first['id']}/resend",
                           {"method": "PATCH", "url": origin.url("/echo?body=1&again=1"),
                            "headers": {"set": {"X-New": "2"}, "remove": ["X-Old"]}, "body": '{"v":2}'})
    assert status == 202, answer
    record = resent(proxy, answer["id"])
    assert record["method"] == "PATCH" and record["url"].endswith("again=1")
    assert record["modified_by"] == [f"operator:{answer['resent_by']}"] and record["resent_from"] == first["id"]
    method, target, headers = origin.requests[-1]
    names = {k.lower(): v for k, v in headers}
    assert method == "PATCH" and target == "/echo?body=1&again=1" and names["x-new"] == "2" and "x-old" not in names
    assert names["content-length"] == "7"


def test_what_cannot_be_resent_is_refused_clearly(make_proxy, origin):
    proxy = make_proxy()
    py_request(proxy, "POST", origin.url("/echo"), body=b"not captured")
    posted = proxy.only_summary(method="POST")
    status, answer = admin(proxy, "POST", f"/exchanges/{posted['id']}/resend")
    assert status == 409 and "was not captured" in answer["error"], answer
    # With a body of its own it can go.
    assert admin(proxy, "POST", f"/exchanges/{posted['id']}/resend", {"body": "given"})[0] == 202
    # A bodiless request needs no capture.
    assert curl(proxy, origin.url("/echo?x=1")).status == 200
    got = proxy.summaries(1, where=lambda r: r["url"].endswith("/echo?x=1") and "resent_from" not in r)[0]
    status, answer = admin(proxy, "POST", f"/exchanges/{got['id']}/resend")
    assert status == 202
    assert resent(proxy, answer["id"])["status"] == 200
    assert admin(proxy, "POST", "/exchanges/987654/resend")[0] == 404
    for bad, field in [({"url": "not a url"}, "url"), ({"method": "TWO WORDS"}, "method"), ({"status": 200}, "status"),
                       ({"headers": {"set": {"X y": "1"}}}, "headers.set"), ({"extra": 1}, "extra")]:
        status, answer = admin(proxy, "POST", f"/exchanges/{got['id']}/resend", bad)
        assert status == 400 and answer.get("field") == field, (bad, answer)


def test_the_resend_command_and_intercepted_exchanges(make_proxy, pki, tmp_path):
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    try:
        proxy = make_proxy(intercepting(pki, origin))
        result = curl(proxy, origin.url("/echo?body=1"), "--cacert", ca_file(proxy))
        assert result.status == 200
        first = proxy.only_summary(kind="intercepted")
        run = subprocess.run([str(proxy.binary), "resend", str(first["id"]), "--set-header", "X-Again: yes",
                              "--proxy", f"127.0.0.1:{proxy.port}"], capture_output=True, text=True, timeout=30,
                             env=client_env())
        assert run.returncode == 0, run.stderr
        answer = json.loads(run.stdout)
        record = resent(proxy, answer["id"])
        assert record["kind"] == "intercepted" and record["url"] == first["url"] and record["status"] == 200
        assert record["upstream"]["tls"]["trust"]["result"] == "passed", "the same trust rules"
        wait_until(lambda: len(origin.requests) == 2)
        assert ("X-Again", "yes") in origin.requests[-1][2]
        missing = subprocess.run([str(proxy.binary), "resend", "424242", "--proxy", f"127.0.0.1:{proxy.port}"],
                                 capture_output=True, text=True, timeout=30, env=client_env())
        assert missing.returncode == 1 and "not among the recent exchanges" in missing.stderr
    finally:
        origin.stop()


def test_a_body_captured_short_is_refused_with_409(make_proxy, origin, tmp_path):
    proxy = make_proxy(capturing(tmp_path / "cap", request_bodies=True, max_body_bytes=10))
    py_request(proxy, "POST", origin.url("/echo"), body=b"y" * 100)
    posted = proxy.only_summary(method="POST")
    assert posted["capture"]["truncated"] is True
    status, answer = admin(proxy, "POST", f"/exchanges/{posted['id']}/resend")
    assert status == 409 and "holds 10 of its 100 bytes" in answer["error"], answer
