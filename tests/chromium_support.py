"""Headless Chromium for tests of pages kimi writes: the DOM after the page's script ran, a screenshot, and
the page's own network requests read from Chromium's net log.

Chromium runs in a network namespace of its own (`unshare -n`, or `-rn` as a user), so nothing it tries
leaves the machine. The browser itself still tries a few requests of its own (component updates); the net
log marks those with the initiator "not an origin", and `page_requests` leaves them out: what remains is
what the page asked for.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from support import require

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-extensions", "--disable-sync", "--disable-default-apps",
    "--disable-features=NetworkTimeServiceQuerying,SpellCheck,Translate,OptimizationHints,MediaRouter",
    "--disable-spell-checking", "--hide-scrollbars",
]  # fmt: skip


def chromium() -> list[str]:
    """The browser binary itself where Debian installs it (its launcher adds remote-extension flags)."""
    direct = Path("/usr/lib/chromium/chromium")
    found = str(direct) if direct.exists() else shutil.which("chromium") or shutil.which("chromium-browser")
    require("chromium", found, "apt-get install -y chromium (.ci/run installs it)")
    unshare = shutil.which("unshare")
    require("unshare", unshare, "util-linux")
    return [str(unshare), "-n" if os.geteuid() == 0 else "-rn", str(found)]


@dataclass
class Rendered:
    dom: str
    screenshot: Path
    requests: list[tuple[str, str]]  # (url, initiator) of every URL request in the net log


def render(page: Path, work: Path, size: str = "1280,2400") -> Rendered:
    """Load `page` (a file) once for its DOM and once for a screenshot, each with a net log."""
    work.mkdir(parents=True, exist_ok=True)
    base = chromium()
    dom = subprocess.run(
        [*base, *FLAGS, f"--user-data-dir={work / 'profile-dom'}", f"--log-net-log={work / 'dom-net.json'}",
         "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-3000:]
    shot = work / "page.png"
    subprocess.run(
        [*base, *FLAGS, f"--user-data-dir={work / 'profile-shot'}", f"--log-net-log={work / 'shot-net.json'}",
         f"--window-size={size}", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    requests = net_requests(work / "dom-net.json") + net_requests(work / "shot-net.json")
    return Rendered(dom.stdout, shot, requests)


def net_requests(log: Path) -> list[tuple[str, str]]:
    """(url, initiator) of each URL request Chromium logged (a request's start carries both)."""
    data = json.loads(log.read_text())
    names = {number: name for name, number in data["constants"]["logEventTypes"].items()}
    found = []
    for event in data["events"]:
        params = event.get("params") or {}
        if names.get(event["type"]) == "URL_REQUEST_START_JOB" and "url" in params:
            found.append((str(params["url"]), str(params.get("initiator", ""))))
    return found


def page_requests(rendered: Rendered, page: Path) -> list[str]:
    """The URLs the page itself asked for: every request but the page's own load and the browser's own."""
    return [url for url, initiator in rendered.requests if initiator != "not an origin" and url != page.as_uri()]
