"""What an export shows of a session: its turns, each turn's steps, each step's request, answer, reasoning,
tool calls (with results, diffs and approvals), retries, notices, errors and compactions, and what it cost.

One model for every format (Markdown, JSON, HTML). It is built by kimi_cli.session.export.reader from the
session's log, and every string in it has been through the one redactor before a renderer sees it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Approval:
    kind: str  # shell | web | mcp | hook
    subject: str
    outcome: str  # allowed | refused
    answer: str = ""  # the user's: yes | always | save | no (empty: nobody was asked)
    reason: str = ""


@dataclass
class ToolCallView:
    id: str
    name: str
    title: str  # one line: `$ pytest -q`, `calc.py`, the pattern searched
    arguments: str  # the JSON the model sent, pretty-printed where it parses
    result: str | None = None  # None: no result was logged (a crash mid-call)
    is_error: bool = False
    duration_ms: float = 0.0
    exit_code: int | None = None
    diff: str = ""  # a unified diff the call made (file tools) or printed (git diff)
    approvals: list[Approval] = field(default_factory=list)


@dataclass
class Retry:
    attempt: int
    wait_s: float
    error: str


@dataclass
class Compaction:
    tokens_before: int
    messages_before: int
    messages_after: int


@dataclass
class Usage:
    uncached: int = 0
    cached: int = 0
    output: int = 0

    @property
    def total(self) -> int:
        return self.uncached + self.cached + self.output


@dataclass
class Step:
    number: int  # 1.. over the whole session (the loop counts per run)
    turn: int
    text: str = ""
    reasoning: str = ""
    calls: list[ToolCallView] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0  # this step's request, and the subagents its calls ran
    subagent_usage: Usage = field(default_factory=Usage)
    model_ms: float = 0.0
    tools_ms: float = 0.0
    retries: list[Retry] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the session told the model after this step's tools
    errors: list[str] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)  # decisions no call of this step claimed
    compaction: Compaction | None = None  # the history was compacted before this step's request
    finished: bool = False  # its step_end was logged (False: interrupted or crashed mid-step)


@dataclass
class TurnEnd:
    reason: str
    exit_code: int
    message: str = ""


@dataclass
class Turn:
    number: int
    prompt: str
    time: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the session told the model beside the prompt
    steps: list[Step] = field(default_factory=list)
    end: TurnEnd | None = None


@dataclass
class Rates:
    input: float
    cached_input: float
    output: float
    source: str
    priced: bool


@dataclass
class SessionExport:
    id: str
    title: str
    workspace: str
    model: str
    provider: str
    created: float
    updated: float
    status: str
    git: dict[str, Any]
    rates: Rates
    turns: list[Turn] = field(default_factory=list)
    skipped_lines: int = 0  # lines of the log that could not be read (a torn last line after a crash)
    subagent_runs: int = 0

    @property
    def steps(self) -> list[Step]:
        return [step for turn in self.turns for step in turn.steps]

    def totals(self) -> dict[str, Any]:
        steps = self.steps
        usage = Usage(
            sum(s.usage.uncached + s.subagent_usage.uncached for s in steps),
            sum(s.usage.cached + s.subagent_usage.cached for s in steps),
            sum(s.usage.output + s.subagent_usage.output for s in steps),
        )
        return {
            "steps": len(steps),
            "turns": len(self.turns),
            "tool_calls": sum(len(s.calls) for s in steps),
            "tool_errors": sum(1 for s in steps for c in s.calls if c.is_error),
            "retries": sum(len(s.retries) for s in steps),
            "compactions": sum(1 for s in steps if s.compaction is not None),
            "tokens": {"uncached": usage.uncached, "cached": usage.cached, "output": usage.output},
            "cost_usd": round(sum(s.cost_usd for s in steps), 6),
            "model_s": round(sum(s.model_ms for s in steps) / 1000, 3),
            "tools_s": round(sum(s.tools_ms for s in steps) / 1000, 3),
        }

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["totals"] = self.totals()
        return data
