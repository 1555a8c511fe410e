"""`kimi ci-repair`: run the tests; if red, let the agent fix them, re-run, commit on a branch, report."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from kimi_cli.agent.bootstrap import Runtime, SessionChoice
from kimi_cli.agent.toolbox import make_agent
from kimi_cli.approval.engine import Approver
from kimi_cli.approval.rules import Rules
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.frontends.ci_repair import tree
from kimi_cli.frontends.ci_repair.failures import counts, failing_tests, trim_failures
from kimi_cli.frontends.ci_repair.report import step
from kimi_cli.frontends.ci_repair.results import RepairResult, TestRun, exit_code_of
from kimi_cli.frontends.headless.output import HeadlessRenderer
from kimi_cli.hostsafe.git.state import switch_to_work_branch
from kimi_cli.hostsafe.git.workspace import workspace_git
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


def _said(run: TestRun) -> str:
    if run.green:
        return "green"
    state = "timed out" if run.exit_code is None else f"red (exit {run.exit_code})"
    return f"{state}, {len(run.failing) or 'some'} failing"


async def repair(runtime: Runtime, command: str, max_attempts: int, branch: str, timeout: int,
                 renderer: HeadlessRenderer, result: RepairResult, note: str = "") -> RepairResult:  # fmt: skip
    step(f"running the tests: {command}")
    before = await run_tests(runtime, command, timeout)
    result.before, result.status = before, "already-green"
    step(f"tests before: {_said(before)}")
    if before.green:
        return result
    step(f"{switch_to_work_branch(runtime.workdir, branch)} {branch}")
    result.branch = branch
    start = tree.head(runtime.workdir)
    agent, _provider = make_agent(runtime, renderer, Approver.unattended(Rules(), yolo=True), headless=True)
    shadow = ShadowRepo(runtime.workdir)
    best: tuple[tuple[int, int], str, TestRun, str] | None = None
    message = TASK.format(command=command, failures=trim_failures(before.output)) + note
    result.estimate = _estimate(runtime, agent, message)
    after = before
    for attempt in range(1, max_attempts + 1):
        result.attempts = attempt
        step(f"attempt {attempt} of {max_attempts}: the agent is working")
        outcome = await agent.run({"role": "user", "content": message})
        result.usage = agent.usage.as_dict()
        if outcome.exit_code not in (ExitCode.OK, ExitCode.BUDGET):
            raise KimiError(outcome.message or f"the agent stopped: {outcome.reason}", outcome.exit_code)
        step(f"attempt {attempt}: running the tests again")
        after = await run_tests(runtime, command, timeout)
        step(f"attempt {attempt}: tests {_said(after)}")
        snapshot = await asyncio.to_thread(shadow.snapshot)
        if best is None or after.badness < best[0]:
            best = (after.badness, snapshot, after, outcome.text or "")
        if after.green or outcome.exit_code == ExitCode.BUDGET:
            break
        message = RETRY.format(command=command, failures=trim_failures(after.output))
    assert best is not None
    if not after.green and best[1] != await asyncio.to_thread(shadow.snapshot):
        step("putting back the best attempt")
        await asyncio.to_thread(shadow.restore, best[1])  # the branch keeps the best attempt
    after, result.summary = best[2], best[3]  # the summary of the attempt the branch holds
    result.after = after
    result.usage = agent.usage.as_dict()
    cost = _cost(runtime, result.usage)
    result.cost, result.cost_detail = cost.total_usd, cost.as_dict()
    files, new = _changed_files(runtime.workdir, agent.files_written())
    if new and after.green:
        files = await _leave_out_scratch(runtime, command, timeout, files, new, result)
    result.files = files
    if files:
        step(f"committing {len(files)} file(s) on {branch}")
        result.commit = await _commit(runtime, result, ToolContext(workspace=Workspace(runtime.workdir)))
        committed = result.commit is not None and tree.committed_whole(runtime.workdir, start, files)
        if not committed:
            result.commit = None if tree.head(runtime.workdir) == start else result.commit
            result.notes.append(
                "the fix commit was refused, or left part of the fix uncommitted (a pre-commit hook?): the change "
                "is in the working tree" + (f"; HEAD is {result.commit[:12]}" if result.commit else ", not committed")
            )
    else:
        committed = False
        if after.green:
            result.notes.append("the tests passed again, but no file changed: nothing to commit (a flaky test?)")
    result.status = ("fixed" if committed else "not-committed") if after.green else "not-fixed"
    return result


async def _leave_out_scratch(runtime: Runtime, command: str, timeout: int, files: list[str], new: list[str],
                             result: RepairResult) -> list[str]:  # fmt: skip
    """New files the agent wrote go into the commit only when the tests need them: one more test run with
    them moved out of the workspace says. Left out, they stay in the working tree, untracked, and listed."""
    step(f"checking whether the fix needs the {len(new)} new file(s) the agent wrote: {', '.join(new)}")
    aside = await asyncio.to_thread(tree.Aside, runtime.workdir, new)
    try:
        without = await run_tests(runtime, command, timeout)
    finally:
        await asyncio.to_thread(aside.put_back)
    if not without.green:
        step("the tests need them: they go into the commit")
        return files
    step("the tests pass without them: left out of the commit, kept in the working tree")
    result.left_out = new
    return [f for f in files if f not in new]


def _estimate(runtime: Runtime, agent: Any, message: str) -> dict[str, Any]:
    """Before the first request: its size (the system prompt with the packed repository, the tool schemas,
    the task) and what it costs as a prompt-cache miss, then as a hit, at the model's rates; on stderr."""
    from kimi_cli.context.tokens import TokenCounter

    counter = TokenCounter()
    texts = [json.dumps(m.get("content"), ensure_ascii=False) for m in agent.messages]
    texts += [json.dumps(agent.registry.schemas(), ensure_ascii=False), message]
    tokens = sum(counter.count(t) for t in texts)
    counter.flush()
    rates = rates_for(runtime.info(), runtime.config.pricing)
    miss, hit = tokens * rates.input / 1e6, tokens * rates.cached_input / 1e6
    priced = f"about ${miss:.4f} as a cache miss, ${hit:.4f} per later request on a hit" if rates.priced else "unpriced"
    step(
        f"cost estimate: the first request is about {tokens:,} input tokens (system prompt and packed repository, "
        f"tools, task): {priced}; effort {runtime.effort or 'default'}; --pack-budget N or --no-pack makes it smaller"
    )
    return {"first_request_tokens": tokens, "first_request_miss_usd": round(miss, 4),
            "later_request_hit_usd": round(hit, 4), "rates": rates.source}  # fmt: skip


def _cost(runtime: Runtime, usage: dict[str, int]) -> Cost:
    """Cache hits and misses, each at the model table's rate (or [pricing] from the config)."""
    return cost_of(usage, rates_for(runtime.info(), runtime.config.pricing))


def _changed_files(root: Path, written: list[str]) -> tuple[list[str], list[str]]:
    """(tracked files that changed plus new files the agent wrote itself, those new files). Whatever else the
    test run left behind (caches, bytecode, build output) stays out of the commit."""
    changed: list[str] = []
    new: list[str] = []
    for status, path in tree.status_entries(root):
        if status != "??":
            changed.append(path)
        elif path in written:
            changed.append(path)
            new.append(path)
    return sorted(changed), sorted(new)


async def _commit(runtime: Runtime, result: RepairResult, ctx: ToolContext) -> str | None:
    """Commit through the Git tool, with the configured identity (or a bot identity where git has none)."""
    from kimi_cli.tools.errors import ToolError

    cfg = runtime.config.git
    name, email = cfg.author_name, cfg.author_email
    if not (name and email) and not _has_identity(runtime.workdir):
        name, email = "kimi ci-repair", "kimi-ci-repair@users.noreply.localhost"
    git = Git(GitIdentity(name=name, email=email, co_author_trailer=cfg.co_author_trailer, allow_hooks=cfg.allow_hooks))
    green = result.after is not None and result.after.green
    headline = "Fix failing tests" if green else "Partial fix for failing tests (still red)"
    message = f"{headline} (kimi ci-repair)\n\nTest command: {result.command}\n\n{result.summary}".strip()
    try:
        await git.run(Git.Params.model_validate({"command": "add", "paths": result.files}), ctx)
        await git.run(Git.Params.model_validate({"command": "commit", "message": message}), ctx)
    except ToolError as exc:
        step(f"could not commit: {exc}")
        return None
    return tree.head(runtime.workdir)


def _has_identity(root: Path) -> bool:
    name_out, email_out = workspace_git(root, ["config", "user.name"]), workspace_git(root, ["config", "user.email"])
    name = name_out.stdout.decode().strip() if name_out is not None else ""
    email = email_out.stdout.decode().strip() if email_out is not None else ""
    return bool(name and email)


def _sandbox_flags(root: Path, flags: dict[str, Any], pass_env: list[str], allow_network: bool) -> dict[str, Any]:
    """--pass-env and --allow-network as [sandbox] settings of this run. env_allow from the config files is
    kept: a flag's list would replace it in the merge."""
    sandbox = dict(flags.get("sandbox") or {})
    if allow_network:
        sandbox["allow_network"] = True
    if pass_env:
        from kimi_cli.config import load_config

        have = load_config(root, {k: v for k, v in flags.items() if k != "sandbox"}).sandbox.env_allow
        sandbox["env_allow"] = list(dict.fromkeys([*have, *pass_env]))
    return {**flags, "sandbox": sandbox} if sandbox else flags


def run_ci_repair(root: Path, command: str, max_attempts: int, branch: str | None, report: Path | None,
                  output_format: str, timeout: int, flags: dict[str, Any], pass_env: list[str] | None = None,
                  allow_network: bool = False, attempts: int = 1, attempt_of: tuple[int, int] | None = None,
                  argv: list[str] | None = None) -> int:  # fmt: skip
    """The whole run. Whatever happens, the JSON result (json format) and the report (--report) are written.
    attempts > 1: that many runs in worktrees (kimi_cli.frontends.ci_repair.attempts, `argv` their flags);
    attempt_of (k, n): this run is one of them, in its worktree, on the worktree's branch."""
    renderer = HeadlessRenderer("text" if output_format == "text" else "json")
    renderer.out = sys.stderr  # the agent's final answers are progress here; the report is the result
    started = time.perf_counter()
    result = RepairResult("error", command, None)
    stash: tree.Stash | None = None
    try:
        if attempts > 1:
            from kimi_cli.frontends.ci_repair.attempts import repair_attempts

            repair_attempts(root, attempts, branch, argv or [], flags.get("max_tokens"), result)
            return _finish(result, report, output_format, started)
        work_branch = tree.current_branch(root) if attempt_of else tree.fresh_branch(root, branch)
        note = ""
        if attempt_of:
            from kimi_cli.frontends.ci_repair.attempts import NOTE

            note = NOTE.format(k=attempt_of[0], n=attempt_of[1])
        stash = tree.stash_changes(root)
        if stash.taken:
            step(f"stashed your {len(stash.paths)} uncommitted change(s) for the run; the tests run on HEAD")
        runtime = Runtime.build(
            root,
            {**_sandbox_flags(root, flags, pass_env or [], allow_network), "yolo": True},
            SessionChoice(f"ci-repair: {command}", task=command),
        )
        result.session_id = runtime.session.id

        async def main() -> RepairResult:
            try:
                return await repair(runtime, command, max_attempts, work_branch, timeout, renderer, result, note)
            finally:
                await runtime.aclose()

        try:
            asyncio.run(main())
        finally:
            runtime.session.close()
    except KimiError as exc:
        result.status, result.error = "error", str(exc)
        result.exit_code = int(exc.exit_code) if exc.exit_code != ExitCode.OK else int(ExitCode.ERROR)
        step(f"error: {exc}")
    except Exception as exc:  # the result and the report are still written, then it is re-raised
        result.status, result.error, result.exit_code = "error", f"{type(exc).__name__}: {exc}", int(ExitCode.ERROR)
        _finish(result, report, output_format, started)
        raise
    finally:
        if stash is not None and stash.taken:
            note = stash.restore(root)
            step(note)
            if "could not" in note:
                result.notes.append(note)
    return _finish(result, report, output_format, started)


def usage_failure(argv: list[str], message: str) -> int:
    """A usage error before the run could start (a bad flag or value, a missing --test): the JSON result
    (json format) and --report are written all the same, with the error and exit code 2. `argv` is the
    command line after `ci-repair`, read as far as it can be (click refused it)."""
    report, output_format, command = _flag(argv, "--report"), _flag(argv, "--output-format"), _flag(argv, "--test")
    result = RepairResult("error", command or "", None, error=f"usage: {message}", exit_code=int(ExitCode.USAGE))
    target = Path(report) if report else None
    return _finish(result, target, "json" if output_format == "json" else "text", time.perf_counter(), echo=False)


def _flag(argv: list[str], name: str) -> str | None:
    for index, arg in enumerate(argv):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
    return None


def _finish(result: RepairResult, report: Path | None, output_format: str, started: float, echo: bool = True) -> int:
    """The JSON result (json format; else the report, on stdout, when `echo`) and --report; the exit code."""
    from kimi_cli.frontends.ci_repair.report import render_report

    text = render_report(result, time.perf_counter() - started)
    if report is not None:
        try:
            report.write_text(text)
        except OSError as exc:
            step(f"could not write the report {report}: {exc}")
    code = exit_code_of(result)
    step(f"result: {result.status} (exit {code})")
    if output_format == "json":
        print(json.dumps({**result.as_dict(), "exit_code": code, "report": str(report) if report else None}))
    elif echo:  # the report quotes test output and the model's summary: written out on a terminal, never obeyed
        print(visible(text))
    return code
