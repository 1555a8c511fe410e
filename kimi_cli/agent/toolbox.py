"""The toolbox: the tools of one agent, and the agent made with them, from the session (kimi_cli.agent.bootstrap).

The default file tools; Shell, Git and the background-task tools on the session's sandbox; the web tools; the
MCP servers' tools, deferred behind SearchTools when they would take a request past the model's tool limit,
and those of servers that become ready later; the Agent tool over subagents, each of which gets its own tools
from here. Every tool that asks goes through the one approval engine (kimi_cli.approval.engine), on the record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.agent.approvals import RecordedApprover
from kimi_cli.agent.events import Event, Notice
from kimi_cli.agent.gate import SessionGate
from kimi_cli.agent.loop import Agent
from kimi_cli.config import HEADLESS_MAX_STEPS
from kimi_cli.llm.models import resolve_effort
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.llm.types import Message
from kimi_cli.session.undo.checkpointer import SessionCheckpointer
from kimi_cli.session.undo.shadow import ShadowRepo
from kimi_cli.tools.background import TaskManager
from kimi_cli.tools.base import Tool, ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.glob_tool import Glob
from kimi_cli.tools.grep_tool import Grep
from kimi_cli.tools.media import ReadMediaFile
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.str_replace import StrReplaceFile
from kimi_cli.tools.tasks import TaskOutput, TaskStop
from kimi_cli.tools.todo import SetTodoList
from kimi_cli.tools.workspace import Workspace
from kimi_cli.tools.write_file import WriteFile

if TYPE_CHECKING:
    from kimi_cli.agent.bootstrap import Runtime
    from kimi_cli.agent.subagents.runner import SubagentFactory
    from kimi_cli.approval.engine import Approver
    from kimi_cli.extensions.mcp.deferred import DeferredTools


def default_tools(extra: list[Tool[Any]] | None = None, grep_timeout: float = 20.0) -> ToolRegistry:
    """The file tools every agent has, then `extra` in order."""
    tools: list[Tool[Any]] = [
        ReadFile(),
        WriteFile(),
        StrReplaceFile(),
        Glob(),
        Grep(grep_timeout),
        ReadMediaFile(),
        SetTodoList(),
    ]
    return ToolRegistry(tools + list(extra or []))


EFFORTS = ("low", "high", "max")


def _kept_effort(runtime: Runtime) -> str | None:
    """The effort this session last chose (`/effort`, `--effort`): --continue and --resume keep it."""
    kept = runtime.session.meta.get("effort")
    return kept if kept in EFFORTS else None


def keep_effort(runtime: Runtime, effort: str) -> None:
    """Remember a chosen effort in the session's meta, for the next --continue."""
    if effort in EFFORTS and runtime.session.meta.get("effort") != effort:
        runtime.session.meta["effort"] = effort
        runtime.session.save_meta()


def make_agent(
    runtime: Runtime, emit: Callable[[Event], None], approver: Approver, headless: bool = False
) -> tuple[Agent, ChatProvider]:
    """The agent for this session. Headless runs get a step cap by default; interactive turns none."""
    config = runtime.config
    extra: dict[str, Any] = {}
    if config.thinking is False and runtime.endpoint.provider in ("local", "openai"):
        extra["chat_template_kwargs"] = {"thinking": False}  # vLLM's K3 chat template reads this switch
    if runtime.effort is None:  # configured (flag, variable, file), else the session's own choice, else the mode's
        runtime.effort = resolve_effort(
            config.effort or _kept_effort(runtime), "headless" if headless else "interactive"
        )
        if config.effort:
            keep_effort(runtime, config.effort)
    provider = ChatProvider(
        runtime.endpoint, config.retry, runtime.session.id, transport=config.transport, extra_body=extra,
        model_info=runtime.info(), effort=runtime.effort, cache_scope=str(runtime.workdir),
    )  # fmt: skip
    runtime.providers.append(provider)
    max_steps = config.max_steps
    if max_steps is None and headless:
        max_steps = HEADLESS_MAX_STEPS
    git_cfg = config.git
    identity = GitIdentity(
        name=git_cfg.author_name,
        email=git_cfg.author_email,
        co_author_trailer=git_cfg.co_author_trailer,
        allow_hooks=git_cfg.allow_hooks,
    )
    if runtime.tasks is None:
        runtime.tasks = TaskManager(runtime.sandbox, str(runtime.workdir), config.shell.max_background_tasks)
    tasks = runtime.tasks
    recorded = RecordedApprover(approver)  # questions and refusals go on the record (ApprovalDecided)
    shell = Shell(runtime.sandbox, config.shell.default_timeout, recorded, tasks)
    builtin: list[Any] = [shell, Git(identity), TaskOutput(tasks), TaskStop(tasks)]
    notices: list[str] = []
    starting: list[str] = []
    web = config.web
    if web.enabled:
        from kimi_cli.tools.web import FetchURL, SearchWeb

        save_dir = runtime.session.path / "fetched"
        fetch = FetchURL(recorded, web.allowed_hosts, web.allowed_private_hosts, save_dir, web.fetch_timeout)
        builtin.append(fetch)
        if web.search and runtime.endpoint.provider == "moonshot":
            builtin.append(SearchWeb())
    if runtime.mcp is not None:
        from kimi_cli.extensions.mcp.wiring import mcp_tools

        taken = set(default_tools(builtin).names)
        # the first request waits up to [mcp] startup_timeout, so every server ready by then is in it
        runtime.mcp.wait_ready(config.mcp.startup_timeout)
        extra_tools, notices, starting = mcp_tools(runtime.mcp, recorded, taken)
        if starting:
            notices.append(_still_starting(starting))
        builtin += extra_tools
    builtin += runtime.language_tools()  # Diagnostics, Definition, References, when a server is installed
    deferred = _defer_mcp(runtime, builtin, notices)  # over the model's tool limit: MCP tools wait for SearchTools
    if config.subagents:
        from kimi_cli.agent.subagents.runner import SubagentRunner
        from kimi_cli.tools.subagent import AgentTool

        runner = SubagentRunner(_subagent_factory(runtime, list(builtin), deferred), emit)
        builtin.append(AgentTool(runner.spawn, runner.kind_facts()))
    registry = default_tools(builtin + deferred.search_tool(), grep_timeout=config.grep_timeout)
    # A PreToolUse hook's "ask" goes to the one who answers the approver (plain text, not an engine Question)
    hook_question = getattr(approver, "ask", None)
    agent = Agent(
        provider=provider,
        registry=registry,
        ctx=ToolContext(
            workspace=Workspace(runtime.workdir),
            image_limits=runtime.image_limits(),  # ReadMediaFile and MCP images are sized to it
            read_roots=runtime.read_roots(),  # the user's skill folders, for ReadFile only
        ),
        recorder=runtime.session,
        emit=emit,
        messages=runtime.history,
        max_steps=max_steps,
        max_output_tokens=config.max_output_tokens,
        max_tokens=config.max_tokens,
        checkpointer=SessionCheckpointer(
            ShadowRepo(runtime.workdir, max_file_bytes=config.checkpoints.max_file_bytes), runtime.session
        ),
        context=runtime.context,
        notes=tasks.finished_notes,
        gate=SessionGate(runtime.mode, runtime.hooks, hook_question, start_source=runtime.start_source),
    )
    recorded.emit = agent.emit
    agent.call_observer = runtime.lsp  # diagnostics after edits; a read starts its language's servers
    if runtime.telemetry is not None:
        agent.observers.append(runtime.telemetry)
    if runtime.hooks is not None:
        runtime.hooks.tell = lambda message: agent.emit(Notice(message))
    if runtime.mcp is not None and starting:  # the first request does not wait for them
        from kimi_cli.extensions.mcp.wiring import LateServers

        late = LateServers(runtime.mcp, recorded, registry, starting)
        finished = tasks.finished_notes

        def notes() -> list[str]:  # before each request: servers ready since join the end of the tools
            told = late.poll()
            for notice in late.take_notices():
                agent.emit(Notice(notice))
            return told + finished()

        agent.notes = notes
    # a deferred tool called by its full name joins the end of the tools block; late tools may wait too
    deferred.attach(registry, lambda message: agent.emit(Notice(message)))
    if runtime.info().tools_in_messages:  # late tools in a system message: the tools block stays as first sent
        from kimi_cli.extensions.mcp.in_messages import ToolsInMessages

        agent.between_steps.append(ToolsInMessages(registry, lambda: agent.messages))
    provider.on_notice = lambda message: agent.emit(Notice(message))
    if isinstance(agent.checkpointer, SessionCheckpointer):  # a failed snapshot is told, never silent
        agent.checkpointer.notify = lambda message: agent.emit(Notice(message))
    trust_notice = runtime.trust_notice()
    if trust_notice:
        notices.insert(0, trust_notice)  # once a session: what the untrusted folder asked for, ignored
    env_notice = getattr(getattr(runtime.sandbox, "policy", None), "notice", None)
    if env_notice is not None and (withheld := env_notice.take()):
        notices.append(withheld)  # once a session, to the user: the model hears of a name only when it fails
    for notice in notices:
        agent.emit(Notice(notice))
    return agent, provider


def _still_starting(names: list[str]) -> str:
    """The notice for servers not ready when the first request goes out (terminal and stderr)."""
    return (f"MCP servers still starting: {', '.join(names)}; the first request goes without their tools, which "
            "join when each is ready")  # fmt: skip


def _defer_mcp(runtime: Runtime, builtin: list[Any], notices: list[str]) -> DeferredTools:
    """When built-ins and every MCP tool would not fit the model's tool limit, the MCP tools leave
    `builtin` for a pool that SearchTools searches (kimi_cli.extensions.mcp.deferred). Built-ins always stay;
    each subagent then gets its own SearchTools over the deferred tools its kind allows."""
    from kimi_cli.extensions.mcp.deferred import defer_over_limit
    from kimi_cli.extensions.mcp.tool import McpTool

    mcp = [t for t in builtin if isinstance(t, McpTool)]
    others = [t for t in builtin if not isinstance(t, McpTool)]
    stay = len(default_tools(others).names) + (1 if runtime.config.subagents else 0)  # + the Agent tool
    info = runtime.info()
    declared, pool = defer_over_limit(stay, mcp, info.max_tools)
    if not pool.pool:
        return pool
    builtin[:] = others + declared
    notices.append(
        f"{len(mcp)} MCP tools would take each request past {info.id}'s limit of {info.max_tools} tools: they "
        "are deferred, and SearchTools finds them (a found tool joins the end of the tools list)"
    )
    return pool


def _subagent_factory(runtime: Runtime, session_tools: list[Tool[Any]], deferred: DeferredTools) -> SubagentFactory:
    """What the subagent runner needs from this session, and nothing more (no Runtime: no import cycle)."""
    from kimi_cli.agent.subagents.kinds import SUB_BUDGET_SHARE
    from kimi_cli.agent.subagents.runner import SubagentFactory

    config = runtime.config
    everything_deferred = dict(deferred.pool)  # those that later join the session's block stay deferred here

    def deferred_tools() -> tuple[list[Tool[Any]], int]:
        everything_deferred.update(deferred.pool)  # and servers that became ready later, past the limit
        return list(everything_deferred.values()), deferred.max_tools

    def tools() -> list[Tool[Any]]:
        return list(default_tools(session_tools, grep_timeout=config.grep_timeout).tools)

    def provider(run_id: str) -> ChatProvider:
        made = ChatProvider(
            runtime.endpoint,
            config.retry,
            f"{runtime.session.id}-{run_id}",
            transport=config.transport,
            model_info=runtime.info(),
            effort=runtime.effort,
        )
        runtime.providers.append(made)
        return made

    def system(task: str, mode: str) -> Message:
        return runtime.prefix.message(runtime.context.task_pack(task, SUB_BUDGET_SHARE), mode)

    def gate() -> SessionGate:  # the session's hooks and mode (plan refuses writes) for a subagent's calls
        return SessionGate(runtime.mode, hooks=runtime.hooks, subagent=True)

    def tools_in(folder: Path) -> tuple[list[Tool[Any]], Callable[[], Awaitable[None]]]:
        return _tools_in_worktree(runtime, session_tools, folder)

    return SubagentFactory(runtime.workdir, tools, provider, system, runtime.session, config.max_output_tokens,
                           gate, runtime.read_roots(), deferred_tools, tools_in)  # fmt: skip


def _tools_in_worktree(
    runtime: Runtime, session_tools: list[Tool[Any]], folder: Path
) -> tuple[list[Tool[Any]], Callable[[], Awaitable[None]]]:
    """The session's tools for a subagent in its own worktree: the same tools, but Shell and the task tools on a
    sandbox of the same policy whose workspace is that worktree (and its own private /tmp), so that what the
    subagent runs may write only its own checkout. The file tools follow the ToolContext's workspace."""
    import shutil
    import tempfile

    from kimi_cli.agent.bootstrap import sandbox_for

    config = runtime.config
    private_tmp = Path(tempfile.mkdtemp(prefix="kimi-tmp-"))
    sandbox = sandbox_for(config, folder, private_tmp, runtime.session.id).sandbox
    tasks = TaskManager(sandbox, str(folder), config.shell.max_background_tasks)

    def swap(tool: Tool[Any]) -> Tool[Any]:
        if isinstance(tool, Shell):
            return Shell(sandbox, config.shell.default_timeout, tool.approver, tasks)
        if isinstance(tool, TaskOutput):
            return TaskOutput(tasks)
        if isinstance(tool, TaskStop):
            return TaskStop(tasks)
        return tool

    async def close() -> None:
        try:
            await tasks.close()
            await sandbox.close()
        finally:
            shutil.rmtree(private_tmp, ignore_errors=True)

    swapped = [swap(t) for t in session_tools]
    return list(default_tools(swapped, grep_timeout=config.grep_timeout).tools), close
