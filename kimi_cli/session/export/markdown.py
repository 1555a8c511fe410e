"""The Markdown export: prompts and answers as Markdown, everything else folded in <details> blocks
(reasoning, each tool call with its arguments and result, diffs), approvals, retries, errors, compactions,
and tokens and cost per step. GitHub, GitLab and most viewers fold <details>; plain text stays readable.

Untrusted text (answers, tool output) is written with its control characters made visible (the file may be
`cat` to a terminal), and code goes in fences longer than any backtick run inside it.
"""

from __future__ import annotations

import re
import time
from html import escape

from kimi_cli.session.export.model import SessionExport, Step, ToolCallView
from kimi_cli.util.sanitize import visible

RESULT_CHARS = 20_000  # a tool result longer than this is cut in the Markdown (the JSON keeps it whole)


def render_markdown(export: SessionExport) -> str:
    out: list[str] = []
    totals = export.totals()
    out.append(f"# {_line(export.title) or 'kimi session'}\n")
    tokens = totals["tokens"]
    facts = [
        f"session `{export.id}`",
        f"model {export.model or '?'}",
        f"status {export.status}",
        f"{totals['steps']} steps",
        f"{tokens['uncached'] + tokens['cached'] + tokens['output']:,} tokens",
        _money(totals["cost_usd"], export.rates.priced),
    ]
    out.append("- " + " · ".join(_line(f) for f in facts))
    if export.workspace:
        out.append(
            f"- workspace `{_line(export.workspace)}`"
            + (f" · started {_when(export.created)}" if export.created else "")
        )
    if export.skipped_lines:
        out.append(f"- {export.skipped_lines} unreadable line(s) of the log skipped (a crash mid-write)")
    out.append("")
    for turn in export.turns:
        out.append(f"## Turn {turn.number}" + (f" · {_when(turn.time)}" if turn.time else "") + "\n")
        out.append("**You:**\n")
        out.append(_md(turn.prompt) + "\n")
        for note in turn.notes:
            out.append(_fold("note", _fence(note)))
        for step in turn.steps:
            out.extend(_step(step, export.rates.priced))
        if turn.end is not None and turn.end.reason not in ("done", ""):
            message = f": {_line(turn.end.message)}" if turn.end.message else ""
            out.append(f"> **The turn ended: {_line(turn.end.reason)}** (exit {turn.end.exit_code}){message}\n")
    return "\n".join(out).rstrip("\n") + "\n"


def _step(step: Step, priced: bool) -> list[str]:
    out: list[str] = []
    if step.compaction is not None:
        c = step.compaction
        out.append(f"> **Compaction:** {c.tokens_before:,} tokens, {c.messages_before} messages → {c.messages_after}\n")
    usage = step.usage
    head = (
        f"### Step {step.number} · {usage.uncached:,} uncached + {usage.cached:,} cached in · {usage.output:,} out"
        f" · {_money(step.cost_usd, priced)} · model {step.model_ms / 1000:.2f} s · tools {step.tools_ms / 1000:.2f} s"
    )
    out.append(head + ("" if step.finished else " · *unfinished*") + "\n")
    for retry in step.retries:
        out.append(f"> retry {retry.attempt} after {retry.wait_s:g} s: {_line(retry.error)}\n")
    if step.reasoning:
        out.append(_fold("reasoning", _md(step.reasoning)))
    if step.text:
        out.append("**kimi:**\n")
        out.append(_md(step.text) + "\n")
    for call in step.calls:
        out.append(_call(call))
    for approval in step.approvals:
        out.append(f"- approval ({_line(approval.kind)}): {_line(approval.outcome)} `{_line(approval.subject)[:200]}`")
    for error in step.errors:
        out.append(f"> **error:** {_line(error)}\n")
    for notice in step.notices:
        out.append(f"> note: {_line(notice)}\n")
    for note in step.notes:
        out.append(_fold("note the session added", _fence(note)))
    return out


def _call(call: ToolCallView) -> str:
    state = "no result (interrupted)" if call.result is None else ("error" if call.is_error else "ok")
    if call.exit_code is not None:
        state += f", exit {call.exit_code}"
    summary = f"{escape(call.name)}: {escape(_line(call.title)[:160])} · {state} · {call.duration_ms:.0f} ms"
    body = [f"Arguments:\n\n{_fence(call.arguments, 'json')}"]
    for approval in call.approvals:
        answer = f", the user said {approval.answer}" if approval.answer else ""
        why = f": {_line(approval.reason)}" if approval.reason else ""
        body.append(f"Approval ({_line(approval.kind)}): **{_line(approval.outcome)}**{answer}{why}")
    if call.diff:
        body.append(f"Diff:\n\n{_fence(call.diff, 'diff')}")
    if call.result is not None and call.diff != call.result:
        result = call.result if len(call.result) <= RESULT_CHARS else call.result[:RESULT_CHARS] + "\n[cut]"
        body.append(f"Result:\n\n{_fence(result)}")
    return _fold(summary, "\n\n".join(body), escaped=True)


def _fold(summary: str, body: str, escaped: bool = False) -> str:
    shown = summary if escaped else escape(summary)
    return f"<details><summary>{shown}</summary>\n\n{body}\n\n</details>\n"


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{visible(text, drop_colors=True)}\n{fence}"


def _md(text: str) -> str:
    """Markdown written by the model or the user, kept as Markdown; raw HTML in it is shown, not run."""
    return visible(text).replace("<", "&lt;")


def _line(text: str) -> str:
    return visible(" ".join(text.split()), one_line=True)


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _money(usd: float, priced: bool) -> str:
    return f"${usd:.4f}" if priced else "cost n/a"
