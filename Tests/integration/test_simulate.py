"""Answering from recordings (`simulate`, `lookout simulate`): traffic recorded through Lookout
(capture on) or a HAR file is answered byte for byte with the origins gone, repeated requests in
recorded order, the listed fields, query parameters and JSON paths matched or ignored; `spy` sends
what is missing upstream; a miss is `502 simulation_miss` naming the closest recorded request."""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request

from conftest import client_env, curl, py_request, wait_until
from origins import ScriptedOrigin, pattern


def recording(make_proxy, tmp_path, site) -> str:
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]},
                        "log": {"include_headers": True}})
    assert curl(proxy, site.url("/big")).body == pattern(300_000)
    assert curl(proxy, site.url("/missing")).status == 404
    for _ in range(3):
        curl(proxy, site.url("/counter"))
    py_request(proxy, "POST", site.url("/search?q=a&ts=1"), body=json.dumps({"q": "a", "requestId": "r1", "page": 1}).encode(),
               headers={"Content-Type": "application/json", "Accept": "application/json"})
    proxy.summaries(6, kind="http")
    proxy.stop()
    return str(proxy.log_path)


def site_with_counter():
    site = ScriptedOrigin()
    count = {"n": 0}
    lock = threading.Lock()

    def counter(req):
        with lock:
            count["n"] += 1
            return 200, {"Content-Type": "text/plain"}, f"call {count['n']}".encode()
    site.route("/big", (200, {"Content-Type": "application/octet-stream"}, pattern(300_000)))
    site.route("/missing", (404, {"Content-Type": "text/plain"}, b"no such thing"))
    site.route("/counter", counter)
    site.route("/search", (200, {"Content-Type": "application/json"}, b'{"results": [1, 2]}'))
    return site


def test_a_recording_answers_byte_for_byte_in_order_and_a_miss_names_the_closest(make_proxy, tmp_path):
    site = site_with_counter()
    log = recording(make_proxy, tmp_path, site)
    site.stop()
    proxy = make_proxy({"simulate": {"recordings": [log], "mode": "simulate",
                                     "match": {"on": ["method", "url", "body"], "headers": ["Accept"],
                                               "ignore_query": ["ts"], "ignore_json": ["$.requestId"]}}})
    big = curl(proxy, site.url("/big"))
    assert big.status == 200 and big.body == pattern(300_000) and big.header("Content-Length") == "300000"
    assert curl(proxy, site.url("/missing")).status == 404
    assert [curl(proxy, site.url("/counter")).body for _ in range(4)] == [b"call 1", b"call 2", b"call 3", b"call 3"]
    # Key order, an ignored JSON path and an ignored query parameter do not matter; the Accept field does.
    code, _, data = py_request(proxy, "POST", site.url("/search?ts=99&q=a"),
                               body=json.dumps({"page": 1, "requestId": "other", "q": "a"}).encode(),
                               headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert code == 200, "ts is left out, so the rest of the query is the recorded one"
    code, _, data = py_request(proxy, "POST", site.url("/search?q=a&ts=99"),
                               body=json.dumps({"page": 1, "requestId": "other", "q": "a"}).encode(),
                               headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert code == 200 and json.loads(data) == {"results": [1, 2]}
    code, _, _ = py_request(proxy, "POST", site.url("/search?q=a&ts=99"), body=json.dumps({"q": "a", "page": 2}).encode(),
                            headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert code == 502
    code, _, _ = py_request(proxy, "POST", site.url("/search?q=a&ts=1"),
                            body=json.dumps({"q": "a", "requestId": "r1", "page": 1}).encode(),
                            headers={"Content-Type": "application/json", "Accept": "text/html"})
    assert code == 502, "Accept is matched"
    miss = curl(proxy, site.url("/bigger"))
    assert miss.status == 502 and miss.header("X-Lookout-Error") == "simulation_miss"
    assert f"the closest recorded request is GET {site.url('/big')}" in miss.body.decode()
    simulated = proxy.summaries(where=lambda r: "simulated" in r)
    assert len(simulated) == 8 and simulated[0]["simulated"] == {"recording": log, "entry": 0}
    assert all(r["attempts"] == 0 for r in simulated), "nothing went upstream"
    def counted():
        page = urllib.request.urlopen(f"http://127.0.0.1:{proxy.port}/metrics", timeout=10).read().decode()
        return ('lookout_simulated_total{result="answered"} 8' in page
                and 'lookout_simulated_total{result="missed"} 3' in page)
    wait_until(counted, timeout=10, message="the simulated answers and misses counted")


def test_spy_forwards_what_is_missing_and_the_command_needs_no_config(make_proxy, tmp_path, lookout_bin):
    site = site_with_counter()
    log = recording(make_proxy, tmp_path, site)
    with ScriptedOrigin() as live:
        live.route("/fresh", (200, {}, b"from upstream"))
        process = subprocess.Popen([str(lookout_bin), "simulate", log, "--mode", "spy", "--listen", "127.0.0.1:0",
                                    "--log", str(tmp_path / "spy.jsonl")], stderr=subprocess.PIPE, text=True,
                                   env=client_env())
        try:
            port = None
            for line in process.stderr:
                if "listening on 127.0.0.1:" in line:
                    port = int(line.rsplit(":", 1)[1])
                    break

            class Target:
                url = f"http://127.0.0.1:{port}"
            assert curl(Target, site.url("/missing")).status == 404, "answered from the recording"
            assert curl(Target, live.url("/fresh")).body == b"from upstream", "spy: a miss goes upstream"
        finally:
            process.terminate()
            process.wait(20)
    site.stop()
    bad = subprocess.run([str(lookout_bin), "simulate", str(tmp_path / "absent.jsonl")], capture_output=True, text=True,
                         timeout=30, env=client_env())
    assert bad.returncode != 0 and "absent.jsonl" in bad.stderr


def test_a_har_recording_is_answered_and_a_bad_one_is_a_config_error(make_proxy, tmp_path, lookout_bin):
    site = site_with_counter()
    log = recording(make_proxy, tmp_path, site)
    site.stop()
    har = tmp_path / "rec.har"
    subprocess.run([str(lookout_bin), "har", "--log", log, "--output", str(har)], check=True, timeout=60, env=client_env())
    proxy = make_proxy({"simulate": {"recordings": [str(har)], "mode": "simulate"}})
    assert curl(proxy, site.url("/big")).body == pattern(300_000)
    assert curl(proxy, site.url("/counter")).body == b"call 1"
    (tmp_path / "broken.har").write_text('{"log": {"entries": [{"request": {"method": "GET"}}]}}')
    bad = make_proxy({"simulate": {"recordings": [str(tmp_path / "broken.har")], "mode": "simulate"}}, start=False)
    check = subprocess.run([str(lookout_bin), "config", "check", str(bad.config_path)], capture_output=True, text=True,
                           timeout=30, env=client_env())
    assert check.returncode != 0 and "simulate.recordings[0]" in check.stderr and "entry 0" in check.stderr, check.stderr


def test_intercepted_https_and_http2_clients_are_answered_from_a_recording(make_proxy, pki, tmp_path):
    import asyncio
    import ssl

    import httpx

    import origins
    from test_tls_intercept import ca_file, intercepting
    origin = origins.HTTPOrigin(tls=pki.good.tls).start()
    capture = {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["**"]}]}
    recorder = make_proxy(intercepting(pki, origin, capture=capture, log={"include_headers": True}))
    assert curl(recorder, origin.url("/fixed/70000"), "--cacert", ca_file(recorder)).body == pattern(70000)
    recorder.summaries(1, kind="intercepted")
    recorder.stop()
    origin.stop()
    proxy = make_proxy(intercepting(pki, origin, simulate={"recordings": [str(recorder.log_path)], "mode": "simulate"}))
    context = ssl.create_default_context(cafile=ca_file(proxy))

    async def fetch():
        async with httpx.AsyncClient(http2=True, proxy=proxy.url, verify=context, timeout=30) as client:
            response = await client.get(origin.url("/fixed/70000"))
            return response.http_version, response.status_code, response.content
    version, status, body = asyncio.run(fetch())
    assert version == "HTTP/2" and status == 200 and body == pattern(70000)
    record = proxy.only_summary(kind="intercepted")
    assert record["simulated"]["entry"] == 0 and record["attempts"] == 0 and record["http_version"] == "HTTP/2"


def test_a_gigabyte_recorded_body_is_streamed_not_held(make_proxy, tmp_path, origin):
    from conftest import curl_sha256, rss_kib
    from origins import expected_sha256
    size = 1 << 30
    recorder = make_proxy({"capture": {"path": str(tmp_path / "cap"), "max_total_bytes": 2 * size,
                                       "rules": [{"hosts": ["127.0.0.1"], "max_body_bytes": 2 * size}]}})
    rc, n, digest, _, err = curl_sha256(recorder, origin.url(f"/huge/{size}"))
    assert rc == 0 and n == size, err
    recorder.summaries(1, kind="http")
    recorder.stop()
    proxy = make_proxy({"simulate": {"recordings": [str(recorder.log_path)], "mode": "simulate"}})
    assert curl(proxy, origin.url("/huge/100")).status == 502, "a miss, so the proxy has served once before measuring"
    before = rss_kib(proxy.proc.pid)
    rc, n, digest, _, err = curl_sha256(proxy, origin.url(f"/huge/{size}"))
    after = rss_kib(proxy.proc.pid)
    assert rc == 0 and n == size and digest == expected_sha256(size), err
    assert after - before < 32 * 1024, f"RSS grew {after - before} KiB while 1 GiB was answered from its file"
    assert proxy.only_summary(where=lambda r: r.get("simulated"))["status"] == 200


MITMDUMP = __import__("pathlib").Path(__file__).resolve().parents[2] / ".build" / "mitmproxy" / "bin" / "mitmdump"


def test_a_har_written_by_mitmproxy_is_answered_byte_for_byte(make_proxy, tmp_path):
    import signal
    import socket
    import time

    from conftest import free_port
    assert MITMDUMP.exists(), "make deps installs mitmproxy in .build/mitmproxy"
    site = site_with_counter()
    port = free_port()
    har = tmp_path / "mitm.har"
    mitm = subprocess.Popen([str(MITMDUMP), "--listen-host", "127.0.0.1", "--listen-port", str(port), "-q",
                             "--set", f"hardump={har}", "--set", f"confdir={tmp_path / 'mitmconf'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=client_env())
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and mitm.poll() is None, mitm.stderr.read().decode()[-2000:]
                time.sleep(0.2)

        class Mitm:
            url = f"http://127.0.0.1:{port}"
        assert curl(Mitm, site.url("/big")).body == pattern(300_000)
        assert curl(Mitm, site.url("/missing")).status == 404
        assert curl(Mitm, site.url("/counter")).body == b"call 1"
        assert curl(Mitm, site.url("/counter")).body == b"call 2"
    finally:
        mitm.send_signal(signal.SIGINT)
        mitm.wait(60)
    site.stop()
    assert har.exists() and json.loads(har.read_text())["log"]["entries"], "mitmproxy wrote its HAR"
    proxy = make_proxy({"simulate": {"recordings": [str(har)], "mode": "simulate"}})
    assert curl(proxy, site.url("/big")).body == pattern(300_000)
    missing = curl(proxy, site.url("/missing"))
    assert missing.status == 404 and missing.body == b"no such thing"
    assert [curl(proxy, site.url("/counter")).body for _ in range(3)] == [b"call 1", b"call 2", b"call 2"]


def test_a_recorded_answer_whose_body_is_missing_is_a_clear_miss(make_proxy, tmp_path):
    site = site_with_counter()
    log = recording(make_proxy, tmp_path, site)
    uncaptured = make_proxy({"log": {"include_headers": True}})
    curl(uncaptured, site.url("/big"))
    uncaptured.summaries(1, kind="http")
    uncaptured.stop()
    site.stop()
    record = [json.loads(line) for line in open(log) if '/missing"' in line and '"event":"exchange"' in line][0]
    __import__("os").unlink(record["capture"]["response"])
    proxy = make_proxy({"simulate": {"recordings": [log, str(uncaptured.log_path)], "mode": "simulate",
                                     "repeat": "first"}})
    gone = curl(proxy, site.url("/missing"))
    assert gone.status == 502 and "cannot be read" in gone.body.decode(), gone.body
    proxy2 = make_proxy({"simulate": {"recordings": [str(uncaptured.log_path)], "mode": "simulate"}})
    bodiless = curl(proxy2, site.url("/big"))
    assert bodiless.status == 502 and "recorded without its body" in bodiless.body.decode(), bodiless.body
    assert proxy2.only_summary(kind="http")["error"]["code"] == "simulation_miss"


def test_a_downloaded_recording_is_a_fixture_wherever_it_is_unpacked(make_proxy, tmp_path, lookout_bin):
    import shutil
    import tarfile
    site = site_with_counter()
    proxy = make_proxy({"capture": {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["127.0.0.1"]}]},
                        "log": {"include_headers": True}})
    assert curl(proxy, site.url("/big")).body == pattern(300_000)
    for _ in range(2):
        curl(proxy, site.url("/counter"))
    curl(proxy, site.url("/missing"))
    proxy.summaries(4, kind="http")
    url = f"{proxy.url}/exchanges.tar.gz?filter=" + urllib.parse.quote("status:2xx and kind:http")
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.headers["Content-Type"] == "application/gzip"
        assert answer.headers["Content-Disposition"] == 'attachment; filename="lookout-recording.tar.gz"'
        (tmp_path / "r.tar.gz").write_bytes(answer.read())
    with tarfile.open(tmp_path / "r.tar.gz", "r:gz") as archive:
        names = sorted(archive.getnames())
        archive.extractall(tmp_path / "moved", filter="data")
    assert names[-1] == "lookout-recording/recording.jsonl" and len(names) == 4, names
    proxy.stop()
    site.stop()
    shutil.rmtree(tmp_path / "cap")  # the archive alone must answer
    log = tmp_path / "moved" / "lookout-recording" / "recording.jsonl"
    assert len(log.read_text().splitlines()) == 3, "the 404 is filtered out"
    process = subprocess.Popen([str(lookout_bin), "simulate", str(log), "--listen", "127.0.0.1:0",
                                "--log", str(tmp_path / "sim.jsonl")], stderr=subprocess.PIPE, text=True, env=client_env())
    try:
        port = next(int(line.rsplit(":", 1)[1]) for line in process.stderr if "listening on 127.0.0.1:" in line)

        class Target:
            url = f"http://127.0.0.1:{port}"
        assert curl(Target, site.url("/big")).body == pattern(300_000)
        assert [curl(Target, site.url("/counter")).body for _ in range(3)] == [b"call 1", b"call 2", b"call 2"]
        assert curl(Target, site.url("/missing")).status == 502, "not in the filtered recording"
    finally:
        process.terminate()
        process.wait(20)
    # A bad filter is a 400 naming its column, as on /exchanges.
    bad = urllib.request.Request(f"http://127.0.0.1:{make_proxy({}).port}/exchanges.tar.gz?filter=status%3A")
    try:
        urllib.request.urlopen(bad, timeout=10)
        raise AssertionError("a bad filter was accepted")
    except urllib.error.HTTPError as error:
        assert error.code == 400 and "column" in json.loads(error.read())
