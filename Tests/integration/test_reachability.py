"""Reachability (reachability.*) in a network namespace the test creates (`unshare -n`): the
events when a default route appears and goes, the fail-fast answer and its recovery, loopback
never refused. See netns_reachability.py for what runs inside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def namespaces_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not namespaces_available(), reason="needs root and network namespaces (unshare -n)")
def test_route_changes_are_events_and_fail_fast_follows_them(lookout_bin, tmp_path):
    p = subprocess.run(["unshare", "-n", sys.executable, str(HERE / "netns_reachability.py"), str(lookout_bin), str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    seen = json.loads(p.stdout)
    [start] = seen["start"]
    assert (start["old"], start["new"]) == ("unknown", "not_reachable"), start
    status, body = seen["refused"]
    assert status == 503 and body.startswith("lookout: network_unreachable:"), seen["refused"]
    assert seen["loopback"] == [200, "local"], "loopback destinations are never refused"
    assert "reachability: not_reachable" in seen["status_page_down"]
    up = seen["up"][1]
    assert (up["old"], up["new"], up["interface"]) == ("not_reachable", "reachable_via_ethernet", "veth0"), up
    assert "reachability: reachable_via_ethernet (veth0)" in seen["status_page_up"]
    down = seen["down"][2]
    assert (down["old"], down["new"]) == ("reachable_via_ethernet", "not_reachable") and "interface" not in down, down
    assert seen["refused_again"][0] == 503
    codes = [s.get("error", {}).get("code") for s in seen["summaries"]]
    assert codes.count("network_unreachable") == 2, codes
