"""The session bootstrap: what a session needs, built once from config (the folder's trust, the config it lets
apply, the endpoint, the MCP servers starting, the prefix and context, the session itself, the sandbox), and
what leaving it takes. Front ends hold the Runtime it builds and ask it for agents; each agent's tools are
assembled by kimi_cli.agent.toolbox."""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.agent.prefix import PrefixBuilder
from kimi_cli.approval.modes.state import ModeState
from kimi_cli.approval.rules import Rules
from kimi_cli.config import Config, Endpoint, load_config, resolve_endpoint
from kimi_cli.context.session_context import SessionContext
from kimi_cli.extensions.mcp.manager import McpManager
from kimi_cli.hostsafe import trust
from kimi_cli.hostsafe.git.state import git_state
from kimi_cli.hostsafe.trust import FolderTrust
from kimi_cli.llm.models import ModelInfo, lookup, with_context
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.llm.types import Message
from kimi_cli.sandbox.base import Sandbox
from kimi_cli.sandbox.policy import build_policy
from kimi_cli.sandbox.select import SandboxChoice, choose_sandbox
from kimi_cli.session.store import Session, list_sessions

if TYPE_CHECKING:
    from kimi_cli.extensions.hooks.session import HookSession
    from kimi_cli.extensions.lsp.manager import LspManager
    from kimi_cli.extensions.skills.loader import Skill
    from kimi_cli.media.image import ImageLimits
    from kimi_cli.telemetry import SessionTelemetry
    from kimi_cli.tools.background import TaskManager
    from kimi_cli.tools.base import Tool


@dataclass
class SessionChoice:
    """Which session to run in: a new one titled by the task, the latest one here, or a given id."""

    title: str = ""
    continue_latest: bool = False
    resume_id: str | None = None
    task: str = ""


@dataclass
class Runtime:
    """One session: its config, endpoint, workspace, log and history, sandbox, context, mode, rules, hooks and
    MCP servers, built once (build); agents come from it (kimi_cli.agent.toolbox.make_agent), and aclose ends it."""

    config: Config
    endpoint: Endpoint
    workdir: Path
    session: Session
    history: list[Message]
    sandbox: Sandbox
    private_tmp: Path
    context: SessionContext
    prefix: PrefixBuilder
    resume_note: str = ""
    sandbox_reason: str = ""
    context_length: int = 1_048_576
    context_source: str = ""
    providers: list[ChatProvider] = field(default_factory=list)
    mcp: McpManager | None = None
    lsp: LspManager | None = None  # the language servers (kimi_cli.extensions.lsp), made with the first agent
    tasks: TaskManager | None = None
    model_info: ModelInfo | None = None  # the model table's entry in use (window from the server where it says)
    effort: str | None = None  # None until the first agent: then the configured effort or the mode's default
    folder_trust: FolderTrust | None = (
        None  # whether the workspace's own .kimi settings apply (kimi_cli.hostsafe.trust)
    )
    mode: ModeState = field(default_factory=ModeState)  # ask | auto | plan | yolo (kimi_cli.approval.modes)
    rules: Rules = field(default_factory=Rules)  # [approval] allow/deny, parsed once at start (approval.rules)
    hooks: HookSession | None = None  # the user's hooks, and a trusted project's (kimi_cli.extensions.hooks)
    start_source: str = "startup"  # SessionStart's `source` for the next agent: startup | resume | clear
    skills: list[Skill] = field(
        default_factory=list
    )  # SKILL.md folders, listed in the prefix (kimi_cli.extensions.skills)
    telemetry: SessionTelemetry | None = None  # OpenTelemetry export, when switched on (kimi_cli.telemetry)
    _trust_noticed: bool = False

    @classmethod
    def build(
        cls,
        workdir: Path,
        flags: dict[str, Any],
        choice: SessionChoice,
        progress: Callable[[str, int, int], None] | None = None,
        ask_trust: Callable[[FolderTrust], bool] | None = None,
    ) -> Runtime:
        """Load config and open the session and sandbox; raises KimiError (with an exit code) on bad input.

        The folder's own widening settings apply only when it is trusted: remembered, `flags["trust"]`
        (--trust), or a yes from `ask_trust` (the interactive question)."""
        from kimi_cli.util import timing
        from kimi_cli.util.malloc_tuning import keep_large_buffers

        timing.mark("imports, arguments")
        keep_large_buffers()
        from kimi_cli.hostsafe.git.repo_guard import remember_session_start

        remember_session_start(workdir)  # the repository's links and hook files as the session finds them
        folder_trust = trust.resolve(workdir, grant=bool(flags.get("trust")), ask=ask_trust)
        plan = bool(flags.get("plan"))
        flags = {k: v for k, v in flags.items() if k not in ("trust", "plan")}
        config = load_config(workdir, flags, folder=folder_trust)  # the snapshot trust decided on, not a new read
        endpoint = resolve_endpoint(config)
        timing.mark("trust, config")
        from kimi_cli.extensions.mcp.wiring import start_mcp

        # the servers come up while the repository is packed
        mcp = start_mcp(workdir, config.mcp_config, folder_trust, config.sandbox)
        from kimi_cli.llm.endpoint_info import resolve_context_length

        info = lookup(endpoint.model, endpoint.provider, _overrides(config))
        window, window_source = resolve_context_length(endpoint, config.context_length, info)
        from kimi_cli.extensions.skills.loader import skills_slot
        from kimi_cli.instructions.prompt import session_environment

        skills, slot = skills_slot(workdir)  # read once: the skills section stays the same for the whole session
        environment = session_environment(workdir, config, endpoint.model, window)
        prefix = PrefixBuilder(workdir, skills=slot, environment=environment)
        context = SessionContext(
            workdir,
            prefix.message,
            budget=config.context.budget or int(window * config.context.budget_ratio),
            context_length=window,
            compact_at=config.context.compact_at,
            pack_repo=config.context.pack,
            progress=progress,
            model=endpoint.model,
            server_tokens=lambda: _server_tokens(endpoint),
        )
        timing.mark("mcp start, environment")
        session, history = open_session(workdir, endpoint.model, choice, context)
        timing.mark("session, git state, pack")
        resume_note = context.resume(session.path) if (choice.continue_latest or choice.resume_id) else ""
        private_tmp = Path(tempfile.mkdtemp(prefix="kimi-tmp-"))
        try:
            picked = sandbox_for(config, workdir, private_tmp, session.id)
        except BaseException:
            shutil.rmtree(private_tmp, ignore_errors=True)
            session.close()
            if mcp is not None:
                mcp.close()
            raise
        runtime = cls(
            config, endpoint, workdir, session, history, picked.sandbox, private_tmp, context, prefix, resume_note,
            sandbox_reason=picked.reason, context_length=window, context_source=window_source, mcp=mcp,
            model_info=with_context(info, window), folder_trust=folder_trust,
        )  # fmt: skip
        timing.mark("sandbox")
        runtime.skills = skills
        runtime.rules = Rules.parse(config.approval.allow, config.approval.deny)
        session.meta.setdefault("provider", endpoint.provider)  # an export prices the steps by it
        runtime.start_telemetry(resumed=bool(choice.continue_latest or choice.resume_id))
        runtime.start_features(plan, resumed=bool(choice.continue_latest or choice.resume_id))
        timing.mark("telemetry, hooks")
        return runtime

    def start_features(self, plan: bool, resumed: bool) -> None:
        """The session's mode (plan mode with --plan) and its hooks, once the folder's trust is decided."""
        from kimi_cli.extensions.hooks.session import open_hooks

        policy = self.config.approval.policy
        base = "yolo" if self.config.yolo else policy if policy in ("ask", "auto") else "auto"
        self.mode = ModeState("plan" if plan else base, base)
        if resumed:  # what the conversation was last told: a resumed plan session leaving plan mode says so
            from kimi_cli.approval.modes.plan import told_in

            self.mode.told_plan = told_in(self.history)
        self.start_source = "resume" if resumed else "startup"
        self.hooks = open_hooks(self.workdir, lambda: self.session, lambda: self.mode.current, self.folder_trust)

    def language_tools(self) -> list[Tool[Any]]:
        """The session's language servers, made on the first agent (nothing starts before a file is touched:
        kimi_cli.extensions.lsp), and their tools."""
        if self.lsp is None and self.config.lsp.enabled:
            from kimi_cli.extensions.lsp.wiring import open_lsp

            self.lsp = open_lsp(self.config.lsp, self.workdir, self.sandbox, self.private_tmp, self.folder_trust)
        if self.lsp is None:
            return []
        from kimi_cli.extensions.lsp.wiring import lsp_tools

        return lsp_tools(self.lsp)

    def trust_notice(self) -> str | None:
        """Once a session: what the untrusted folder asked for, and that it was ignored."""
        notice = self.folder_trust.notice() if self.folder_trust is not None else None
        if notice is None or self._trust_noticed:
            return None
        self._trust_noticed = True
        return notice

    def read_roots(self) -> list[tuple[str, Path]]:
        """Folders outside the workspace ReadFile may read: the user's own skills (kimi_cli.tools.read_roots)."""
        from kimi_cli.extensions.skills.loader import read_roots

        return read_roots(self.skills)

    def image_limits(self) -> ImageLimits:
        """How images are sized for the model in use: its long-edge bound ([images] long_edge overrides it),
        its patch size and its request cap."""
        from kimi_cli.media.image import limits_for

        return limits_for(self.info(), self.config.images.long_edge)

    def info(self, model: str | None = None) -> ModelInfo:
        """The model table's entry for `model` (default: the one in use), with the window this session uses."""
        if model is None and self.model_info is not None:
            return self.model_info
        found = lookup(model or self.endpoint.model, self.endpoint.provider, _overrides(self.config))
        return found if model else with_context(found, self.context_length)

    def switch_session(self, choice: SessionChoice) -> None:
        """Leave the current session (saved as it is) for a new or an earlier one; the sandbox stays."""
        resumed = bool(choice.continue_latest or choice.resume_id)
        if self.hooks is not None:
            self.hooks.session_end("resume" if resumed else "clear")
        self.start_source = "resume" if resumed else "clear"
        self.context.save_baseline(self.session.path)
        session, history = open_session(self.workdir, self.endpoint.model, choice, self.context)
        self.session.close()
        self.session, self.history = session, history
        self.resume_note = self.context.resume(session.path) if (choice.continue_latest or choice.resume_id) else ""
        if self.telemetry is not None:
            self.telemetry.switch(session.id, resumed)

    def save_rule(self, rule: str) -> bool:
        """Keep an allow rule for later sessions, in the workspace's own .kimi/config.toml only (raises
        kimi_cli.approval.persist.RuleNotSaved); the sandbox's guard takes kimi's write into its baseline, so
        the next command neither undoes it nor is blamed for it."""
        from kimi_cli.approval.persist import save_allow_rule

        return save_allow_rule(self.workdir, rule, getattr(self.sandbox, "accept_own_write", None))

    def exit_warnings(self) -> list[str]:
        """What the user should hear on leaving: git settings naming a program that the repository gained
        during the session (a sandboxed `git init` + `git config core.fsmonitor ...`). kimi's own git never
        runs them; git run by hand in this folder would, and kimi put them within reach, so it says so."""
        from kimi_cli.hostsafe.git.repo_guard import planted_since_start

        try:
            planted = planted_since_start(self.workdir)
        except Exception:  # a warning must never break the exit
            return []
        if not planted:
            return []
        shown = "; ".join(p if len(p) <= 120 else p[:117] + "..." for p in planted[:6])
        return [
            f"during this session the git config in {self.workdir} gained settings that run programs ({shown}). "
            "kimi never ran them, but a git command you run by hand there would: check .git/config first."
        ]

    def start_telemetry(self, resumed: bool) -> None:
        """The OpenTelemetry exporter, when [telemetry] or the OTEL_EXPORTER_OTLP_* variables ask for one."""
        from kimi_cli.telemetry import SessionFacts, open_telemetry

        def price(usage: Any) -> float:
            from kimi_cli.llm.costs import cost_of, rates_for

            return cost_of(usage, rates_for(self.info(), self.config.pricing)).total_usd

        facts = SessionFacts(self.session.id, resumed, self.endpoint.provider, lambda: self.endpoint.model, price)
        self.telemetry = open_telemetry(self.config.telemetry, facts)

    async def aclose(self) -> None:
        import asyncio

        if self.telemetry is not None:
            telemetry, self.telemetry = self.telemetry, None
            with contextlib.suppress(Exception):
                await asyncio.to_thread(telemetry.close)

        if self.hooks is not None:
            hooks, self.hooks = self.hooks, None  # once, however often aclose is called
            with contextlib.suppress(Exception):
                await asyncio.to_thread(hooks.session_end, "exit")
        self.context.save_baseline(self.session.path)
        if self.tasks is not None:
            with contextlib.suppress(Exception):
                await self.tasks.close()
        if self.mcp is not None:
            await asyncio.to_thread(self.mcp.close)
        if self.lsp is not None:
            with contextlib.suppress(Exception):
                await self.lsp.aclose()
        for provider in self.providers:
            with contextlib.suppress(Exception):
                await provider.aclose()
        with contextlib.suppress(Exception):
            await self.sandbox.close()
        shutil.rmtree(self.private_tmp, ignore_errors=True)


def _server_tokens(endpoint: Endpoint) -> Any:
    """The endpoint's own tokenizer for the first pack (the provider's, shared); Moonshot's API has none."""
    if endpoint.provider == "moonshot":
        return None
    from kimi_cli.llm.server_tokens import for_endpoint

    return for_endpoint(endpoint.base_url, endpoint.api_key, endpoint.model)


def sandbox_for(config: Config, workspace: Path, private_tmp: Path, session_id: str) -> SandboxChoice:
    """The sandbox for a workspace under the session's [sandbox] and [shell] settings: the session's own, and a
    subagent's in its worktree (kimi_cli.agent.toolbox), built the same way. ConfigError when none is usable."""
    settings = config.sandbox
    policy = build_policy(
        workspace, private_tmp, network=settings.allow_network, extra_hidden=settings.hidden_paths,
        env_allow=settings.env_allow, env_deny=settings.env_deny,
    )  # fmt: skip
    docker = {"image": settings.docker_image, "memory": settings.docker_memory,
              "pids_limit": settings.docker_pids_limit}  # fmt: skip
    return choose_sandbox(settings.mode, policy, config.shell.output_cap, docker, session_id)


def _overrides(config: Config) -> dict[str, dict[str, Any]]:
    return {k: v.model_dump(exclude_none=True) for k, v in config.models.items()}


def open_session(
    workdir: Path, model: str, choice: SessionChoice, context: SessionContext
) -> tuple[Session, list[Message]]:
    """Create a new session, or reopen one with its repaired history."""
    if choice.continue_latest and not choice.resume_id and not list_sessions(workdir):
        # `kimi -c` where nothing was started yet: a new session, said, rather than an error (exit 2)
        sys.stderr.write("kimi: no earlier session in this workspace to continue: starting a new one\n")
        choice.continue_latest = False
    if choice.resume_id or choice.continue_latest:
        session = Session.open(workdir, choice.resume_id) if choice.resume_id else Session.latest(workdir)
        session.mark_running()
        return session, session.messages()
    session = Session.create(workdir, choice.title, model)
    session.meta["git"] = git_state(workdir)
    session.save_meta()
    system = context.system_message(choice.task or choice.title)
    session.append_message(system)
    return session, [system]
