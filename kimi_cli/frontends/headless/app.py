"""A headless run: one task through the agent, rendered as text, json or stream-json.

Whatever happens, `--output-format json` ends with exactly one `result` object on stdout (an error before
the session exists included) and stream-json with the same object; see kimi_cli/frontends/headless/headless.schema.json.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.agent.bootstrap import Runtime, SessionChoice
from kimi_cli.agent.events import Finished
from kimi_cli.agent.loop import Agent, RunOutcome
from kimi_cli.approval.engine import Approver
from kimi_cli.errors import AuthError, ConfigError, ExitCode, KimiError, ProviderUnavailable
from kimi_cli.frontends.attachments import build_user_message, check_attachments
from kimi_cli.frontends.headless.changes import change_fields
from kimi_cli.frontends.headless.flow import HeadlessFlow
from kimi_cli.frontends.headless.output import HeadlessRenderer, OutputFormat
from kimi_cli.frontends.headless.output_schema import OutputSchema
from kimi_cli.frontends.headless.visual import VisualCheck
from kimi_cli.hostsafe.git.state import switch_to_work_branch
from kimi_cli.util.sanitize import visible
from kimi_cli.util.signals import CancelOnSignal

RESUME_PROMPT = "Continue the task from where you left off."
# A run's end -> its `error.type`. An exception (before the run or during it) is typed by error_type().
ERROR_TYPES = {"done": None, "max_steps": "budget", "token_budget": "budget", "loop_detected": "loop_detected",
               "cancelled": "cancelled", "provider_unavailable": "provider_unavailable", "error": "error",
               "schema_mismatch": "schema_mismatch", "blocked": "blocked",
               "visual_target_missed": "visual_target_missed", "check_failed": "check_failed"}  # fmt: skip
# Every `error.type` a result can carry: headless.schema.json's enum (a test checks the two agree and that
# a real run ends with each).
ERROR_TYPE_NAMES = ("usage", "config", "auth", *dict.fromkeys(t for t in ERROR_TYPES.values() if t))


@dataclass
class FailedOutcome(RunOutcome):
    """A run an exception ended: the outcome, with the exception's error type (auth, config, ...)."""

    error_type: str = "error"


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
    output_schema: str | None = None  # --output-schema FILE (kimi_cli.frontends.headless.output_schema)
    visual: Any = None  # --visual-check (kimi_cli.frontends.headless.visual.VisualOptions)
    check: str | None = None  # --check CMD (kimi_cli.frontends.headless.flow)
    patch: Path | None = None  # --patch FILE: the session's change as a patch (kimi_cli.frontends.headless.changes)


def error_type(exc: KimiError) -> str:
    """The `error.type` of a result: what kind of thing went wrong, for scripts to branch on. The same
    whether it happened before the run or during it (a key refused at the first request is `auth` too)."""
    if isinstance(exc, ProviderUnavailable):
        return "provider_unavailable"
    if isinstance(exc, AuthError):
        return "auth"  # 401/403: the key
    if isinstance(exc, ConfigError):
        return "config"  # a file, flag or variable to fix; a 404 (URL, model) or 400 during the run too
    if exc.exit_code == ExitCode.USAGE:
        return "usage"
    return "error"


def result_object(
    reason: str,
    exit_code: int,
    *,
    message: str = "",
    error: str | None = None,
    session_id: str | None = None,
    text: str = "",
    steps: int = 0,
    usage: dict[str, int] | None = None,
    extra: dict[str, Any] | None = None,
    started: float | None = None,
) -> dict[str, Any]:
    """The one shape every run ends with (kimi_cli/frontends/headless/headless.schema.json, `result`)."""
    usage = usage or {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "total_tokens": 0}
    wall = round(time.perf_counter() - started, 4) if started else 0.0
    body: dict[str, Any] = {
        "type": "result",
        "reason": reason,
        "is_error": exit_code != 0,
        "exit_code": exit_code,
        "error": {"type": error, "message": message} if error else None,
        "message": message,
        "session_id": session_id,
        "text": text,
        "steps": steps,
        "usage": usage,
        "cost": None,
        "timing": {"wall_s": wall, "model_s": 0.0, "tools_s": 0.0},
        "model": None,
        "provider": None,
        "effort": None,
    }
    body.update(extra or {})
    return body


def run_headless(opts: RunOptions) -> int:
    """`kimi -p`: one HeadlessRun, rendered on stdout and stderr; Ctrl-C and SIGTERM cancel it cleanly."""
    from kimi_cli.frontends.quiet import quiet_child_watcher

    quiet_child_watcher()
    run = HeadlessRun(opts, HeadlessRenderer(opts.output_format))
    code = run.prepare()
    if code is not None:
        return code
    return asyncio.run(run.execute(signals=True))


@dataclass
class HeadlessRun:
    """One headless task, the one code path of `kimi -p`, the SDK (kimi_cli.sdk) and `kimi mcp serve`:
    prepare() builds the session (blocking: call it in a thread from async code), execute() runs it and
    renders the result through `renderer`. `make_approver` decides how calls that ask are answered
    (default: nobody can be asked, as `kimi -p`)."""

    opts: RunOptions
    renderer: HeadlessRenderer
    make_approver: Callable[[Runtime], Approver] | None = None
    started: float = field(default_factory=time.perf_counter)
    runtime: Runtime | None = None
    result: dict[str, Any] | None = None  # the result object, once rendered
    _prompt: str = ""
    _schema: OutputSchema | None = None
    _visual: Any = None
    _message: dict[str, Any] = field(default_factory=dict)

    def prepare(self) -> int | None:
        """Build the session; None when it is ready to execute, else the exit code (the result rendered)."""
        opts, renderer = self.opts, self.renderer
        prompt = self._prompt = (opts.prompt or "").strip()
        try:
            if not prompt and not (opts.continue_latest or opts.resume_id):
                raise KimiError("no task given: pass -p 'TASK' or pipe it on stdin", ExitCode.USAGE)
            if opts.resume_id == "@pick":
                raise KimiError("-r without an id picks a session in an interactive session; with -p give the id "
                                "(or its start): kimi sessions lists them", ExitCode.USAGE)  # fmt: skip
            check_attachments(prompt, opts.images, opts.workdir)  # a missing file is told before the pack is built
            self._schema = OutputSchema.load(opts.output_schema) if opts.output_schema else None  # exit 2 first
            choice = SessionChoice(
                prompt.splitlines()[0] if prompt else "", opts.continue_latest, opts.resume_id, task=prompt
            )
            from kimi_cli.frontends.pack_progress import PackProgress

            progress = PackProgress() if opts.output_format == "text" else None
            self.runtime = runtime = Runtime.build(opts.workdir, opts.config_flags, choice, progress=progress)
            if progress is not None:
                progress.finish()
            if not prompt and runtime.start_source != "resume":
                raise KimiError("no task given and no earlier session to continue: pass -p 'TASK'", ExitCode.USAGE)
            pack = runtime.context.last_pack
            if pack is not None and opts.output_format == "text":
                counts = ", ".join(f"{len(pack.by_mode(m))} {m}" for m in ("full", "outline", "listed"))
                sys.stderr.write(
                    f"kimi: packed the repository ({counts}; {pack.tokens:,} tokens) "
                    f"in {time.perf_counter() - self.started:.1f}s\n"
                )
            if opts.output_format == "text" and runtime.sandbox.name != "bwrap":
                sys.stderr.write(f"kimi: sandbox {runtime.sandbox.name}: {runtime.sandbox_reason}\n")
            # Sized for the model in use (its long-edge bound and request cap, from the model table).
            self._visual = (
                VisualCheck.start(opts.visual, runtime, prompt, opts.images) if opts.visual is not None else None
            )
            limits = runtime.image_limits()
            notify = lambda line: sys.stderr.write(f"kimi: {visible(line)}\n")  # noqa: E731
            self._message = build_user_message(
                prompt or RESUME_PROMPT, opts.images, opts.workdir, limits, notify=notify
            )
            if opts.branch:
                sys.stderr.write(f"kimi: {switch_to_work_branch(opts.workdir, opts.branch)} {opts.branch}\n")
        except KimiError as exc:
            sys.stderr.write(f"kimi: {visible(str(exc))}\n")
            built = self.runtime
            session_id = built.session.id if built is not None else None
            if built is not None:
                asyncio.run(built.aclose())
                built.session.close("error")
            code = int(exc.exit_code)
            reason = "usage_error" if code == ExitCode.USAGE else "error"
            self.result = result_object(reason, code, message=str(exc), error=error_type(exc),
                                        session_id=session_id, started=self.started)  # fmt: skip
            renderer.result(self.result)
            return code
        return None

    async def execute(self, signals: bool = False) -> int:
        """Run the prepared session to its end; the result object is rendered (and kept in .result)."""
        runtime, opts, renderer = self.runtime, self.opts, self.renderer
        assert runtime is not None, "prepare() first"
        approver = (self.make_approver or _unattended)(runtime)
        from kimi_cli.agent.toolbox import make_agent

        agent, provider = make_agent(runtime, renderer, approver, headless=True)
        renderer.init(init_info(runtime, agent, opts))
        run_started = time.perf_counter()
        preamble = [{"role": "user", "content": runtime.resume_note}] if runtime.resume_note else []
        # /name, --output-schema, --visual-check, --check
        flow = HeadlessFlow(runtime, self._prompt, opts.images, self._schema, visual=self._visual, check=opts.check)
        outcome = await run_guarded(agent, self._message, runtime, preamble, flow.run, signals=signals)
        outcome.message = provider.redact(outcome.message)
        usage = agent.usage.as_dict()
        agent.emit(
            Finished(
                reason=outcome.reason,
                exit_code=int(outcome.exit_code),
                text=outcome.text,
                steps=outcome.steps,
                usage=usage,
                session_id=runtime.session.id,
                message=outcome.message,
            )
        )
        extra = {
            "timing": {
                "wall_s": round(time.perf_counter() - self.started, 4),
                "run_s": round(time.perf_counter() - run_started, 4),
                "model_s": round(provider.model_seconds, 4),
                "tools_s": round(agent.tools_seconds, 4),
            },
            "model": runtime.endpoint.model,
            "provider": runtime.endpoint.provider,
            **cost_fields(runtime, usage, provider.first_usage),
            **flow.result_fields(),
            **change_fields(runtime, opts.patch),
        }
        warnings = runtime.exit_warnings()
        extra["warnings"] = warnings
        # What the sandbox took out of repositories commands made (kimi_cli/sandbox/guard/command.py): CI reads it.
        removed = list(getattr(runtime.sandbox, "removed_settings", []))
        extra["git_settings_removed"] = [r.to_dict() for r in removed]
        if opts.output_format == "text":
            if opts.patch is not None:
                written = extra["patch"]
                said = written["error"] or f"wrote the session's change ({len(extra['files_changed'])} file(s)) to"
                sys.stderr.write(f"kimi: {visible(said)} {visible(written['path'])}\n")
            for warning in warnings:
                sys.stderr.write(f"kimi: warning: {visible(warning)}\n")
            for item in removed:
                sys.stderr.write(f"kimi: removed from a repository a command made: {visible(item.text())}\n")
        error = outcome.error_type if isinstance(outcome, FailedOutcome) else ERROR_TYPES.get(outcome.reason, "error")
        self.result = result_object(outcome.reason, int(outcome.exit_code), message=outcome.message, error=error,
                                    session_id=runtime.session.id, text=outcome.text, steps=outcome.steps,
                                    usage=usage, extra=extra)  # fmt: skip
        renderer.result(self.result)
        runtime.session.set_status(outcome.reason)
        runtime.session.close()
        return int(outcome.exit_code)


def _unattended(runtime: Runtime) -> Approver:
    return Approver.unattended(runtime.rules, runtime.config.yolo)


def init_info(runtime: Runtime, agent: Agent, opts: RunOptions) -> dict[str, Any]:
    """What stream-json's `init` event says: which session, model, tools and pack this run starts with."""
    from kimi_cli import __version__

    pack = runtime.context.last_pack
    return {
        "session_id": runtime.session.id,
        "resumed": runtime.start_source == "resume",  # -c with nothing to continue started a new session
        "model": runtime.endpoint.model,
        "provider": runtime.endpoint.provider,
        "context_window": runtime.context_length,
        "effort": provider_effort(runtime),
        "cwd": str(runtime.workdir),
        "sandbox": runtime.sandbox.name,
        "tools": list(agent.registry.names),
        "pack": None if pack is None else {
            "tokens": pack.tokens,
            "budget": pack.budget,
            "files": {m: len(pack.by_mode(m)) for m in ("full", "outline", "listed")},
        },
        "version": __version__,
    }  # fmt: skip


def cost_fields(runtime: Runtime, usage: dict[str, int], first: Any) -> dict[str, Any]:
    """`cost` (cache hits and misses priced apart, from the model table), `tokens` (cached and uncached
    input, output), and whether the first request hit the prompt cache."""
    from kimi_cli.llm.costs import cost_of, rates_for

    cost = cost_of(usage, rates_for(runtime.info(), runtime.config.pricing))
    out: dict[str, Any] = {
        "cost": {**cost.as_dict(), "priced": cost.rates.priced},
        "tokens": {
            "input_uncached": cost.uncached_tokens,
            "input_cached": cost.cached_tokens,
            "output": cost.output_tokens,
        },
        "effort": provider_effort(runtime),
    }
    if first is not None:
        out["first_request"] = {"prompt_tokens": first.prompt_tokens, "cached_tokens": first.cached_tokens,
                                "cache_hit": first.cached_tokens > 0}  # fmt: skip
    return out


def provider_effort(runtime: Runtime) -> str | None:
    """The effort sent, or None where the model takes no reasoning control."""
    return None if runtime.info().reasoning == "none" else runtime.effort


def run_until_done(
    agent: Agent,
    user_message: dict[str, Any],
    runtime: Runtime,
    preamble: list[dict[str, Any]] | None = None,
    flow: Callable[[Agent, dict[str, Any], list[dict[str, Any]]], Awaitable[RunOutcome]] | None = None,
) -> RunOutcome:
    """run_guarded in its own event loop, Ctrl-C and SIGTERM cancelling it."""
    return asyncio.run(run_guarded(agent, user_message, runtime, preamble, flow, signals=True))


async def run_guarded(
    agent: Agent,
    user_message: dict[str, Any],
    runtime: Runtime,
    preamble: list[dict[str, Any]] | None = None,
    flow: Callable[[Agent, dict[str, Any], list[dict[str, Any]]], Awaitable[RunOutcome]] | None = None,
    signals: bool = False,
) -> RunOutcome:
    """Run the loop; errors become an outcome with a message, and so does a cancellation of the run (by a
    signal with `signals`); the runtime is closed either way. A caller cancelled itself is cancelled still."""

    async def main() -> RunOutcome:
        try:
            if flow is not None:  # what the run does around the loop (kimi_cli.frontends.headless.flow)
                return await flow(agent, user_message, preamble or [])
            return await agent.run(user_message, preamble)
        finally:
            await asyncio.shield(runtime.aclose())

    task = asyncio.ensure_future(main())
    on_signal = CancelOnSignal(task) if signals else None
    if on_signal is not None:
        on_signal.install(asyncio.get_running_loop())
    try:
        return await task
    except (KeyboardInterrupt, asyncio.CancelledError):
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        return RunOutcome("cancelled", ExitCode.CANCELLED, "", agent.steps, "cancelled; the session is saved")
    except KimiError as exc:
        reason = "provider_unavailable" if exc.exit_code == ExitCode.PROVIDER_UNAVAILABLE else "error"
        return FailedOutcome(reason, exc.exit_code, "", agent.steps, str(exc), error_type=error_type(exc))
    finally:
        if on_signal is not None:
            on_signal.disarm()
