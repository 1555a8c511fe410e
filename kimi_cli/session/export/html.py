"""The HTML export: one self-contained page. Its CSS and script are inline and named by hash in a
Content-Security-Policy that allows nothing else (no network, no other script, no remote image), so the
page works offline and text from the session can never run or load anything: every string is escaped, and
Markdown is rendered with raw HTML and images off.

Collapsible steps (<details>), diffs and arguments highlighted with Pygments, a search box that filters the
steps, and the plots of kimi_cli.session.export.plots.
"""

from __future__ import annotations

import base64
import hashlib
import time
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from kimi_cli import __version__
from kimi_cli.session.export.model import Approval, SessionExport, Step, ToolCallView, Turn
from kimi_cli.session.export.plots import plots
from kimi_cli.util.sanitize import visible

RESULT_CHARS = 60_000  # a longer tool result is cut in the page (the JSON export keeps it whole)
HIGHLIGHT_CHARS = 200_000  # past this a diff is shown plain: highlighting it would take long


def render_html(export: SessionExport) -> str:
    css, script = _asset("page.css") + _pygments_css(), _asset("page.js")
    policy = (
        f"default-src 'none'; style-src '{_digest(css)}'; script-src '{_digest(script)}'; img-src data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    totals = export.totals()
    title = _one_line(export.title) or "kimi session"
    body = [
        "<header>",
        f"<h1>{_e(title)}</h1>",
        _facts(export, totals),
        '<div class="tools-bar"><input id="search" type="search" placeholder="Search prompts, answers, tools, '
        'output…" aria-label="search"><span id="search-count"></span>'
        '<button id="expand" type="button">Expand all</button><button id="collapse" type="button">Collapse all'
        "</button></div>",
        "</header>",
        "<main>",
        f'<section class="plots" aria-label="plots">{plots(export)}</section>',
    ]
    body += [_turn(turn, export.rates.priced) for turn in export.turns]
    body.append("</main>")
    body.append(
        f"<footer>Exported by kimi {_e(__version__)} on {_e(time.strftime('%Y-%m-%d %H:%M'))}. "
        f"Secrets that kimi recognises are hidden. Prices: {_e(export.rates.source)}.</footer>"
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(policy)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)} · kimi</title><style>{css}</style></head>\n"
        f'<body data-session="{_e(export.id)}" data-steps="{totals["steps"]}">\n'
        + "\n".join(body)
        + f"\n<script>{script}</script>\n</body></html>\n"
    )


def _facts(export: SessionExport, totals: dict[str, Any]) -> str:
    tokens = totals["tokens"]
    money = f"${totals['cost_usd']:.4f}" if export.rates.priced else "n/a (no price for this model)"
    items = [
        ("session", export.id),
        ("model", export.model or "?"),
        ("status", export.status),
        ("steps", str(totals["steps"])),
        ("turns", str(totals["turns"])),
        ("tokens", f"{tokens['uncached']:,} uncached + {tokens['cached']:,} cached in, {tokens['output']:,} out"),
        ("cost", money),
        ("tool calls", f"{totals['tool_calls']} ({totals['tool_errors']} failed)"),
        ("retries", str(totals["retries"])),
        ("compactions", str(totals["compactions"])),
        ("model time", f"{totals['model_s']:.1f} s"),
        ("tool time", f"{totals['tools_s']:.1f} s"),
    ]
    if export.workspace:
        items.append(("workspace", export.workspace))
    if export.created:
        items.append(("started", time.strftime("%Y-%m-%d %H:%M", time.localtime(export.created))))
    if export.git.get("branch"):
        items.append(("branch", str(export.git["branch"])))
    if export.subagent_runs:
        items.append(("subagents", str(export.subagent_runs)))
    if export.skipped_lines:
        items.append(("unreadable log lines", f"{export.skipped_lines} skipped (a crash mid-write)"))
    shown = "".join(f"<li>{_e(k)} <b>{_e(_one_line(v))}</b></li>" for k, v in items)
    return f'<ul class="facts">{shown}</ul>'


def _turn(turn: Turn, priced: bool) -> str:
    parts = [f'<section class="turn" id="turn-{turn.number}" data-turn="{turn.number}">']
    when = f" · {time.strftime('%H:%M:%S', time.localtime(turn.time))}" if turn.time else ""
    parts.append(f"<h2>Turn {turn.number}{_e(when)}</h2>")
    parts.append(
        f'<div class="prompt"><div class="who">You</div><div class="answer">{markdown(turn.prompt)}</div></div>'
    )
    for note in turn.notes:
        parts.append(_fold("note the session added", f"<pre>{_e(note)}</pre>"))
    parts += [_step(step, priced) for step in turn.steps]
    if turn.end is not None and turn.end.reason not in ("done", ""):
        message = f": {_e(turn.end.message)}" if turn.end.message else ""
        parts.append(
            f'<div class="alert">The turn ended: <b>{_e(turn.end.reason)}</b> '
            f"(exit {turn.end.exit_code}){message}</div>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def _step(step: Step, priced: bool) -> str:
    out = []
    if step.compaction is not None:
        c = step.compaction
        out.append(
            f'<div class="compaction">Compaction before step {step.number}: {c.tokens_before:,} tokens, '
            f"{c.messages_before} messages → {c.messages_after}</div>"
        )
    usage = step.usage
    cost = f"${step.cost_usd:.4f}" if priced else "cost n/a"
    gist = step.text.strip().splitlines()[0] if step.text.strip() else ", ".join(c.name for c in step.calls)
    failed = sum(1 for c in step.calls if c.is_error or c.result is None)
    badges = "".join(
        (
            f'<span class="badge err">{failed} failed</span>' if failed else "",
            f'<span class="badge warn">{len(step.retries)} retr{"y" if len(step.retries) == 1 else "ies"}</span>'
            if step.retries
            else "",
            '<span class="badge warn">unfinished</span>' if not step.finished else "",
            '<span class="badge err">error</span>' if step.errors else "",
        )
    )
    is_answer = bool(step.text) and not step.calls
    out.append(
        f'<details class="step" id="step-{step.number}" data-step="{step.number}"{" open" if is_answer else ""}>'
        f'<summary><span class="step-n">Step {step.number}</span>'
        f'<span class="meta">{usage.uncached:,} + {usage.cached:,} cached in · {usage.output:,} out · {cost} · '
        f"{step.model_ms / 1000:.2f} s model · {step.tools_ms / 1000:.2f} s tools</span>"
        f'<span class="gist">{_e(_one_line(gist)[:200])}</span>{badges}</summary><div class="step-body">'
    )
    for retry in step.retries:
        out.append(f'<div class="retry">retry {retry.attempt} after {retry.wait_s:g} s: {_e(retry.error)}</div>')
    if step.reasoning:
        out.append(_fold("reasoning", f'<div class="answer">{markdown(step.reasoning)}</div>'))
    if step.text:
        out.append(f'<div class="who">kimi</div><div class="answer">{markdown(step.text)}</div>')
    out += [_call(call) for call in step.calls]
    out += [_approval(a) for a in step.approvals]
    out += [f'<div class="alert">error: {_e(error)}</div>' for error in step.errors]
    out += [f'<div class="note">note: {_e(notice)}</div>' for notice in step.notices]
    out += [_fold("note the session added", f"<pre>{_e(note)}</pre>") for note in step.notes]
    out.append("</div></details>")
    return "\n".join(out)


def _call(call: ToolCallView) -> str:
    if call.result is None:
        badge = '<span class="badge warn">no result (interrupted)</span>'
    elif call.is_error:
        badge = '<span class="badge err">error</span>'
    else:
        badge = '<span class="badge ok">ok</span>'
    exit_code = (
        f'<span class="badge{" err" if call.exit_code else ""}">exit {call.exit_code}</span>'
        if call.exit_code is not None
        else ""
    )
    asked = "".join(
        f'<span class="badge">{_e(a.outcome)}{": " + _e(a.answer) if a.answer else ""}</span>' for a in call.approvals
    )
    parts = [
        f'<details class="call{" error" if call.is_error else ""}" data-call="{_e(call.id)}"><summary>'
        f'<span class="tool">{_e(call.name)}</span> <code>{_e(_one_line(call.title)[:200])}</code>'
        f'{badge}{exit_code}{asked}<span class="meta"> {call.duration_ms:.0f} ms</span></summary><div>',
        f"<h4>Arguments</h4>{highlighted(call.arguments, 'json')}",
    ]
    parts += [_approval(a) for a in call.approvals]
    if call.diff:
        parts.append(f"<h4>Diff</h4>{highlighted(call.diff, 'diff')}")
    if call.result is not None and call.result != call.diff:
        result = call.result if len(call.result) <= RESULT_CHARS else call.result[:RESULT_CHARS] + "\n[cut]"
        parts.append(f"<h4>Result</h4><pre>{_e(visible(result, drop_colors=True))}</pre>")
    parts.append("</div></details>")
    return "".join(parts)


def _approval(approval: Approval) -> str:
    answer = f", the user said <b>{_e(approval.answer)}</b>" if approval.answer else ""
    reason = f": {_e(approval.reason)}" if approval.reason else ""
    return (
        f'<div class="approval">approval ({_e(approval.kind)}): <b>{_e(approval.outcome)}</b>{answer}{reason}'
        f"<br><code>{_e(approval.subject[:400])}</code></div>"
    )


def _fold(summary: str, body: str) -> str:
    return f'<details class="fold"><summary>{_e(summary)}</summary><div>{body}</div></details>'


def _e(text: str) -> str:
    return escape(visible(str(text)), quote=True)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


@cache
def _asset(name: str) -> str:
    return resources.files("kimi_cli.session.export").joinpath(name).read_text(encoding="utf-8")


@cache
def _pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    light = HtmlFormatter(style="default").get_style_defs(".hl")
    dark = HtmlFormatter(style="monokai").get_style_defs(".hl")
    return f"\n{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"


def highlighted(text: str, language: str) -> str:
    """`text` in a <pre class="hl"> with Pygments' token classes (no inline style: the policy allows none)."""
    if len(text) > HIGHLIGHT_CHARS:
        return f"<pre>{_e(text)}</pre>"
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        return f"<pre>{_e(text)}</pre>"
    inner = highlight(visible(text, drop_colors=True), lexer, HtmlFormatter(nowrap=True))
    return f'<pre class="hl">{inner}</pre>'


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")  # an image would be fetched when the page opens
    md.options["highlight"] = lambda code, lang, _attrs: highlighted(code, lang) if lang and _has_lexer(lang) else ""
    return md


def _has_lexer(language: str) -> bool:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        get_lexer_by_name(language)
    except ClassNotFound:
        return False
    return True


def markdown(text: str) -> str:
    """Markdown from the user or the model as HTML: raw HTML is escaped, images are not loaded, link
    targets are limited to what markdown-it deems safe (no javascript:, no data: but images)."""
    return str(_markdown().render(visible(text)))
