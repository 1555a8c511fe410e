"""The one question an interactive session asks at start when the folder's .kimi/ wants more than defaults."""

from __future__ import annotations

import sys

from kimi_cli.trust import FolderTrust
from kimi_cli.ui.sanitize import visible


def ask_folder_trust(state: FolderTrust) -> bool:
    """List exactly what the folder asks for; yes trusts it (remembered until those settings change)."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = Console(highlight=False)
    lines = [f"• {visible(line, one_line=True)}" for line in state.summary()]
    body = Text(
        f"{visible(str(state.folder), one_line=True)} (its .kimi or .claude files) asks kimi to:\n"
        + "\n".join(lines)
        + "\n\n"
        "Trust this folder only if you trust whoever wrote these files (a cloned repository may ship them). "
        "Without trust they are ignored; everything else works."
    )
    console.print(Panel(body, title="trust this folder?", border_style="yellow", expand=False))
    try:
        sys.stdout.write("Trust this folder? [y/N] › ")
        sys.stdout.flush()
        answer = sys.stdin.readline().strip().lower()
    except (KeyboardInterrupt, EOFError):
        return False
    return answer in ("y", "yes")
