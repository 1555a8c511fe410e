"""The one question an interactive session asks at start when the folder's .kimi/ wants more than defaults."""

from __future__ import annotations

import sys

from kimi_cli.frontends.questions import by_danger, show
from kimi_cli.frontends.terminal.keys import read_key
from kimi_cli.hostsafe.trust import FolderTrust
from kimi_cli.hostsafe.trust_sources import source_of


def ask_folder_trust(state: FolderTrust) -> bool:
    """List exactly what the folder asks for, the most dangerous first, every line whole, each with the file
    it comes from; yes trusts it (remembered until those settings change)."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = Console(highlight=False)
    body = Text()
    body.append_text(show(str(state.folder), one_line=True, limit=10**6).rich())
    body.append(" (its .kimi or .claude files) asks kimi to:\n")
    for ask in by_danger(state.asks):
        body.append("• ")
        body.append_text(show(ask.description, one_line=True, limit=10**6).rich())
        # the file it comes from, to open and read before answering (file names are the folder's: shown safe)
        body.append_text(show(f" (from {source_of(ask.key, state.project)})", one_line=True, limit=10**6).rich("dim"))
        body.append("\n")
    body.append(
        "\nTrust this folder only if you trust whoever wrote these files (a cloned repository may ship them). "
        "Without trust they are ignored; everything else works."
    )
    console.print(Panel(body, title="trust this folder?", border_style="yellow", expand=False))
    try:
        sys.stdout.write("Trust this folder? y/N (Enter = no) › ")
        sys.stdout.flush()
        answer = read_key("yn", "n") if sys.stdin.isatty() else sys.stdin.readline().strip().lower()
    except (KeyboardInterrupt, EOFError):
        answer = "n"
    sys.stdout.write(("yes" if answer in ("y", "yes") else "no") + "\n")
    sys.stdout.flush()
    return answer in ("y", "yes")
