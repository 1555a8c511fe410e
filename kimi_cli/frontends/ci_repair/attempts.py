"""`kimi ci-repair --attempts N`: N whole ci-repair runs at once, each in its own git worktree (kimi_cli.worktrees).

One path for every attempt: each is a `kimi ci-repair` child process in its worktree (hidden `--attempt-of K/N`:
its branch is the worktree's), so each goes through the same checks as a single run: its own tests before and
after, scratch files left out unless the tests need them, and "fixed" only when green AND committed. This run
then keeps one: the fixed attempt with the smallest change (the earlier on a tie), else the attempt whose tests
fail least, renames its branch to the run's own (kimi/ci-repair-<sha>, or --branch), removes every attempt's
worktree and the other branches, and switches the main checkout to the kept branch as a single run leaves it
(your uncommitted changes stashed around the switch and put back). Every attempt is in the JSON result and the
report: status, exit code, cost, tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError, ExitCode, KimiError
from kimi_cli.frontends.ci_repair import tree
from kimi_cli.frontends.ci_repair.report import step
from kimi_cli.frontends.ci_repair.results import RepairResult
from kimi_cli.worktrees import trees
from kimi_cli.worktrees.attempts import (
    Attempt,
    AttemptRun,
    CheckResult,
    choose,
    make_trees,
    run_attempts,
    without_flags,
)

MAX_ATTEMPTS = 8
# ci-repair's flags an attempt does not take from this run's command line (each attempt gets its own).
OWN_VALUE_FLAGS = {"--attempts", "--attempt-of", "--report", "--output-format", "--branch", "--workdir", "-w",
                   "--max-tokens"}  # fmt: skip
NOTE = ("\n\n(This is attempt {k} of {n} at this repair, each in its own copy of the repository; the fixed "
        "one with the smallest change is kept.)")  # fmt: skip
PASSED = ("fixed", "already-green")


def child_args(argv: list[str]) -> list[str]:
    """The ci-repair flags of this run (after the `ci-repair` word) an attempt keeps: test, model, sandbox..."""
    return without_flags(argv, OWN_VALUE_FLAGS)


def _parse(out: bytes, err: bytes, code: int | None) -> AttemptRun:
    """The child's JSON result (its last line) as an AttemptRun; the whole result rides in `text`."""
    data: dict[str, Any] = {}
    for line in reversed(out.decode(errors="replace").splitlines()):
        with contextlib.suppress(ValueError):
            candidate = json.loads(line)
            if isinstance(candidate, dict) and "status" in candidate:
                data = candidate
                break
    if not data:
        tail = err.decode(errors="replace")[-500:]
        return AttemptRun("error", code or 1, None, message=f"the attempt gave no result: {tail}")
    status = str(data.get("status", "error"))
    exit_code = int(data.get("exit_code", code or 1))
    check = CheckResult(str(data.get("command", "")), 0 if status in PASSED else exit_code)
    return AttemptRun(status, exit_code, check, cost=data.get("cost"), usage=data.get("usage") or {},
                      session_id=data.get("session_id"), message=str(data.get("error") or ""),
                      text=json.dumps(data))  # fmt: skip


def _child(attempt: Attempt) -> RepairResult | None:
    if not attempt.run.text:
        return None
    return RepairResult.from_dict(json.loads(attempt.run.text))


def _keep(attempts: list[Attempt], chosen: Attempt | None) -> Attempt | None:
    """The fixed attempt with the smallest change; else the one whose tests fail least (it committed its
    partial fix, as a single run's branch keeps its best attempt)."""
    if chosen is not None:
        return chosen
    ranked = []
    for a in attempts:
        child = _child(a)
        if child is not None and child.status != "error" and child.after is not None:
            ranked.append((child.after.badness, a.index, a))
    return min(ranked, key=lambda r: r[:2])[2] if ranked else None


def _row(attempt: Attempt, kept: bool, branch: str | None) -> dict[str, Any]:
    child = _child(attempt)
    body = child.as_dict() if child is not None else {}
    return {"index": attempt.index, "status": attempt.run.reason, "exit_code": attempt.run.exit_code,
            "kept": kept, "branch": branch if kept else None, "cost_usd": body.get("cost_usd", 0.0),
            "usage": attempt.run.usage, "tests_after": body.get("tests_after"),
            "files_changed": body.get("files_changed", []), "commit": body.get("commit") if kept else None,
            "session_id": attempt.run.session_id, "diff_lines": attempt.diff_lines,
            "wall_s": round(attempt.wall_s, 3), "error": attempt.run.message or None}  # fmt: skip


async def _run_all(root: Path, worktrees: list[trees.Worktree], base_argv: list[str], n: int) -> list[Attempt]:
    from kimi_cli.frontends.headless.attempts import run_child

    async def one(wt: trees.Worktree, k: int) -> AttemptRun:
        step(f"attempt {k} of {n}: started in {wt.path}")
        run = await run_child([*base_argv, "--attempt-of", f"{k}/{n}"], wt, parse=_parse)
        step(f"attempt {k} of {n}: {run.reason} (exit {run.exit_code})" + (f": {run.message}" if run.message else ""))
        return run

    task = asyncio.current_task()
    assert task is not None
    from kimi_cli.util.signals import CancelOnSignal

    guard = CancelOnSignal(task, grace=30)
    guard.install(asyncio.get_running_loop())
    try:
        outcome = await run_attempts(root, worktrees, one, merge=False, commit=False)
    finally:
        guard.disarm()
    return outcome.attempts


def repair_attempts(root: Path, n: int, branch: str | None, argv: list[str], max_tokens: int | None,
                    result: RepairResult) -> None:  # fmt: skip
    """Run the N attempts, keep one, clean up; fills `result` (the kept attempt's, with every attempt listed)."""
    from kimi_cli.frontends.headless.attempts import _sum_cost, _sum_usage, kimi_command
    from kimi_cli.hostsafe.git.state import switch_to_work_branch

    if not 2 <= n <= MAX_ATTEMPTS:
        raise ConfigError(f"--attempts must be between 2 and {MAX_ATTEMPTS} (1 is a plain run)")
    base = tree.fresh_branch(root, branch)
    base_argv = [*kimi_command(), "ci-repair", *child_args(argv), "--output-format", "json"]
    if max_tokens is not None:  # the budget covers the attempts together
        base_argv += ["--max-tokens", str(max(1, max_tokens // n))]
    worktrees = make_trees(root, n, label=f"ci-repair-attempt-{trees.new_name()}")
    step(f"{n} attempts, each in its own worktree under {worktrees[0].path.parent}")
    attempts: list[Attempt] = []
    try:
        attempts = asyncio.run(_run_all(root, worktrees, base_argv, n))
    except (KeyboardInterrupt, asyncio.CancelledError):  # every attempt was stopped (run_child kills its group)
        raise KimiError("cancelled: every attempt was stopped and its worktree removed", ExitCode.CANCELLED) from None
    finally:
        kept = _keep(attempts, choose([a for a in attempts if _fixed(a)]) or _green(attempts))
        _clean_up(root, worktrees, kept)
    child = _child(kept) if kept is not None else None
    if kept is not None and child is not None:
        for name in ("status", "before", "after", "commit", "summary", "files", "left_out", "notes", "estimate"):
            setattr(result, name, getattr(child, name))
        result.attempts = child.attempts
        if child.left_out:
            result.notes.append(f"the left-out files were in attempt {kept.index}'s worktree, now removed")
    if kept is not None and child is not None and child.commit:
        trees.rename_branch(root, kept.tree.branch, base)
        result.branch = base
        stash = tree.stash_changes(root)
        try:
            step(f"attempt {kept.index} kept: {switch_to_work_branch(root, base)} {base}")
        finally:
            if stash.taken:
                note = stash.restore(root)
                if "could not" in note:
                    result.notes.append(note)
    elif child is None:
        first = next((a for a in attempts if a.run.message), None)
        raise KimiError(f"no attempt gave a result: {first.run.message if first else 'none ran'}", ExitCode.ERROR)
    result.worktree_attempts = [_row(a, a is kept, result.branch) for a in attempts]
    result.usage = _sum_usage([a.run.usage for a in attempts])
    result.cost = sum(float(r.get("cost_usd") or 0.0) for r in result.worktree_attempts)
    result.cost_detail = _sum_cost([a.run.cost for a in attempts]) or {}
    result.session_id = child.session_id


def _fixed(attempt: Attempt) -> bool:
    return attempt.run.reason == "fixed"


def _green(attempts: list[Attempt]) -> Attempt | None:
    """Already green in every attempt that ran: nothing to keep but the verdict (no branch, no commit)."""
    return next((a for a in attempts if a.run.reason == "already-green"), None)


def _clean_up(root: Path, worktrees: list[trees.Worktree], kept: Attempt | None) -> None:
    """Every attempt's worktree goes; its branch too, but the kept one's (when it committed)."""
    child = _child(kept) if kept is not None else None
    keep_branch = kept.tree.branch if kept is not None and child is not None and child.commit else None
    for wt in worktrees:
        try:
            trees.remove(root, wt.name, keep_branch=wt.branch == keep_branch, force=True)
        except KimiError as exc:
            step(f"could not remove the worktree {wt.path}: {exc}")
