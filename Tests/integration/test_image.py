"""The container image's runtime stage, built from the binary this suite tests (the `prebuilt`
target of Docker/Dockerfile, on the same runtime stage as `make image`) and run with podman on the
host's network: a request through it is recorded in its log, /healthz answers and the health check
passes, the admin pages want the token, it runs as a non-root user, it refuses to start as an open
proxy, its CA lives on the state volume, and SIGTERM stops it with status 0. Where podman cannot
run containers, the test is skipped and says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "i" * 32


# Raising limits is not permitted here: every container gets these, as containers.conf could say.
LIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]


def podman(*args, timeout=120, check=False) -> subprocess.CompletedProcess:
    if args and args[0] == "run":
        args = ("run", *LIMITS, *args[1:])
    return subprocess.run(["podman", "--runtime", "runc", *args], capture_output=True, text=True, timeout=timeout,
                          check=check)


def unavailable() -> str | None:
    if not shutil.which("podman"):
        return "podman is not installed (make deps installs it)"
    if os.geteuid() != 0:
        return "podman runs containers here only as root"
    probe = subprocess.run(["podman", "--runtime", "runc", "info"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return f"podman cannot run here: {probe.stderr.strip()[:200]}"
    return None


@pytest.fixture(scope="module")
def image(lookout_bin, tmp_path_factory):
    reason = unavailable()
    if reason:
        print(f"test_image: skipped: {reason}")
        pytest.skip(reason)
    base = subprocess.run(["bash", str(ROOT / "Docker/image.sh"), "base"], capture_output=True, text=True, timeout=900)
    if base.returncode != 0:
        pytest.fail(f"no base image: {base.stderr}")
    context = tmp_path_factory.mktemp("image")
    (context / "config").mkdir()
    (context / "swift-lib").mkdir()
    shutil.copy(lookout_bin, context / "lookout")
    shutil.copytree(lookout_bin.parent / "Lookout_LookoutLive.resources" / "UI", context / "ui")
    shutil.copy(ROOT / "config/lookout.yaml", context / "config/lookout.yaml")
    # A debug build links the Swift runtime: the libraries go where the binary looks for them.
    for line in subprocess.run(["ldd", str(lookout_bin)], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith("/opt/swift/"):
            shutil.copy(parts[2], context / "swift-lib")
    name = "localhost/lookout-test:latest"
    built = podman("build", "--network", "host", "--format", "docker", "--target", "prebuilt",
                   "--build-arg", f"BASE_IMAGE={base.stdout.strip()}", "-f", str(ROOT / "Docker/Dockerfile"),
                   "-t", name, str(context), timeout=900)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    return name


def run_container(image: str, port: int, *extra: str) -> str:
    started = podman("run", "-d", "--network", "host",
                     "-e", f"LOOKOUT_ADMIN_TOKEN={TOKEN}", "-e", f"LOOKOUT_PORT={port}", *extra, image,
                     "run", "--config", "/etc/lookout/lookout.yaml", "--listen", f"127.0.0.1:{port}", "--log", "-")
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


def curl(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", *args], capture_output=True, text=True,
                          timeout=30, env={"PATH": os.environ["PATH"]})


def test_the_runtime_stage_proxies_and_records(image, origin):
    port = free_port()
    volume = f"lookout-test-{uuid.uuid4().hex[:8]}"
    container = run_container(image, port, "-v", f"{volume}:/var/lib/lookout")
    try:
        deadline = time.monotonic() + 20
        while curl(f"http://127.0.0.1:{port}/healthz").stdout != "200" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert curl(f"http://127.0.0.1:{port}/healthz").stdout == "200"
        assert podman("healthcheck", "run", container).returncode == 0
        assert curl(f"http://127.0.0.1:{port}/").stdout == "401"  # the admin pages want the token
        assert curl("-x", f"http://127.0.0.1:{port}", origin.url("/fixed/8")).stdout == "200"
        deadline = time.monotonic() + 10
        while origin.url("/fixed/8") not in podman("logs", container).stdout and time.monotonic() < deadline:
            time.sleep(0.2)
        assert f'"url":"{origin.url("/fixed/8")}","http_version":"HTTP/1.1","status":200' in podman("logs", container).stdout
        uid = podman("exec", container, "id", "-u").stdout.strip()
        assert uid.isdigit() and uid != "0"
        assert podman("exec", container, "lookout", "ca", "init").returncode == 0
        ca = podman("exec", container, "lookout", "ca", "export").stdout
        assert ca.startswith("-----BEGIN CERTIFICATE-----")
        podman("kill", "--signal", "TERM", container)
        assert podman("wait", container, timeout=30).stdout.strip() == "0"
        # A new container on the same volume has the same CA.
        again = podman("run", "--rm", "--network", "host", "-v", f"{volume}:/var/lib/lookout", image, "ca", "export")
        assert again.stdout == ca
    finally:
        podman("rm", "-f", container)
        podman("volume", "rm", "-f", volume)


def test_the_image_refuses_to_start_as_an_open_proxy(image):
    # A config of its own that admits every client on every address.
    script = f'printf \'listen: ["0.0.0.0:{free_port()}"]\\n\' > /tmp/open.yaml && exec lookout run --config /tmp/open.yaml'
    refused = podman("run", "--rm", "--network", "host", "--entrypoint", "/bin/sh", image, "-c", script)
    assert refused.returncode != 0 and "open proxy" in refused.stderr + refused.stdout


def test_image_sh_names_what_is_missing(tmp_path):
    """Without root, or without a registry and the Debian mirror, make image's script stops and
    says what it needs (nothing leaves the machine: no registry is asked, the mirror is a closed
    loopback port)."""
    if not shutil.which("podman") or os.geteuid() != 0:
        pytest.skip(unavailable() or "needs root")
    script = str(ROOT / "Docker/image.sh")
    nobody = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", script, "base"],
                            capture_output=True, text=True, timeout=60, cwd="/")
    assert nobody.returncode == 1 and "needs root" in nobody.stderr, nobody.stderr
    env = {**os.environ, "LOOKOUT_IMAGE_REGISTRY": "none", "LOOKOUT_BASE_IMAGE": "localhost/lookout-no-such-base:test",
           "LOOKOUT_DEBIAN_MIRROR": f"http://127.0.0.1:{free_port()}/debian"}
    offline = subprocess.run(["bash", script, "base"], capture_output=True, text=True, timeout=120, env=env)
    assert offline.returncode == 1
    assert "no registry answers and the Debian mirror http://127.0.0.1:" in offline.stderr, offline.stderr
