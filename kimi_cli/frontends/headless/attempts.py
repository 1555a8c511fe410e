"""`kimi -p TASK --attempts N --check CMD`: N whole `kimi -p` runs at once, each in its own worktree, with its
own session and sandbox, each ending with CMD run in its sandbox (`--check`, kimi_cli.frontends.headless.flow);
kimi_cli.worktrees.attempts picks the passing one with the smallest change and merges it. One JSON result lists
all N. Each attempt is a child process in its own process group: Ctrl-C or SIGTERM stops them all, and nothing
is left running. A token budget (`--max-tokens`) is split between the attempts, so it covers them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.util.sanitize import visible
from kimi_cli.worktrees.attempts import AttemptRun, CheckResult, make_trees, run_attempts, without_flags
from kimi_cli.worktrees.trees import Worktree

MAX_ATTEMPTS = 8
# Flags of the parent's command line that the attempts do not take as they are (each gets its own).
OWN_VALUE_FLAGS = {"--attempts", "--check", "--workdir", "-w", "--output-format", "-p", "--prompt", "--max-tokens",
                   "--branch", "--worktree", "--resume", "-r", "--continue", "-c", "--fork"}  # fmt: skip
OWN_SWITCHES = frozenset({"--continue", "-c"})
NOTE = ("\n\n(This is attempt {k} of {n} at this task, each in its own copy of the repository; the one that "
        "passes `{check}` with the smallest change is kept.)")  # fmt: skip


def child_argv(argv: list[str]) -> list[str]:
    """The parent's flags an attempt keeps (model, sandbox, effort, ...), without those each attempt sets."""
    return without_flags(argv, OWN_VALUE_FLAGS, OWN_SWITCHES)


def kimi_command() -> list[str]:
    """This kimi, as a child whose working folder is a worktree of the repository: -P keeps that folder off
    sys.path, where `-m` would put it first, so a `kimi_cli/` (or any module kimi imports) the repository
    commits is never run on the host (tests/attacks/host_programs/test_attempt_children.py)."""
    return [sys.executable, "-P", "-m", "kimi_cli"]


async def run_child(argv: list[str], tree: Worktree,
                    parse: Callable[[bytes, bytes, int | None], AttemptRun] | None = None) -> AttemptRun:  # fmt: skip
    """One attempt: `kimi -p` (or `kimi ci-repair`, with its own `parse`) in the worktree, JSON out;
    cancelled, its whole process group is killed."""
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=str(tree.path), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = await proc.communicate()
    except asyncio.CancelledError:
        await _stop(proc)
        raise
    return (parse or _parse)(out, err, proc.returncode)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM to the attempt's group (kimi saves its session and closes its sandbox), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), wait)
            break
        except TimeoutError:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # what the attempt itself left in its group


def _parse(out: bytes, err: bytes, code: int | None) -> AttemptRun:
    result: dict[str, Any] = {}
    for line in reversed(out.decode(errors="replace").splitlines()):
        with contextlib.suppress(ValueError):
            candidate = json.loads(line)
            if isinstance(candidate, dict) and candidate.get("type") == "result":
                result = candidate
                break
    if not result:
        tail = err.decode(errors="replace")[-500:]
        return AttemptRun("error", code or 1, None, message=f"the attempt gave no result: {tail}")
    check = result.get("check")
    checked = None
    if isinstance(check, dict):
        checked = CheckResult(str(check.get("command", "")), check.get("exit_code"), str(check.get("output_tail", "")))
    return AttemptRun(
        reason=str(result.get("reason", "error")),
        exit_code=int(result.get("exit_code", code or 1)),
        check=checked,
        steps=int(result.get("steps", 0)),
        cost=result.get("cost"),
        usage=result.get("usage") or {},
        session_id=result.get("session_id"),
        message=str(result.get("message", "")),
        text=str(result.get("text", "")),
    )


def run_attempts_headless(root: Path, prompt: str, n: int, check: str, argv: list[str], output_format: str,
                          max_tokens: int | None = None) -> int:  # fmt: skip
    """The whole `--attempts N` run; the exit code: 0 when an attempt passed and merged, 1 otherwise."""
    from kimi_cli.frontends.headless.app import error_type, result_object
    from kimi_cli.util.jsonsafe import dumps
    from kimi_cli.util.signals import CancelOnSignal

    started = time.perf_counter()
    base = [*kimi_command(), *child_argv(argv), "--output-format", "json", "--check", check]
    if max_tokens is not None:
        base += ["--max-tokens", str(max(1, max_tokens // n))]
    try:
        worktrees = make_trees(root, n)
    except KimiError as exc:
        sys.stderr.write(f"kimi: {visible(str(exc))}\n")
        if output_format != "text":
            sys.stdout.write(dumps(result_object("error", int(exc.exit_code), message=str(exc), error=error_type(exc),
                                                 started=started)) + "\n")  # fmt: skip
        return int(exc.exit_code)

    async def one(tree: Worktree, k: int) -> AttemptRun:
        return await run_child([*base, "-p", prompt + NOTE.format(k=k, n=n, check=check)], tree)

    async def main() -> Any:
        task = asyncio.current_task()
        assert task is not None
        guard = CancelOnSignal(task, grace=30)
        guard.install(asyncio.get_running_loop())
        try:
            return await run_attempts(root, worktrees, one)
        finally:
            guard.disarm()

    if output_format == "text":
        sys.stderr.write(f"kimi: {n} attempts in {worktrees[0].path.parent}, checked with: {visible(check)}\n")
    try:
        outcome = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        message = "cancelled: every attempt was stopped; their branches stay (kimi worktree list)"
        sys.stderr.write(f"kimi: {message}\n")
        if output_format != "text":
            sys.stdout.write(dumps(result_object("cancelled", int(ExitCode.CANCELLED), message=message,
                                                 error="cancelled", started=started)) + "\n")  # fmt: skip
        return int(ExitCode.CANCELLED)
    fields = outcome.as_dict()
    usage = _sum_usage([a.run.usage for a in outcome.attempts])
    chosen = outcome.chosen
    if chosen is not None and outcome.merge is not None and outcome.merge.merged:
        reason, code, message = (
            "done",
            0,
            f"attempt {chosen.index} passed the check and was merged ({chosen.tree.branch})",
        )
    elif chosen is not None:
        reason, code, message = (
            "error",
            1,
            f"attempt {chosen.index} passed but did not merge: {outcome.merge.message if outcome.merge else ''}",
        )
    else:
        reason, code, message = "check_failed", 1, f"no attempt passed `{check}`"
    fields["cost"] = _sum_cost([a.run.cost for a in outcome.attempts])
    body = result_object(reason, code, message=message, error=None if code == 0 else "error",
                         steps=sum(a.run.steps for a in outcome.attempts), usage=usage, started=started,
                         text=chosen.run.text if chosen else "", extra=fields)  # fmt: skip
    body["timing"] = {"wall_s": round(time.perf_counter() - started, 4), "model_s": 0.0, "tools_s": 0.0}
    if output_format == "text":
        for a in outcome.attempts:
            state = "passed" if a.passed else "failed"
            merged = " (merged)" if a.merged else ""
            sys.stderr.write(f"kimi: attempt {a.index}: check {state}, {a.diff_lines} changed line(s), "
                             f"{a.run.steps} steps, branch {a.tree.branch}{merged}\n")  # fmt: skip
        sys.stdout.write(message + "\n")
    else:
        sys.stdout.write(dumps(body) + "\n")
    return code


def _sum_usage(items: list[dict[str, int]]) -> dict[str, int]:
    keys = ("prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens")
    return {k: sum(int(u.get(k, 0) or 0) for u in items) for k in keys}


def _sum_cost(items: list[Any]) -> dict[str, Any] | None:
    costs = [c for c in items if isinstance(c, dict)]
    if not costs:
        return None
    total: dict[str, Any] = {}
    for cost in costs:
        for key, value in cost.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = round(total.get(key, 0) + value, 6)
            else:
                total.setdefault(key, value)
    return total
