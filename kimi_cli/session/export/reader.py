"""Reading any session's folder (meta.json and context.jsonl) into the export model, whatever state the log is
in: a finished session, an interrupted one (a step with no end, a call with no result), a crashed one whose
last line is torn, one written before turn or approval events existed.

The log is append-only and holds more than the conversation: after a `truncate` record (compaction, a
repair on resume) the new history is appended again, so the messages that follow one are a replay, not new
turns; an undo's truncate cuts the conversation, and the export says so where it happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimi_cli.session.export.model import (
    Approval,
    Compaction,
    Rates,
    Retry,
    SessionExport,
    Step,
    ToolCallView,
    Turn,
    TurnEnd,
    Usage,
)
from kimi_cli.session.export.redaction import redact_tree
from kimi_cli.session.store import LOG_NAME, read_log, read_meta

TITLE_KEYS = ("command", "path", "pattern", "url", "query", "task", "file_path", "directory")


def load(folder: Path, rates: Rates | None = None) -> SessionExport:
    """The export model of the session in `folder`, every string redacted."""
    meta = read_meta(folder) or {}
    records, skipped = read_log(folder / LOG_NAME)
    export = build(meta, records, rates or rates_for_meta(meta), folder.name)
    export.skipped_lines = skipped
    return redact_tree(export)


def rates_for_meta(meta: dict[str, Any]) -> Rates:
    """The prices of the session's model (the model table, the user's [pricing] and [models] overrides)."""
    from kimi_cli.llm.costs import rates_for
    from kimi_cli.llm.models import lookup

    pricing, overrides = _user_pricing()
    info = lookup(str(meta.get("model") or ""), str(meta.get("provider") or ""), overrides)
    found = rates_for(info, pricing)
    return Rates(found.input, found.cached_input, found.output, found.source, found.priced)


def _user_pricing() -> tuple[Any, dict[str, dict[str, Any]]]:
    """[pricing] and [models] of the user's own config; a config that does not load prices by the table."""
    try:
        from kimi_cli.config import Config
        from kimi_cli.hostsafe.settings_read import read_settings_text
        from kimi_cli.util.paths import kimi_home

        path = kimi_home() / "config.toml"
        if not path.is_file():
            return None, {}
        import tomllib

        config = Config.model_validate(tomllib.loads(read_settings_text(path)))
    except Exception:
        return None, {}
    return config.pricing, {k: v.model_dump(exclude_none=True) for k, v in config.models.items()}


def build(meta: dict[str, Any], records: list[dict[str, Any]], rates: Rates, fallback_id: str = "") -> SessionExport:
    export = SessionExport(
        id=str(meta.get("id") or fallback_id),
        title=str(meta.get("title", "")),
        workspace=str(meta.get("workspace", "")),
        model=str(meta.get("model", "")),
        provider=str(meta.get("provider", "")),
        created=_num(meta.get("created")),
        updated=_num(meta.get("updated")),
        status=str(meta.get("status", "?")),
        git=_table(meta.get("git")),
        rates=rates,
    )
    _Builder(export).feed(records)
    return export


class _Builder:
    def __init__(self, export: SessionExport) -> None:
        self.export = export
        self.turn: Turn | None = None
        self.step: Step | None = None
        self.calls: dict[str, ToolCallView] = {}
        self.replaying = False  # messages after a truncate repeat the history
        self.pending_compaction: Compaction | None = None
        self.awaiting_prompt = ""  # the turn record's prompt, until its user message comes
        self.subagent_runs: set[str] = set()
        self.early_notices: list[str] = []  # told before any turn began; they go on the first step

    def feed(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            kind = record.get("kind")
            if kind != "message":
                self.replaying = False
            if kind == "message" and isinstance(record.get("message"), dict):
                if not self.replaying:
                    self.message(record["message"])
            elif kind == "event" and isinstance(record.get("event"), dict):
                self.event(record["event"])
            elif kind == "turn":
                self.new_turn(str(record.get("prompt", "")), _num(record.get("time")))
                self.awaiting_prompt = str(record.get("prompt", "")) or " "
            elif kind == "truncate":
                self.truncate(str(record.get("reason", "")))
            elif kind == "subagent":
                self.subagent(record)
        self.export.subagent_runs = len(self.subagent_runs)

    # --- turns and steps ------------------------------------------------------------------------------------

    def new_turn(self, prompt: str, when: float = 0.0) -> Turn:
        self.turn = Turn(len(self.export.turns) + 1, prompt, when)
        self.export.turns.append(self.turn)
        self.step = None
        return self.turn

    def current_turn(self) -> Turn:
        return self.turn if self.turn is not None else self.new_turn("")

    def new_step(self) -> Step:
        turn = self.current_turn()
        self.step = Step(len(self.export.steps) + 1, turn.number)
        self.step.compaction, self.pending_compaction = self.pending_compaction, None
        self.step.notices, self.early_notices = self.early_notices, []
        turn.steps.append(self.step)
        self.awaiting_prompt = ""
        return self.step

    def current_step(self) -> Step:
        return self.step if self.step is not None else self.new_step()

    # --- records ----------------------------------------------------------------------------------------------

    def message(self, message: dict[str, Any]) -> None:
        role = message.get("role")
        if role == "user":
            self.user(_content_text(message.get("content")))
        elif role == "assistant":
            step = self.current_step()
            step.text = (step.text + "\n\n" if step.text else "") + _content_text(message.get("content"))
            step.text = step.text.strip("\n")
            reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
            if isinstance(reasoning, str) and reasoning:
                step.reasoning = (step.reasoning + "\n\n" + reasoning).strip("\n")
            for raw in message.get("tool_calls") or []:
                if isinstance(raw, dict):
                    fn = _table(raw.get("function"))
                    self.call(str(raw.get("id", "")), str(fn.get("name", "")), str(fn.get("arguments") or ""))
        elif role == "tool":
            view = self.calls.get(str(message.get("tool_call_id", "")))
            if view is not None and view.result is None:  # a log written before tool_result events
                view.result = _content_text(message.get("content"))

    def user(self, text: str) -> None:
        """A user-role message: the prompt a turn record announced, else a note the session gave the model
        (a resume note, hook context, a mode change, what changed after tools). In a log without turn
        records (older sessions), a message before any step starts a turn."""
        if self.awaiting_prompt and _same_start(text, self.awaiting_prompt):
            self.current_turn().prompt = text
            self.awaiting_prompt = ""
        elif self.turn is None:
            self.new_turn(text)
        elif self.step is None:
            self.turn.notes.append(text)
        else:
            self.step.notes.append(text)

    def call(self, call_id: str, name: str, arguments: str) -> ToolCallView:
        view = self.calls.get(call_id)
        if view is None:
            view = ToolCallView(call_id, name, title_of(name, arguments), pretty_json(arguments))
            self.calls[call_id] = view
            self.current_step().calls.append(view)
        return view

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "step_begin":
            self.new_step()
        elif kind == "usage":
            self.usage(event.get("usage"))
        elif kind == "retry":
            self.current_step().retries.append(
                Retry(int(_num(event.get("attempt"))), _num(event.get("wait_s")), str(event.get("error", "")))
            )
        elif kind == "tool_call":
            self.call(str(event.get("id", "")), str(event.get("name", "")), str(event.get("arguments", "")))
        elif kind == "tool_result":
            self.result(event)
        elif kind == "approval":
            self.approval(event)
        elif kind == "step_end":
            step = self.current_step()
            step.model_ms, step.tools_ms = _num(event.get("model_ms")), _num(event.get("tools_ms"))
            step.finished = True
        elif kind == "compacted":
            self.pending_compaction = Compaction(
                int(_num(event.get("tokens_before"))),
                int(_num(event.get("messages_before"))),
                int(_num(event.get("messages_after"))),
            )
        elif kind == "error":
            self.where().errors.append(str(event.get("message", "")))
        elif kind == "notice":
            if self.turn is None:  # a start notice (withheld variables) before the first turn: on its first step
                self.early_notices.append(str(event.get("message", "")))
            else:
                self.where().notices.append(str(event.get("message", "")))
        elif kind in ("turn_end", "finished"):
            turn = self.current_turn()
            if turn.end is None or kind == "turn_end":
                turn.end = TurnEnd(
                    str(event.get("reason", "")), int(_num(event.get("exit_code"))), str(event.get("message", ""))
                )

    def where(self) -> Step:
        return self.current_step()

    def usage(self, raw: Any) -> None:
        step = self.current_step()
        step.usage = _usage(raw)
        step.cost_usd = round(step.cost_usd + _cost(step.usage, self.export.rates), 9)

    def result(self, event: dict[str, Any]) -> None:
        view = self.call(str(event.get("id", "")), str(event.get("name", "")), "")
        view.result = str(event.get("output", ""))
        view.is_error = bool(event.get("is_error"))
        view.duration_ms = _num(event.get("duration_ms"))
        display = _table(event.get("display"))
        if isinstance(display.get("exit_code"), int):
            view.exit_code = display["exit_code"]
        if display.get("kind") == "diff" and isinstance(display.get("diff"), str):
            view.diff = display["diff"]
        elif looks_like_diff(view.result):
            view.diff = view.result

    def approval(self, event: dict[str, Any]) -> None:
        decided = Approval(
            str(event.get("kind", "")),
            str(event.get("subject", "")),
            str(event.get("outcome", "")),
            str(event.get("answer", "")),
            str(event.get("reason", "")),
        )
        view = self.calls.get(str(event.get("call_id", "")))
        (view.approvals if view is not None else self.current_step().approvals).append(decided)

    def truncate(self, reason: str) -> None:
        self.replaying = reason in ("compaction", "repair") or reason.startswith("compact")
        if reason == "undo":
            self.where().notices.append("undo: the files were put back and the conversation cut here")

    def subagent(self, record: dict[str, Any]) -> None:
        self.subagent_runs.add(str(record.get("run", "")))
        event = record.get("event")
        if isinstance(event, dict) and event.get("type") == "usage":
            usage = _usage(event.get("usage"))
            step = self.current_step()
            step.subagent_usage = Usage(
                step.subagent_usage.uncached + usage.uncached,
                step.subagent_usage.cached + usage.cached,
                step.subagent_usage.output + usage.output,
            )
            step.cost_usd = round(step.cost_usd + _cost(usage, self.export.rates), 9)


# --- helpers ----------------------------------------------------------------------------------------------------


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _usage(raw: Any) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    prompt = int(_num(raw.get("prompt_tokens")))
    cached = min(int(_num(raw.get("cached_tokens"))), prompt)
    return Usage(prompt - cached, cached, int(_num(raw.get("completion_tokens"))))


def _cost(usage: Usage, rates: Rates) -> float:
    return (usage.uncached * rates.input + usage.cached * rates.cached_input + usage.output * rates.output) / 1e6


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif part.get("type") == "image_url":
                parts.append("[image]")
        return "\n".join(parts)
    return ""


def _norm(text: str) -> str:
    return " ".join(text.split())


def _same_start(text: str, prompt: str) -> bool:
    """The turn record keeps the prompt's first 200 characters, spaces folded."""
    wanted = _norm(prompt)[:200]
    return bool(wanted) and _norm(text)[: len(wanted)] == wanted


def pretty_json(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def title_of(name: str, arguments: str) -> str:
    """One line naming what a call did: the command, the path, the pattern."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        args = {}
    if isinstance(args, dict):
        for key in TITLE_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                first = value.strip().splitlines()[0]
                shown = first if len(first) <= 160 else first[:159] + "…"
                return f"$ {shown}" if key == "command" else shown
    flat = " ".join(arguments.split())
    return flat if len(flat) <= 120 else flat[:119] + "…"


def looks_like_diff(text: str | None) -> bool:
    if not text:
        return False
    head = text.lstrip()[:400]
    return head.startswith(("diff --git ", "--- a/")) or ("\n+++ b/" in head and "\n@@ " in text[:4000])
