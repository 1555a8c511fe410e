"""`kimi ci-repair`: run the tests; if red, let the agent fix them, re-run, commit on a branch, report."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from kimi_cli.agent.bootstrap import Runtime, SessionChoice
from kimi_cli.approval.engine import Approver
from kimi_cli.approval.rules import Rules
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.frontends.ci_repair.failures import counts, failing_tests, trim_failures
from kimi_cli.frontends.ci_repair.results import RepairResult, TestRun
from kimi_cli.frontends.headless.output import HeadlessRenderer
from kimi_cli.hostsafe.git.host import workspace_git
from kimi_cli.hostsafe.git.state import git_state, switch_to_work_branch
from kimi_cli.llm.costs import Cost, cost_of, rates_for
from kimi_cli.sandbox.base import ExecResult
from kimi_cli.session.undo.shadow import ShadowRepo
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.workspace import Workspace
from kimi_cli.util.sanitize import visible

TASK = """The test command `{command}` fails in this repository. Find the cause and fix the code so that the
tests pass. Change the code under test, not the tests, unless a test is clearly wrong. Keep the change
minimal. When you are done, answer with one short paragraph: the cause, and what you changed.

Output of the failing run (trimmed):
{failures}"""
RETRY = """The tests still fail after your change. Output of `{command}` now (trimmed):
{failures}"""


async def run_tests(runtime: Runtime, command: str, timeout: int) -> TestRun:
    result: ExecResult = await runtime.sandbox.run(command, timeout)
    code = None if result.timed_out else result.exit_code
    return TestRun(code, result.output, failing_tests(result.output), counts(result.output))


def default_branch(root: Path) -> str:
    state = git_state(root) or {}
    return f"kimi/ci-repair-{(state.get('head') or 'nohead')[:8]}"


async def repair(runtime: Runtime, command: str, max_attempts: int, branch: str, timeout: int,
                 renderer: HeadlessRenderer) -> RepairResult:  # fmt: skip
    before = await run_tests(runtime, command, timeout)
    result = RepairResult("already-green", command, before, session_id=runtime.session.id)
    if before.green:
        return result
    result.branch = branch
    sys.stderr.write(
        f"kimi: {len(before.failing) or 'some'} failing; {switch_to_work_branch(runtime.workdir, branch)} {branch}\n"
    )
    agent, _provider = runtime.make_agent(renderer, Approver.unattended(Rules(), yolo=True), headless=True)
    shadow = ShadowRepo(runtime.workdir)
    best: tuple[tuple[int, int], str, TestRun] | None = None
    message = TASK.format(command=command, failures=trim_failures(before.output))
    after = before
    for attempt in range(1, max_attempts + 1):
        result.attempts = attempt
        outcome = await agent.run({"role": "user", "content": message})
        result.summary = outcome.text or result.summary
        after = await run_tests(runtime, command, timeout)
        snapshot = await asyncio.to_thread(shadow.snapshot)
        if best is None or after.badness < best[0]:
            best = (after.badness, snapshot, after)
        if after.green or outcome.exit_code == ExitCode.BUDGET:
            break
        message = RETRY.format(command=command, failures=trim_failures(after.output))
    assert best is not None
    if not after.green and best[1] != await asyncio.to_thread(shadow.snapshot):
        await asyncio.to_thread(shadow.restore, best[1])  # the branch keeps the best attempt
    after = best[2]
    result.after = after
    result.status = "fixed" if after.green else "not-fixed"
    result.usage = agent.usage.as_dict()
    cost = _cost(runtime, result.usage)
    result.cost, result.cost_detail = cost.total_usd, cost.as_dict()
    result.files = _changed_files(runtime.workdir, agent.files_written())
    if result.files:
        result.commit = await _commit(runtime, result, ToolContext(workspace=Workspace(runtime.workdir)))
    return result


def _cost(runtime: Runtime, usage: dict[str, int]) -> Cost:
    """Cache hits and misses, each at the model table's rate (or [pricing] from the config)."""
    return cost_of(usage, rates_for(runtime.info(), runtime.config.pricing))


def _changed_files(root: Path, written: list[str]) -> list[str]:
    """Tracked files that changed, plus new files the agent wrote itself. Whatever else the test run left
    behind (caches, bytecode, build output) stays out of the commit."""
    out = workspace_git(root, ["status", "--porcelain", "--untracked-files=all", "-z"])
    stdout = out.stdout.decode("utf-8", "surrogateescape") if out is not None else ""
    changed: list[str] = []
    for entry in filter(None, stdout.split("\0")):
        status, path = entry[:2], entry[3:]
        if status != "??" or path in written:
            changed.append(path)
    return sorted(changed)


async def _commit(runtime: Runtime, result: RepairResult, ctx: ToolContext) -> str | None:
    """Commit through the Git tool, with the configured identity (or a bot identity where git has none)."""
    from kimi_cli.tools.base import ToolError

    cfg = runtime.config.git
    name, email = cfg.author_name, cfg.author_email
    if not (name and email) and not _has_identity(runtime.workdir):
        name, email = "kimi ci-repair", "kimi-ci-repair@users.noreply.localhost"
    git = Git(GitIdentity(name=name, email=email, co_author_trailer=cfg.co_author_trailer, allow_hooks=cfg.allow_hooks))
    headline = "Fix failing tests" if result.status == "fixed" else "Partial fix for failing tests (still red)"
    message = f"{headline} (kimi ci-repair)\n\nTest command: {result.command}\n\n{result.summary}".strip()
    try:
        await git.run(Git.Params.model_validate({"command": "add", "paths": result.files}), ctx)
        await git.run(Git.Params.model_validate({"command": "commit", "message": message}), ctx)
    except ToolError as exc:
        sys.stderr.write(visible(f"kimi: could not commit: {exc}") + "\n")
        return None
    out = workspace_git(runtime.workdir, ["rev-parse", "HEAD"])
    return (out.stdout.decode().strip() or None) if out is not None else None


def _has_identity(root: Path) -> bool:
    name_out, email_out = workspace_git(root, ["config", "user.name"]), workspace_git(root, ["config", "user.email"])
    name = name_out.stdout.decode().strip() if name_out is not None else ""
    email = email_out.stdout.decode().strip() if email_out is not None else ""
    return bool(name and email)


def run_ci_repair(root: Path, command: str, max_attempts: int, branch: str | None, report: Path | None,
                  output_format: str, timeout: int, flags: dict[str, Any]) -> int:  # fmt: skip
    renderer = HeadlessRenderer("text" if output_format == "text" else "json")
    renderer.out = sys.stderr  # the agent's final answers are progress here; the report is the result
    started = time.perf_counter()
    try:
        runtime = Runtime.build(root, {**flags, "yolo": True}, SessionChoice(f"ci-repair: {command}", task=command))
    except KimiError as exc:
        sys.stderr.write(visible(f"kimi: {exc}") + "\n")
        return int(exc.exit_code)

    async def main() -> RepairResult:
        try:
            return await repair(runtime, command, max_attempts, branch or default_branch(root), timeout, renderer)
        finally:
            await runtime.aclose()

    try:
        result = asyncio.run(main())
    except KimiError as exc:
        sys.stderr.write(visible(f"kimi: {exc}") + "\n")
        return int(exc.exit_code) if exc.exit_code != ExitCode.OK else 1
    finally:
        runtime.session.close()
    from kimi_cli.frontends.ci_repair.report import render_report

    text = render_report(result, time.perf_counter() - started)
    if report is not None:
        report.write_text(text)
    if output_format == "json":
        print(json.dumps({**result.as_dict(), "report": str(report) if report else None}))
    else:  # the report quotes test output and the model's summary: written out on a terminal, never obeyed
        print(visible(text))
    return 0 if result.status in ("fixed", "already-green") else int(ExitCode.BUDGET)
