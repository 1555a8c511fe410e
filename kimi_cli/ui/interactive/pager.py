"""The whole of a long output, in a pager ($PAGER, else less), for `/last` and Ctrl-O.

Runs while prompt_toolkit has handed the terminal back (run_in_terminal). The text goes through the
sanitiser first: a pager shows what a tool printed, it never interprets its escape sequences.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

from kimi_cli.ui.sanitize import visible


def pager_command() -> list[str]:
    chosen = os.environ.get("KIMI_PAGER") or os.environ.get("PAGER") or ""
    if chosen:
        try:
            return shlex.split(chosen)
        except ValueError:
            return []
    return ["less", "-S"] if shutil.which("less") else []


def page(title: str, text: str) -> None:
    body = f"── {visible(title, one_line=True)} ──\n{visible(text, drop_colors=True)}"
    if not body.endswith("\n"):
        body += "\n"
    command = pager_command()
    if command and sys.stdout.isatty():
        try:
            subprocess.run(command, input=body, text=True, encoding="utf-8", errors="replace", check=False)
            return
        except OSError:
            pass
    sys.stdout.write(body)
    sys.stdout.flush()
