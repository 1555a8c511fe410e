"""Choosing a session to resume: an arrow-key picker of this folder's sessions (kimi_cli.frontends.terminal.
choose), or, where the terminal is not one (a pipe), a numbered list answered by number or id prefix.

Used by `/resume` with no id (inside the running session) and by `kimi -r` with no id (before it starts).
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from kimi_cli.frontends.session_list import rows, visible_sessions
from kimi_cli.frontends.terminal.host import SessionHost
from kimi_cli.session.store import SessionInfo, list_sessions
from kimi_cli.util.sanitize import visible_text

# `kimi -r` without an id: kimi_cli/cli/start.py spells the same value (tests/unit/test_headless_args.py checks)
PICK = "@pick"
SHOWN = 15
QUESTION = "resume which? number or id (Enter: none) › "
PICKER = "resume which?"


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


def labels(infos: list[SessionInfo]) -> list[str]:
    """The picker's lines: the aligned rows of `kimi sessions`, newest first."""
    return rows(infos, year=False)


async def pick_session_async(app: SessionHost, exclude: str = "") -> str | None:
    infos = choices(app.runtime.workdir, exclude)
    if not infos:
        app.console.print("no other session in this folder to resume")
        return None
    index = await app.ask_pick(PICKER, labels(infos))
    return None if index is None else infos[index].id


def pick_session(workspace: Path) -> str | None:
    """Before the session starts (`kimi -r`): the picker on a terminal; a numbered list and a line otherwise."""
    console = Console(highlight=False, markup=False, emoji=False)
    infos = choices(workspace)
    if not infos:
        console.print(Text("no session in this folder to resume; starting a new one", style="yellow"))
        return None
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print_choices(console, infos)
        sys.stdout.write(QUESTION)
        sys.stdout.flush()
        return chosen(sys.stdin.readline(), infos)
    index = pick_once(PICKER, labels(infos))
    return None if index is None else infos[index].id


def pick_once(question: str, lines: list[str], selected: int = 0) -> int | None:
    """One picker as a prompt of its own (no session running yet): the index picked, None on Esc or Ctrl-C."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.key_binding import KeyBindings

    from kimi_cli.frontends.terminal.choose import Choices

    state = Choices(lines, selected)
    prompt: PromptSession[str] = PromptSession(erase_when_done=True)
    kb = KeyBindings()

    @kb.add("up")
    @kb.add("c-p")
    def _up(event: object) -> None:
        state.move(-1, prompt.default_buffer.text)

    @kb.add("down")
    @kb.add("c-n")
    @kb.add("tab")
    def _down(event: object) -> None:
        state.move(1, prompt.default_buffer.text)

    @kb.add("enter")
    def _enter(event: object) -> None:
        index = state.picked(prompt.default_buffer.text)
        if index is not None:
            prompt.app.exit(result=str(index))

    @kb.add("escape", eager=True)
    @kb.add("c-c")
    @kb.add("c-d")
    def _cancel(event: object) -> None:
        prompt.app.exit(result="")

    def message() -> FormattedText:
        width = prompt.app.output.get_size().columns
        return FormattedText([*state.fragments(prompt.default_buffer.text, width), ("bold", f"{question} › ")])

    try:
        answer = prompt.prompt(message, key_bindings=kb)
    except (KeyboardInterrupt, EOFError):
        return None
    if not answer.isdigit():
        return None
    sys.stdout.write(f"{question} {visible_text(lines[int(answer)], one_line=True).plain}\n")
    return int(answer)
