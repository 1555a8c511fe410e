"""Choosing a session to resume: a numbered list of this folder's sessions, answered by number or id prefix.

Used by `/resume` with no id (inside the running session) and by `kimi -r` with no id (before it starts).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from kimi_cli.frontends.session_list import rows, visible_sessions
from kimi_cli.frontends.terminal.host import SessionHost
from kimi_cli.session.store import SessionInfo, list_sessions
from kimi_cli.util.sanitize import visible_text

PICK = "@pick"  # `kimi -r` without an id (kimi_cli/cli/main.py spells the same value)
SHOWN = 15
QUESTION = "resume which? number or id (Enter: none) › "


def choices(workspace: Path, exclude: str = "") -> list[SessionInfo]:
    """The sessions to offer: failed runs left out (`/resume ID` still opens one)."""
    infos, _hidden = visible_sessions(list_sessions(workspace), show_all=False)
    return [i for i in infos if i.id != exclude][:SHOWN]


def print_choices(console: Console, infos: list[SessionInfo], current: str = "") -> None:
    """`  3  20261130-140211-ab12cd  11-30 14:02    idle  12 steps  45.2k tokens  title…`, aligned and
    clipped to the width (kimi_cli.frontends.session_list)."""
    for row in rows(infos, numbered=True, current=current, year=False):
        line = visible_text(row, one_line=True)
        line.truncate(max(console.width - 1, 20), overflow="ellipsis")
        console.print(line)


def chosen(answer: str, infos: list[SessionInfo]) -> str | None:
    """The id the answer names: a number from the list, or an id or its start (resolved later)."""
    answer = answer.strip()
    if not answer:
        return None
    if answer.isdigit() and 1 <= int(answer) <= len(infos):
        return infos[int(answer) - 1].id
    return answer


async def pick_session_async(app: SessionHost, exclude: str = "") -> str | None:
    infos = choices(app.runtime.workdir, exclude)
    if not infos:
        app.console.print("no other session in this folder to resume")
        return None
    print_choices(app.console, infos)
    return chosen(await app.ask_line(QUESTION), infos)


def pick_session(workspace: Path) -> str | None:
    """Before the session starts (`kimi -r`): the list, then one line read with prompt_toolkit."""
    console = Console(highlight=False, markup=False, emoji=False)
    infos = choices(workspace)
    if not infos:
        console.print(Text("no session in this folder to resume; starting a new one", style="yellow"))
        return None
    print_choices(console, infos)
    from prompt_toolkit import PromptSession

    try:
        answer = PromptSession[str]().prompt(QUESTION)
    except (KeyboardInterrupt, EOFError):
        return None
    return chosen(answer, infos)
