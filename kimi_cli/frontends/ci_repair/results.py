"""What a ci-repair run found: the test runs before and after, and the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TestRun:
    exit_code: int | None
    output: str
    failing: list[str]
    counts: dict[str, int]

    @property
    def green(self) -> bool:
        return self.exit_code == 0

    @property
    def badness(self) -> tuple[int, int]:
        return (0 if self.green else 1, self.counts.get("failed", 0) + self.counts.get("errors", 0) or 1_000_000)


@dataclass
class RepairResult:
    status: str  # already-green | fixed | not-fixed | error
    command: str
    before: TestRun
    after: TestRun | None = None
    attempts: int = 0
    branch: str | None = None
    commit: str | None = None
    summary: str = ""
    files: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    cost_detail: dict[str, Any] = field(default_factory=dict)  # kimi_cli.llm.costs.Cost.as_dict()
    session_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        def run(t: TestRun | None) -> dict[str, Any] | None:
            return None if t is None else {"exit_code": t.exit_code, "counts": t.counts, "failing": t.failing}

        return {"status": self.status, "command": self.command, "attempts": self.attempts, "branch": self.branch,
                "commit": self.commit, "files_changed": self.files, "summary": self.summary,
                "tests_before": run(self.before), "tests_after": run(self.after), "usage": self.usage,
                "cost_usd": round(self.cost, 4), "cost": self.cost_detail,
                "session_id": self.session_id}  # fmt: skip
