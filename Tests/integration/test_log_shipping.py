"""The sample log-shipper pipeline (config/vector.yaml). Neither Vector nor Fluent Bit is packaged
by Debian or on PyPI, so `vector validate` cannot run here; instead the sample is checked for what
can break without Vector: it parses, its components connect, it tails the path its header tells
Lookout to write, and every field its VRL names is in the records a real Lookout writes."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import yaml

from conftest import assert_error_response, curl, free_port
from origins import ScriptedOrigin

SAMPLE = Path(__file__).resolve().parents[2] / "config" / "vector.yaml"


def load_sample() -> dict:
    return yaml.safe_load(SAMPLE.read_text())


def test_components_connect():
    config = load_sample()
    sources, transforms, sinks = config["sources"], config["transforms"], config["sinks"]
    outputs = set(sources) | set(transforms)
    for name, transform in transforms.items():
        if transform["type"] == "route":
            outputs |= {f"{name}.{route}" for route in transform["route"]}
    consumed = set()
    for name, component in {**transforms, **sinks}.items():
        assert component["inputs"], name
        for source in component["inputs"]:
            assert source in outputs, f"{name} reads {source}, which nothing produces"
            consumed.add(source)
    routes = {o for o in outputs if "." in o}
    unread = (set(sources) | set(transforms) | routes) - consumed - {n for n, t in transforms.items() if t["type"] == "route"}
    assert not unread, f"outputs nobody reads: {unread}"
    for name, sink in sinks.items():
        assert sink["encoding"]["codec"] == "json", name


def test_it_tails_the_path_its_header_asks_lookout_to_write():
    text = SAMPLE.read_text()
    [path] = re.findall(r"^#\s+path: (\S+)$", text, re.M)
    assert load_sample()["sources"]["lookout_log"]["include"] == [path]


def test_every_field_it_names_is_in_a_real_log(make_proxy):
    config = load_sample()
    program = config["transforms"]["lookout_records"]["source"]
    conditions = list(config["transforms"]["lookout_by_event"]["route"].values())
    # `.message` is the file source's own field (the raw line); everything else is the record's.
    named = {m for m in re.findall(r"(?<![\w\"])\.([a-z_][\w.]*)", program + "\n".join(conditions))} - {"message", "timestamp"}
    assert named == {"ts", "event", "error.code"}, named

    with ScriptedOrigin() as site:
        site.route("/ok", (200, {}, b"fine"))
        proxy = make_proxy()
        assert curl(proxy, site.url("/ok")).status == 200
        assert_error_response(curl(proxy, f"http://127.0.0.1:{free_port()}/"), 502, "upstream_connect_failed")
        proxy.summaries(2)
        records = proxy.read_log()  # session.* records and the two exchanges

    def lookup(record: dict, dotted: str):
        for part in dotted.split("."):
            if not isinstance(record, dict) or part not in record:
                return None
            record = record[part]
        return record

    for record in records:
        assert isinstance(lookup(record, "event"), str)
        # parse_timestamp(format: "%+") takes RFC 3339 with fractional seconds and Z.
        assert datetime.fromisoformat(lookup(record, "ts").replace("Z", "+00:00")).tzinfo is not None
    exchanges = [r for r in records if r["event"] == "exchange"]
    assert len(exchanges) == 2 and any(r["event"] != "exchange" for r in records)
    assert [lookup(r, "error.code") for r in exchanges] == [None, "upstream_connect_failed"]
