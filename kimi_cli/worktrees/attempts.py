"""N attempts at one task, concurrently, each in its own worktree; keep the passing one with the smallest change.

The reusable unit behind `kimi -p TASK --attempts N --check CMD` (kimi_cli.frontends.headless.attempts) and
`kimi ci-repair --attempts N`: the caller says how one attempt runs in a worktree (`RunOne`: its own session and
sandbox, ending with the check's result); this module makes the worktrees, runs the attempts together, commits
what each changed on its branch, measures the change, picks, and merges the pick into the main checkout. The
main checkout is not touched before that merge. The other attempts stay as branches until `kimi worktree remove`.
Cancelling run_attempts cancels every attempt: RunOne must stop what it started when cancelled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.worktrees import trees
from kimi_cli.worktrees.trees import MergeResult, Worktree


@dataclass
class CheckResult:
    """The check command's result in an attempt's worktree (run in that attempt's sandbox)."""

    command: str
    exit_code: int | None  # None: it timed out or never ran
    output_tail: str = ""

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command, "exit_code": self.exit_code, "passed": self.passed,
                "output_tail": self.output_tail}  # fmt: skip


@dataclass
class AttemptRun:
    """What RunOne reports about one attempt: how the agent ended, its cost, steps and check."""

    reason: str
    exit_code: int
    check: CheckResult | None
    steps: int = 0
    cost: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    session_id: str | None = None
    message: str = ""
    text: str = ""  # the agent's final answer


@dataclass
class Attempt:
    """One attempt as the result lists it."""

    index: int
    tree: Worktree
    run: AttemptRun
    commits: int = 0
    diff_lines: int = 0
    wall_s: float = 0.0
    merged: bool = False

    @property
    def passed(self) -> bool:
        return self.run.check is not None and self.run.check.passed

    def as_dict(self) -> dict[str, Any]:
        run = self.run
        return {
            "index": self.index,
            "branch": self.tree.branch,
            "worktree": str(self.tree.path),
            "reason": run.reason,
            "exit_code": run.exit_code,
            "session_id": run.session_id,
            "steps": run.steps,
            "cost": run.cost,
            "usage": run.usage,
            "check": run.check.as_dict() if run.check is not None else None,
            "commits": self.commits,
            "diff_lines": self.diff_lines,
            "wall_s": round(self.wall_s, 4),
            "merged": self.merged,
        }


@dataclass
class AttemptsOutcome:
    attempts: list[Attempt]
    chosen: Attempt | None
    merge: MergeResult | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempts": [a.as_dict() for a in self.attempts],
            "chosen": self.chosen.index if self.chosen is not None else None,
            "merged": bool(self.merge and self.merge.merged),
            "merge_message": self.merge.message if self.merge is not None else "",
        }


RunOne = Callable[[Worktree, int], Awaitable[AttemptRun]]


def without_flags(argv: list[str], value_flags: set[str], switches: frozenset[str] = frozenset()) -> list[str]:
    """The parent's command line an attempt keeps (model, sandbox, effort, ...): `argv` without the flags each
    attempt sets itself. A flag in `value_flags` drops its value too (the next word, unless `--flag=value`),
    except one in `switches`, which takes none."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in value_flags:
            skip = "=" not in arg and name not in switches
            continue
        out.append(arg)
    return out


def choose(attempts: list[Attempt]) -> Attempt | None:
    """The passing attempt with the smallest change (fewest changed lines; the earlier one on a tie). An
    attempt that passes without changing anything counts as well: the task needed no change."""
    passing = [a for a in attempts if a.passed]
    return min(passing, key=lambda a: (a.diff_lines, a.index)) if passing else None


def make_trees(root: Path, n: int, label: str | None = None) -> list[Worktree]:
    """N fresh worktrees from the main checkout's HEAD, named `<label>-<k>`."""
    label = label or f"attempt-{trees.new_name()}"
    return [trees.create(root, f"{label}-{k}") for k in range(1, n + 1)]


async def run_attempts(
    root: Path,
    worktrees: list[Worktree],
    run_one: RunOne,
    commit_message: Callable[[int], str] = lambda k: f"kimi: attempt {k}",
    merge: bool = True,
    commit: bool = True,
) -> AttemptsOutcome:
    """Run one attempt per worktree at once, commit each one's changes on its branch, pick, merge the pick.
    commit=False: each attempt commits (or not) by its own rules, as `kimi ci-repair` does, and whatever it
    left uncommitted (files it left out of its commit) is left alone; only its change is measured."""

    async def one(k: int, tree: Worktree) -> Attempt:
        started = time.perf_counter()
        try:
            run = await run_one(tree, k)
        except Exception as exc:  # one attempt failing to start is its own result, not the others' end
            run = AttemptRun("error", 1, None, message=str(exc))
        attempt = Attempt(k, tree, run, wall_s=time.perf_counter() - started)
        await asyncio.to_thread(_settle, root, attempt, commit_message(k) if commit else None)
        return attempt

    attempts = list(await asyncio.gather(*(one(k, t) for k, t in enumerate(worktrees, start=1))))
    chosen = choose(attempts)
    result: MergeResult | None = None
    if chosen is not None and merge:
        result = await asyncio.to_thread(trees.merge, trees.main_root(root), chosen.tree.branch)
        chosen.merged = result.merged
    return AttemptsOutcome(attempts, chosen, result)


def _settle(root: Path, attempt: Attempt, message: str | None) -> None:
    """Commit what the attempt left in its checkout (unless message is None), and measure its change against
    where it started."""
    try:
        if message is not None:
            trees.commit_pending(attempt.tree, message)
        attempt.commits, attempt.diff_lines = trees.changes(root, attempt.tree, attempt.tree.base or None)
    except Exception as exc:  # an attempt whose repository kimi now refuses cannot be chosen
        attempt.run.check = None
        attempt.run.message = f"{attempt.run.message}; {exc}".strip("; ")
