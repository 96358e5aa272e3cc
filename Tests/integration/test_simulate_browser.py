"""A headless Chromium page load through interception, recorded with capture on and then answered
from that recording with the origin gone: the page, its script, style sheet, image and the API
calls its script makes come back byte for byte, repeated calls in recorded order. Chromium trusts
Lookout's CA through its NSS database, as a user sets it up (`certutil`, see the README)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from conftest import wait_until
from origins import ScriptedOrigin
from test_tls_intercept import intercepting

pytest.importorskip("selenium", reason="make deps installs selenium")
from browser import start_chromium, trusting_home  # noqa: E402

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>loading</title>
<link rel="stylesheet" href="/shop.css"><script src="/shop.js"></script></head>
<body><h1 id="title">Shop</h1><img id="logo" src="/logo.png" alt="logo"><p id="items"></p><p id="calls"></p></body></html>
"""
SCRIPT = b"""window.addEventListener("DOMContentLoaded", async () => {
  const answer = await fetch("/api/items", {method: "POST", headers: {"Content-Type": "application/json"},
                                           body: JSON.stringify({page: 1, sort: "name"})});
  document.getElementById("items").textContent = (await answer.json()).items.join(",");
  const calls = [];
  for (let i = 0; i < 2; i++) calls.push(await (await fetch("/api/counter", {cache: "no-store"})).text());
  document.getElementById("calls").textContent = calls.join(",");
  document.title = "loaded";
});
"""
STYLE = b"h1 { color: rgb(10, 20, 30); }\n"


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\x80\x40\x20" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def shop(pki) -> ScriptedOrigin:
    origin = ScriptedOrigin(tls=pki.good.tls)
    origin.route("/", (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE))
    origin.route("/shop.js", (200, {"Content-Type": "text/javascript"}, SCRIPT))
    origin.route("/shop.css", (200, {"Content-Type": "text/css"}, STYLE))
    origin.route("/logo.png", (200, {"Content-Type": "image/png"}, png(7, 5)))
    origin.route("/api/items", (200, {"Content-Type": "application/json"}, json.dumps({"items": ["apple", "pear"]}).encode()))
    origin.route("/api/counter", (200, {"Content-Type": "text/plain", "Cache-Control": "no-store"}, b"first"),
                 (200, {"Content-Type": "text/plain", "Cache-Control": "no-store"}, b"second"))
    origin.route("/favicon.ico", (404, {"Content-Type": "text/plain"}, b"none"))
    return origin


def load(proxy, home: Path, downloads: Path, url: str) -> dict:
    """Loads `url` in a fresh Chromium profile through `proxy`; what the page shows."""
    browser = start_chromium(downloads, proxy_port=proxy.port, home=home)
    try:
        browser.get(url)
        wait_until(lambda: browser.title == "loaded", timeout=20, message="the page and its API calls")
        return browser.execute_script("""
            const logo = document.getElementById('logo');
            return {items: document.getElementById('items').textContent,
                    calls: document.getElementById('calls').textContent,
                    color: getComputedStyle(document.getElementById('title')).color,
                    logo: [logo.naturalWidth, logo.naturalHeight]};""")
    finally:
        browser.quit()


def bodies(proxy, origin) -> dict:
    """Each of the origin's URLs → the response bodies the proxy captured for it, in order."""
    found: dict = {}
    for record in proxy.summaries(where=lambda r: r["url"].startswith(origin.url("/")) and r["kind"] == "intercepted"):
        path = record.get("capture", {}).get("response")
        found.setdefault(record["method"] + " " + record["url"], []).append(Path(path).read_bytes() if path else b"")
    return found


def test_a_chromium_page_load_is_recorded_and_answered_from_the_recording(make_proxy, pki, tmp_path):
    origin = shop(pki)
    # One CA for both proxies, trusted once; Chromium's own calls home are refused, never sent.
    state = {"state_dir": str(tmp_path / "state"), "access": {"allow_hosts": ["127.0.0.1"]}}
    capture = {"path": str(tmp_path / "cap"), "rules": [{"hosts": ["**"]}]}
    recorder = make_proxy(intercepting(pki, origin, capture=capture, log={"include_headers": True}, **state))
    home = trusting_home(tmp_path / "home", tmp_path / "state" / "ca.pem")
    url = origin.url("/")
    seen = load(recorder, home, tmp_path / "downloads", url)
    assert seen == {"items": "apple,pear", "calls": "first,second", "color": "rgb(10, 20, 30)", "logo": [7, 5]}
    paths = ["/", "/shop.js", "/shop.css", "/logo.png", "/api/items", "/api/counter"]
    wait_until(lambda: all(origin.served.get(p) for p in paths) and len(bodies(recorder, origin)) >= 6,
               timeout=10, message="every request recorded")
    recorded = bodies(recorder, origin)
    recorder.stop()
    origin.stop()

    simulator = make_proxy(intercepting(pki, origin, capture={"path": str(tmp_path / "cap2"), "rules": [{"hosts": ["**"]}]},
                                        simulate={"recordings": [str(recorder.log_path)], "mode": "simulate"}, **state))
    assert load(simulator, home, tmp_path / "downloads", url) == seen
    wait_until(lambda: len(bodies(simulator, origin)) >= 6, timeout=10, message="the page load logged")
    answered = simulator.summaries(where=lambda r: r["url"].startswith(origin.url("/")) and r["kind"] == "intercepted")
    assert all("simulated" in r and r["attempts"] == 0 for r in answered), answered
    replayed = bodies(simulator, origin)
    for key in ("GET " + origin.url(p) for p in ["/", "/shop.js", "/shop.css", "/logo.png"]):
        assert replayed[key] == recorded[key][:1], key
    assert replayed["POST " + origin.url("/api/items")] == recorded["POST " + origin.url("/api/items")]
    assert replayed["GET " + origin.url("/api/counter")] == [b"first", b"second"]
