"""What a resumed session shows first (its last exchanges), and what is printed on exit (how to resume).

The user's prompts are found by the session's `turn` records (one per prompt), so change notes, image
notes and resume notes, which are also user-role messages, never pass for something the user said.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from kimi_cli.frontends.figures import short_tokens
from kimi_cli.frontends.terminal.status import money
from kimi_cli.session.store import Session, list_sessions
from kimi_cli.util.sanitize import visible_text

EXCHANGES = 2
ANSWER_CHARS = 400


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        images = sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
        return " ".join(texts) + (f" [{images} image{'s' if images != 1 else ''}]" if images else "")
    return ""


def _norm(text: str) -> str:
    return " ".join(text.split())[:200]


def exchanges(messages: list[dict[str, Any]], prompts: list[str], count: int = EXCHANGES) -> list[tuple[str, str]]:
    """The last `count` (prompt, answer) pairs. `prompts`: the turn records' prompt texts; without any
    (an old session), every user message with plain text counts."""
    wanted = {_norm(p) for p in prompts}
    starts = [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user"
        and _text(m.get("content")).strip()
        and (_norm(_text(m.get("content"))) in wanted if wanted else not _text(m.get("content")).startswith("["))
    ]
    pairs: list[tuple[str, str]] = []
    for n, start in enumerate(starts[-count:]):
        index = len(starts) - min(count, len(starts)) + n
        end = starts[index + 1] if index + 1 < len(starts) else len(messages)
        answer = ""
        for message in messages[start + 1 : end]:
            if message.get("role") == "assistant" and _text(message.get("content")).strip():
                answer = _text(message.get("content"))
        pairs.append((_text(messages[start].get("content")), answer))
    return pairs


def recap(session: Session, messages: list[dict[str, Any]], priced: bool, cost: float) -> RenderableType:
    """`resumed session ID · 12 steps · 45.2k tokens · $0.123`, then the last exchange or two."""
    usage = session.usage
    tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
    steps = int(session.meta.get("steps", 0))
    head = f"resumed session {session.id} · {steps} step{'s' if steps != 1 else ''} · {short_tokens(tokens)} tokens"
    head += f" · {money(cost)}" if priced else ""
    prompts = [str(r.get("prompt", "")) for r in session.records() if r.get("kind") == "turn"]
    lines: list[RenderableType] = [Text(head, style="bold")]
    pairs = exchanges(messages, prompts)
    if not pairs:
        lines.append(Text("(no exchanges yet)", style="dim"))
    for prompt, answer in pairs:
        lines.append(_line("you", prompt, "bold"))
        if answer:
            lines.append(_line("kimi", answer, "dim"))
    return Group(*lines)


def _line(who: str, text: str, style: str) -> Text:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= ANSWER_CHARS else flat[: ANSWER_CHARS - 1] + "…"
    return Text(f"  {who}: ", style="cyan").append_text(visible_text(flat, style))


def resume_hint(session: Session) -> str:
    """`resume with: kimi --continue` when it is the latest session here, else with its id."""
    workspace_sessions = list_sessions_for(session)
    latest = workspace_sessions[0].id if workspace_sessions else ""
    if latest == session.id:
        return "resume with: kimi --continue"
    return f"resume with: kimi --resume {session.id}"


def list_sessions_for(session: Session) -> list[Any]:
    from pathlib import Path

    workspace = session.meta.get("workspace")
    return list_sessions(Path(workspace)) if workspace else []
