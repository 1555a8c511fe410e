"""Subagents: the same agent loop on a fresh context, for the subagent tool.

A subagent gets the session's prefix (system prompt, AGENTS.md, skills), a pack ranked for its own task
within a smaller budget, and its kind's part at the end. Its tools are those of its kind: explore (every
tool whose facts say it only reads), coder (every tool but the subagent tool), or a custom kind from
`.kimi/agents/*.md` (front matter: name, description, tools, isolation; the body is the kind's part of the
prompt). `isolation: worktree` runs each of its subagents in its own git worktree (kimi_cli.agent.subagents.isolated).
Its steps are logged in the parent's session as a nested run; the parent sees only the final report.
Its usage adds to the parent's. Edits to the same file by two subagents are serialized (kimi_cli.tools.file_lock).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.llm.types import Message
from kimi_cli.tools.base import Tool, ToolFacts

REPORT_CAP = 8000
SUB_MAX_STEPS = 150
SUB_BUDGET_SHARE = 0.25  # of the main pack budget
REPORT_RULE = (
    "You are a subagent: another agent gave you this task and will read only your final answer. Finish the "
    "task, then answer with a concise report (at most about 300 words): what you found or changed, with "
    "file paths and line numbers, and anything left undone."
)


@dataclass
class AgentKind:
    name: str
    description: str
    tools: list[str] | None  # names from the kind's file; None: every tool the session gives subagents
    prompt: str = ""
    read_only: bool = False  # only tools whose declared facts say they change nothing
    isolation: str | None = None  # "worktree": each run in its own git worktree, merged back at its end

    def allows(self, tool: Tool[Any]) -> bool:
        if self.tools is not None and tool.name not in self.tools:
            return False
        return not self.read_only or tool.declared().read_only

    def mode(self) -> str:
        """The kind's part of the system message, appended after the shared prefix and the pack."""
        return REPORT_RULE + (f"\n\n{self.prompt}" if self.prompt else "")

    def facts(self, tools: list[Tool[Any]]) -> ToolFacts:
        """What a subagent of this kind may do: what its tools may do together."""
        return ToolFacts.union(t.declared() for t in tools if self.allows(t))


def builtin_kinds() -> dict[str, AgentKind]:
    return {
        "explore": AgentKind("explore", "read-only study", None, read_only=True),
        "coder": AgentKind("coder", "edits and commands", None),
    }


def custom_kinds(workdir: Path) -> dict[str, AgentKind]:
    """`.kimi/agents/*.md`: `---` front matter (name, description, tools: [a, b]) then the system prompt."""
    kinds: dict[str, AgentKind] = {}
    from kimi_cli.context.agents_md import read_instructions

    for path in sorted((workdir / ".kimi" / "agents").glob("*.md")):
        text = read_instructions(workdir.resolve(), path)  # a link out of the workspace is never read
        if text is None:
            continue
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
        isolation = meta.get("isolation", "").strip("'\"") or None
        kinds[name] = AgentKind(name, meta.get("description", ""), tools, match.group(2).strip(), isolation=isolation)
    return kinds


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
