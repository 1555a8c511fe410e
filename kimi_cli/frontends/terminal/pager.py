"""The whole of a long output, in a pager ($PAGER, else less), for `/last` and Ctrl-O.

Runs while prompt_toolkit has handed the terminal back (run_in_terminal). The text goes through the
sanitiser first: a pager shows what a tool printed, it never interprets its escape sequences.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from kimi_cli.util.sanitize import visible


def pager_command() -> list[str]:
    from kimi_cli.hostsafe.programs import host_which

    chosen = os.environ.get("KIMI_PAGER") or os.environ.get("PAGER") or ""
    try:
        words = shlex.split(chosen) if chosen else ["less", "-S"]
    except ValueError:
        return []
    if words and "/" not in words[0]:  # a bare name: never from a folder sandboxed commands may write
        found = host_which(words[0])
        if found is None:
            return []
        words[0] = found
    return words


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
