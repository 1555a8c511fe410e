"""Session lists as `kimi sessions`, `/sessions` and `/resume` show them: one aligned row per session, the
failed runs (a headless run that ended in an error, often with no step at all) marked and left out unless
asked for.

Columns are sized to the rows shown, so a long status (`provider_unavailable`) moves no other column.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kimi_cli.frontends.figures import short_tokens
from kimi_cli.session.store import SessionInfo

FAILED = ("error", "provider_unavailable", "usage_error")
FAILED_MARK = "✗"


def is_failed(info: SessionInfo) -> bool:
    return info.status in FAILED


def visible_sessions(infos: Sequence[SessionInfo], show_all: bool) -> tuple[list[SessionInfo], int]:
    """The sessions to list, and how many failed runs were left out."""
    if show_all:
        return list(infos), 0
    kept = [i for i in infos if not is_failed(i)]
    return kept, len(infos) - len(kept)


def hidden_note(hidden: int, how: str = "--all") -> str:
    return f"{hidden} failed run{'s' if hidden != 1 else ''} not listed ({how} lists them)" if hidden else ""


def rows(infos: Sequence[SessionInfo], *, numbered: bool = False, current: str = "", year: bool = True) -> list[str]:
    """One line per session: `[*N]  id  when  status  N steps  N tokens  title`, columns aligned."""
    cells = []
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M" if year else "%m-%d %H:%M", time.localtime(info.updated))
        status = f"{FAILED_MARK} {info.status}" if is_failed(info) else f"  {info.status}"
        steps = f"{info.steps} step{'s' if info.steps != 1 else ''}"
        cells.append((info.id, when, status, steps, f"{short_tokens(info.tokens)} tokens", info.title))
    widths = [max((len(c[k]) for c in cells), default=0) for k in range(5)]
    out = []
    for number, (sid, when, status, steps, tokens, title) in enumerate(cells, start=1):
        head = ""
        if numbered:
            head = f"{'*' if infos[number - 1].id == current else ' '}{number:>2}  "
        out.append(
            f"{head}{sid:<{widths[0]}}  {when:<{widths[1]}} {status:<{widths[2]}}  {steps:>{widths[3]}}  "
            f"{tokens:>{widths[4]}}  {title}".rstrip()
        )
    return out
