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


# Each status and its exit code: the one table --help, docs/ci-repair.md and the workflow example follow.
# "fixed" means green AND committed; an error's code is its own (see ERROR_CODES).
EXIT_CODES: dict[str, int] = {"fixed": 0, "already-green": 0, "not-fixed": 3, "not-committed": 6}
ERROR_CODES: dict[int, str] = {
    1: "error (the JSON result's error says which)",
    2: "usage or configuration error, a refused API key (401) included",
    4: "cancelled",
    5: "the model's server could not be reached (refused connection, timeout)",
}


@dataclass
class RepairResult:
    status: str  # already-green | fixed | not-fixed | not-committed | error
    command: str
    before: TestRun | None
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
    error: str = ""  # status "error": what stopped the run
    exit_code: int = 1  # status "error": the error's exit code
    notes: list[str] = field(default_factory=list)  # what else the user must know (a refused commit, a stash)
    left_out: list[str] = field(default_factory=list)  # new files the agent wrote that the fix does not need
    estimate: dict[str, Any] = field(default_factory=dict)  # the first request's size and cost, before it was sent
    # --attempts N: each attempt as it ended (status, exit code, cost, tests, its branch kept or removed)
    worktree_attempts: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def run(t: TestRun | None) -> dict[str, Any] | None:
            return None if t is None else {"exit_code": t.exit_code, "counts": t.counts, "failing": t.failing}

        return {"status": self.status, "command": self.command, "attempts": self.attempts, "branch": self.branch,
                "commit": self.commit, "files_changed": self.files, "summary": self.summary,
                "tests_before": run(self.before), "tests_after": run(self.after), "usage": self.usage,
                "cost_usd": round(self.cost, 4), "cost": self.cost_detail,
                "session_id": self.session_id, "error": self.error or None, "notes": self.notes,
                "left_out": self.left_out, "estimate": self.estimate,
                "worktree_attempts": self.worktree_attempts}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RepairResult:
        """A result as_dict wrote (an attempt's child run, read back by the run of all the attempts)."""

        def run(d: Any) -> TestRun | None:
            if not isinstance(d, dict):
                return None
            return TestRun(d.get("exit_code"), "", list(d.get("failing") or []), dict(d.get("counts") or {}))

        return cls(
            status=str(data.get("status", "error")), command=str(data.get("command", "")),
            before=run(data.get("tests_before")), after=run(data.get("tests_after")),
            attempts=int(data.get("attempts") or 0), branch=data.get("branch"), commit=data.get("commit"),
            summary=str(data.get("summary") or ""), files=list(data.get("files_changed") or []),
            usage=dict(data.get("usage") or {}), cost=float(data.get("cost_usd") or 0.0),
            cost_detail=dict(data.get("cost") or {}), session_id=str(data.get("session_id") or ""),
            error=str(data.get("error") or ""), exit_code=int(data.get("exit_code") or 1),
            notes=list(data.get("notes") or []), left_out=list(data.get("left_out") or []),
            estimate=dict(data.get("estimate") or {}),
        )  # fmt: skip


def exit_code_of(result: RepairResult) -> int:
    return result.exit_code if result.status == "error" else EXIT_CODES[result.status]
