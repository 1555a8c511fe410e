"""Wires config, session, provider, tools and a renderer into one headless run."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.agent.events import Finished
from kimi_cli.agent.loop import Agent, RunOutcome
from kimi_cli.agent.prompt import system_prompt
from kimi_cli.approval import HeadlessApprover
from kimi_cli.config import Config, load_config, resolve_endpoint
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.images import build_user_message
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.session.store import Session
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.sandbox.base import Sandbox
from kimi_cli.tools.sandbox.policy import build_policy
from kimi_cli.tools.sandbox.select import open_sandbox
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.workspace import Workspace
from kimi_cli.toolset import default_tools
from kimi_cli.ui.headless import HeadlessRenderer, OutputFormat

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
    config_flags: dict[str, Any] = field(default_factory=dict)


def open_session(opts: RunOptions, config: Config, model: str) -> tuple[Session, list[dict[str, Any]]]:
    """Create a new session, or reopen one with its repaired history."""
    if opts.resume_id or opts.continue_latest:
        session = Session.open(opts.workdir, opts.resume_id) if opts.resume_id else Session.latest(opts.workdir)
        return session, session.messages()
    session = Session.create(opts.workdir, (opts.prompt or "").strip().splitlines()[0] if opts.prompt else "", model)
    system = {"role": "system", "content": system_prompt(opts.workdir)}
    session.append_message(system)
    return session, [system]


def run_headless(opts: RunOptions) -> int:
    renderer = HeadlessRenderer(opts.output_format)
    try:
        config = load_config(opts.workdir, opts.config_flags)
        endpoint = resolve_endpoint(config)
        prompt = opts.prompt if opts.prompt is not None else ""
        if not prompt.strip() and not (opts.continue_latest or opts.resume_id):
            raise KimiError("no task given: pass -p 'TASK' or pipe it on stdin", ExitCode.USAGE)
        user_message = build_user_message(prompt.strip() or RESUME_PROMPT, opts.images, opts.workdir)
        private_tmp = Path(tempfile.mkdtemp(prefix="kimi-tmp-"))
        policy = build_policy(
            opts.workdir,
            private_tmp,
            network=config.sandbox.allow_network,
            extra_hidden=config.sandbox.hidden_paths,
        )
        session, history = open_session(opts, config, endpoint.model)
        docker = {
            "image": config.sandbox.docker_image,
            "memory": config.sandbox.docker_memory,
            "pids_limit": config.sandbox.docker_pids_limit,
        }
        sandbox = open_sandbox(config.sandbox.mode, policy, config.shell.output_cap, docker, session.id)
    except KimiError as exc:
        sys.stderr.write(f"kimi: {exc}\n")
        return int(exc.exit_code)

    provider = ChatProvider(endpoint, config.retry, session.id)
    ctx = ToolContext(workspace=Workspace(opts.workdir))
    agent = Agent(
        provider=provider,
        registry=default_tools([Shell(sandbox, config.shell.default_timeout, HeadlessApprover(config.yolo))]),
        ctx=ctx,
        recorder=session,
        emit=renderer,
        messages=history,
        max_steps=config.max_steps,
        max_tokens=config.max_tokens,
    )
    started = time.perf_counter()
    outcome = _run_agent(agent, user_message, sandbox)
    shutil.rmtree(private_tmp, ignore_errors=True)
    outcome.message = provider.redact(outcome.message)
    renderer.extra = {
        "timing": {
            "wall_s": round(time.perf_counter() - started, 4),
            "model_s": round(provider.model_seconds, 4),
            "tools_s": round(agent.tools_seconds, 4),
        },
        "model": endpoint.model,
        "provider": endpoint.provider,
    }
    agent.emit(
        Finished(
            reason=outcome.reason,
            exit_code=int(outcome.exit_code),
            text=outcome.text,
            steps=outcome.steps,
            usage=agent.usage.as_dict(),
            session_id=session.id,
            message=outcome.message,
        )
    )
    session.set_status(outcome.reason)
    session.close()
    return int(outcome.exit_code)


def _run_agent(agent: Agent, user_message: dict[str, Any], sandbox: Sandbox) -> RunOutcome:
    """Run the loop; Ctrl-C and SIGTERM cancel it cleanly, errors become an outcome with a message."""

    async def main() -> RunOutcome:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, task.cancel)
        try:
            return await agent.run(user_message)
        finally:
            await asyncio.shield(sandbox.close())

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return RunOutcome("cancelled", ExitCode.CANCELLED, "", agent.steps, "cancelled; the session is saved")
    except KimiError as exc:
        reason = "provider_unavailable" if exc.exit_code == ExitCode.PROVIDER_UNAVAILABLE else "error"
        return RunOutcome(reason, exc.exit_code, "", agent.steps, str(exc))
