"""Render an HTML file to a PNG with headless Chromium (offline flags; a throwaway profile)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1"]  # fmt: skip


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("headless Chromium is needed: apt-get install chromium (Debian/Ubuntu)")


def render(html: Path, png: Path, width: int = 1024, height: int = 640) -> None:
    with tempfile.TemporaryDirectory() as profile:
        argv = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png.resolve()}",
            html.resolve().as_uri(),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if not png.exists():
        sys.exit(f"chromium did not write {png}: {proc.stderr[-500:]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("html", type=Path)
    parser.add_argument("png", type=Path)
    args = parser.parse_args()
    render(args.html, args.png)
    print(f"rendered {args.html} -> {args.png}")
