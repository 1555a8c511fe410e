"""A headless run: one task through the agent, rendered as text, json or stream-json."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.agent.events import Finished
from kimi_cli.agent.loop import Agent, RunOutcome
from kimi_cli.approval import HeadlessApprover
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.images import build_user_message, check_attachments
from kimi_cli.runtime import Runtime, SessionChoice
from kimi_cli.signals import CancelOnSignal
from kimi_cli.ui.headless import HeadlessRenderer, OutputFormat
from kimi_cli.ui.sanitize import visible
from kimi_cli.workspace_git import switch_to_work_branch

RESUME_PROMPT = "Continue the task from where you left off."


@dataclass
class RunOptions:
    """What the CLI hands to a headless run."""

    prompt: str | None
    workdir: Path
    output_format: OutputFormat = "text"
    images: list[str] = field(default_factory=list)
    continue_latest: bool = False
    resume_id: str | None = None
    branch: str | None = None
    config_flags: dict[str, Any] = field(default_factory=dict)


def run_headless(opts: RunOptions) -> int:
    renderer = HeadlessRenderer(opts.output_format)
    prompt = (opts.prompt or "").strip()
    try:
        if not prompt and not (opts.continue_latest or opts.resume_id):
            raise KimiError("no task given: pass -p 'TASK' or pipe it on stdin", ExitCode.USAGE)
        check_attachments(prompt, opts.images, opts.workdir)  # a missing file is told before the pack is built
        choice = SessionChoice(
            prompt.splitlines()[0] if prompt else "", opts.continue_latest, opts.resume_id, task=prompt
        )
        started_pack = time.perf_counter()
        from kimi_cli.ui.pack_progress import PackProgress

        progress = PackProgress() if opts.output_format == "text" else None
        runtime = Runtime.build(opts.workdir, opts.config_flags, choice, progress=progress)
        if progress is not None:
            progress.finish()
        pack = runtime.context.last_pack
        if pack is not None and opts.output_format == "text":
            counts = ", ".join(f"{len(pack.by_mode(m))} {m}" for m in ("full", "outline", "listed"))
            sys.stderr.write(
                f"kimi: packed the repository ({counts}; {pack.tokens:,} tokens) "
                f"in {time.perf_counter() - started_pack:.1f}s\n"
            )
        if opts.output_format == "text" and runtime.sandbox.name != "bwrap":
            sys.stderr.write(f"kimi: sandbox {runtime.sandbox.name}: {runtime.sandbox_reason}\n")
    except KimiError as exc:
        sys.stderr.write(f"kimi: {visible(str(exc))}\n")
        return int(exc.exit_code)
    try:
        # Sized for the model in use (its long-edge bound and request cap, from the model table).
        user_message = build_user_message(prompt or RESUME_PROMPT, opts.images, opts.workdir, runtime.image_limits())
        if opts.branch:
            sys.stderr.write(f"kimi: {switch_to_work_branch(opts.workdir, opts.branch)} {opts.branch}\n")
    except KimiError as exc:
        sys.stderr.write(f"kimi: {visible(str(exc))}\n")
        asyncio.run(runtime.aclose())
        runtime.session.close()
        return int(exc.exit_code)

    approver = HeadlessApprover(runtime.config.yolo, runtime.config.approval.allow, runtime.config.approval.deny)
    agent, provider = runtime.make_agent(renderer, approver, headless=True)
    started = time.perf_counter()
    preamble = [{"role": "user", "content": runtime.resume_note}] if runtime.resume_note else []
    outcome = run_until_done(agent, user_message, runtime, preamble)
    outcome.message = provider.redact(outcome.message)
    renderer.extra = {
        "timing": {
            "wall_s": round(time.perf_counter() - started, 4),
            "model_s": round(provider.model_seconds, 4),
            "tools_s": round(agent.tools_seconds, 4),
        },
        "model": runtime.endpoint.model,
        "provider": runtime.endpoint.provider,
        **cost_fields(runtime, agent.usage.as_dict(), provider.first_usage),
    }
    agent.emit(
        Finished(
            reason=outcome.reason,
            exit_code=int(outcome.exit_code),
            text=outcome.text,
            steps=outcome.steps,
            usage=agent.usage.as_dict(),
            session_id=runtime.session.id,
            message=outcome.message,
        )
    )
    runtime.session.set_status(outcome.reason)
    runtime.session.close()
    return int(outcome.exit_code)


def cost_fields(runtime: Runtime, usage: dict[str, int], first: Any) -> dict[str, Any]:
    """`cost` (cache hits and misses priced apart, from the model table) and whether the first request hit."""
    from kimi_cli.llm.costs import cost_of, rates_for

    cost = cost_of(usage, rates_for(runtime.info(), runtime.config.pricing))
    out: dict[str, Any] = {"cost": cost.as_dict(), "effort": provider_effort(runtime)}
    if first is not None:
        out["first_request"] = {"prompt_tokens": first.prompt_tokens, "cached_tokens": first.cached_tokens,
                                "cache_hit": first.cached_tokens > 0}  # fmt: skip
    return out


def provider_effort(runtime: Runtime) -> str | None:
    """The effort sent, or None where the model takes no reasoning control."""
    return None if runtime.info().reasoning == "none" else runtime.effort


def run_until_done(
    agent: Agent, user_message: dict[str, Any], runtime: Runtime, preamble: list[dict[str, Any]] | None = None
) -> RunOutcome:
    """Run the loop; Ctrl-C and SIGTERM cancel it cleanly, errors become an outcome with a message."""

    guard: list[CancelOnSignal] = []

    async def main() -> RunOutcome:
        task = asyncio.current_task()
        assert task is not None
        on_signal = CancelOnSignal(task)  # type: ignore[arg-type]
        on_signal.install(asyncio.get_running_loop())
        guard.append(on_signal)
        try:
            return await agent.run(user_message, preamble)
        finally:
            await asyncio.shield(runtime.aclose())

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return RunOutcome("cancelled", ExitCode.CANCELLED, "", agent.steps, "cancelled; the session is saved")
    except KimiError as exc:
        reason = "provider_unavailable" if exc.exit_code == ExitCode.PROVIDER_UNAVAILABLE else "error"
        return RunOutcome(reason, exc.exit_code, "", agent.steps, str(exc))
    finally:
        for on_signal in guard:
            on_signal.disarm()
