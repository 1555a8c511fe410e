"""The ci-repair report: markdown fit for a pull-request comment, and the progress lines of the CI log (step)."""

from __future__ import annotations

import sys
from typing import Any

from kimi_cli.frontends.ci_repair.results import RepairResult, TestRun
from kimi_cli.util.sanitize import visible


def step(text: str) -> None:
    """Progress for a CI log: one line on stderr per step, in every output format."""
    sys.stderr.write(visible(f"kimi: ci-repair: {text}") + "\n")
    sys.stderr.flush()


HEADLINES = {
    "already-green": "The tests already pass: nothing to repair.",
    "fixed": "The failing tests now pass.",
    "not-fixed": "Not fixed within the budget: the branch keeps the best attempt, and the tests still fail.",
    "not-committed": "The tests pass in the working tree, but the fix is NOT committed: see the notes.",
    "error": "The run stopped on an error: nothing was fixed.",
}


def _tests(run: TestRun | None) -> str:
    if run is None:
        return "not run"
    counts = ", ".join(f"{n} {k}" for k, n in sorted(run.counts.items())) or "no summary line"
    state = "green" if run.green else ("timed out" if run.exit_code is None else f"red (exit {run.exit_code})")
    return f"{state}: {counts}"


def _attempt_row(row: dict[str, Any]) -> str:
    after = row.get("tests_after") or {}
    code = after.get("exit_code", "n/a")
    tests = "green" if code == 0 else ("not run" if not after else f"red (exit {code})")
    counts = ", ".join(f"{n} {k}" for k, n in sorted((after.get("counts") or {}).items()))
    branch = f"kept: `{row['branch']}`" if row.get("kept") and row.get("branch") else "removed"
    return (f"| {row['index']} | {row['status']} | {row['exit_code']} | {tests}{': ' + counts if counts else ''} "
            f"| ${float(row.get('cost_usd') or 0):.4f} | {branch} |")  # fmt: skip


def render_report(result: RepairResult, seconds: float) -> str:
    lines = [f"## kimi ci-repair: {result.status}", "", HEADLINES.get(result.status, result.status), ""]
    if result.error:
        lines += [f"Error: {result.error}", ""]
    lines += [f"- Test command: `{result.command}`", f"- Tests before: {_tests(result.before)}"]
    if result.status != "already-green" and result.before is not None:
        lines += [f"- Tests after: {_tests(result.after)}", f"- Attempts: {result.attempts}"]
        if result.branch:
            lines.append(f"- Branch: `{result.branch}`" + (f", commit `{result.commit[:12]}`" if result.commit else ""))
    if result.worktree_attempts:
        lines += ["", "### Attempts", "", "Each in its own worktree, through the same checks; the others are removed.",
                  "", "| Attempt | Status | Exit | Tests after | Cost | Branch |", "|---|---|---|---|---|---|",
                  *[_attempt_row(row) for row in result.worktree_attempts]]  # fmt: skip
    if result.notes:
        lines += ["", "### Notes", *[f"- {note}" for note in result.notes]]
    if result.before is not None and result.before.failing:
        lines += ["", "### Failing before", *[f"- `{name}`" for name in result.before.failing[:30]]]
    if result.summary:
        lines += ["", "### Cause and change", "", result.summary.strip()]
    if result.files:
        lines += ["", "### Files changed", *[f"- `{path}`" for path in result.files]]
    if result.left_out:
        lines += ["", "### Left out of the commit",
                  "New files the agent wrote that the tests pass without (kept in the working tree, untracked):",
                  *[f"- `{path}`" for path in result.left_out]]  # fmt: skip
    usage = result.usage
    if usage:
        detail = result.cost_detail
        hits, misses = usage.get("cached_tokens", 0), usage.get("prompt_tokens", 0) - usage.get("cached_tokens", 0)
        money = (
            f"about ${result.cost:.4f} (misses ${detail.get('input_uncached_usd', 0):.4f}, hits "
            f"${detail.get('input_cached_usd', 0):.4f}, output ${detail.get('output_usd', 0):.4f})"
        )
        lines += ["", "### Cost",
                  f"{usage.get('prompt_tokens', 0):,} input tokens: {hits:,} prompt-cache hits and {misses:,} misses; "
                  f"{usage.get('completion_tokens', 0):,} output tokens; {money}; "
                  f"{seconds:.0f} s; session `{result.session_id}`.",
                  f"Rates: {detail.get('rates_source', 'n/a')}."]  # fmt: skip
    return "\n".join(lines) + "\n"
