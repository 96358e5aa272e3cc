"""Starting Debian's headless Chromium under Selenium for the tests: no network beyond loopback,
no background traffic, downloads into a folder the test names; optionally through a proxy, and
with a home folder of its own (whose NSS database, `~/.pki/nssdb`, is where Chromium on Linux
takes the roots a user adds — as `certutil` puts Lookout's CA there)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

selenium = pytest.importorskip("selenium", reason="make deps installs selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

QUIET = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1500,950",
         "--no-first-run", "--disable-sync", "--disable-background-networking", "--disable-component-update",
         "--disable-default-apps", "--disable-extensions", "--metrics-recording-only", "--password-store=basic",
         # Chromium's own calls home must not leave the machine: every name but loopback fails to resolve.
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost")


def start_chromium(downloads: Path, proxy_port: int | None = None, home: Path | None = None,
                   pac_url: str | None = None, scheme: str = "http"):
    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromium-driver are needed (make deps installs them)")
    options = Options()
    options.binary_location = chromium
    for argument in QUIET:
        options.add_argument(argument)
    if pac_url is not None:
        # The proxy auto-config decides; Chromium bypasses loopback on its own whatever it says.
        options.add_argument(f"--proxy-pac-url={pac_url}")
    elif proxy_port is None:
        options.add_argument("--no-proxy-server")
    else:
        # Chromium never sends loopback through a proxy unless told with <-loopback>.
        options.add_argument(f"--proxy-server={scheme}://127.0.0.1:{proxy_port}")
        options.add_argument("--proxy-bypass-list=<-loopback>")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for drivers online
    env = dict(os.environ)
    if home is not None:
        env["HOME"] = str(home)
    driver = webdriver.Chrome(service=Service(driver_path, env=env), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads
    return driver


def trusting_home(folder: Path, ca: Path) -> Path:
    """A home folder whose NSS database trusts `ca` for TLS servers, made as the README says."""
    if not shutil.which("certutil"):
        pytest.fail("certutil is needed (make deps installs libnss3-tools)")
    database = folder / ".pki" / "nssdb"
    database.mkdir(parents=True, exist_ok=True)
    subprocess.run(["certutil", "-N", "-d", f"sql:{database}", "--empty-password"], check=True, capture_output=True)
    subprocess.run(["certutil", "-A", "-d", f"sql:{database}", "-n", "lookout", "-t", "C,,", "-i", str(ca)],
                   check=True, capture_output=True)
    return folder
