"""Subagents: the same agent loop on a fresh context, for the Agent tool.

A subagent gets the system prompt, AGENTS.md and a pack ranked for its own task within a smaller budget,
and the tools of its kind: explore (read-only), coder (all but Agent), or a custom kind from
`.kimi/agents/*.md` (front matter: name, description, tools; the body is added to the system prompt).
Its steps are logged in the parent's session as a nested run; the parent sees only the final report.
Its usage adds to the parent's. Edits to the same file by two subagents are serialized.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.llm.types import Message

REPORT_CAP = 8000
SUB_MAX_STEPS = 150
SUB_BUDGET_SHARE = 0.25  # of the main pack budget
READ_ONLY = ("ReadFile", "Glob", "Grep", "ReadMediaFile", "SetTodoList", "FetchURL")
REPORT_RULE = (
    "You are a subagent: another agent gave you this task and will read only your final answer. Finish the "
    "task, then answer with a concise report (at most about 300 words): what you found or changed, with "
    "file paths and line numbers, and anything left undone."
)


@dataclass
class AgentKind:
    name: str
    description: str
    tools: list[str] | None  # None: every tool but Agent
    prompt: str = ""


def builtin_kinds() -> dict[str, AgentKind]:
    return {
        "explore": AgentKind("explore", "read-only study", list(READ_ONLY)),
        "coder": AgentKind("coder", "edits and commands", None),
    }


def custom_kinds(workdir: Path) -> dict[str, AgentKind]:
    """`.kimi/agents/*.md`: `---` front matter (name, description, tools: [a, b]) then the system prompt."""
    kinds: dict[str, AgentKind] = {}
    for path in sorted((workdir / ".kimi" / "agents").glob("*.md")):
        text = path.read_text(errors="replace")
        match = re.match(r"^---\s*\n(.*?)\n---\s*\n?(.*)$", text, re.DOTALL)
        if not match:
            continue
        meta: dict[str, str] = {}
        for line in match.group(1).splitlines():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
        name = meta.get("name") or path.stem
        tools_raw = meta.get("tools", "").strip("[] ")
        tools = [t.strip().strip("'\"") for t in tools_raw.split(",") if t.strip()] or None
        kinds[name] = AgentKind(name, meta.get("description", ""), tools, match.group(2).strip())
    return kinds


@dataclass
class FileLocks:
    """One lock per path, so two coder subagents never edit one file at once."""

    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def get(self, path: str) -> asyncio.Lock:
        return self.locks.setdefault(path, asyncio.Lock())


class NestedRecorder:
    """Logs a subagent's messages and events into the parent session, marked with its run id."""

    def __init__(self, session: Any, run_id: str) -> None:
        self.session = session
        self.run_id = run_id

    def append_message(self, message: Message) -> None:
        self.session.append({"kind": "subagent", "run": self.run_id, "message": message})

    def replace_history(self, messages: list[Message], reason: str) -> None:
        self.session.append({"kind": "subagent", "run": self.run_id, "replaced": reason})

    def append_event(self, event: dict[str, Any]) -> None:
        self.session.append({"kind": "subagent", "run": self.run_id, "event": event})

    def end_step(self, steps: int) -> None:
        return None


_ids = itertools.count(1)


def next_run_id() -> str:
    return f"sub-{next(_ids)}"


def final_report(text: str, reason: str, message: str) -> str:
    report = text.strip() or "(the subagent gave no report)"
    if reason != "done":
        report += f"\n[the subagent stopped early: {reason}{': ' + message if message else ''}]"
    if len(report) > REPORT_CAP:
        report = report[:REPORT_CAP] + "\n[report cut]"
    return report
