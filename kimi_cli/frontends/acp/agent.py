"""KimiAcpAgent: sessions, prompts, cancel, modes and load over ACP, on the same runtime as the terminal.

Like the terminal UI it only renders events and answers approvals: agent events become `session/update`
notifications (sent in order by one sender task per session), and approvals become permission requests.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from pathlib import Path
from typing import Any

from kimi_cli import __version__
from kimi_cli.agent.events import Event
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.frontends.acp.approver import MODES, make_approver, set_mode
from kimi_cli.frontends.acp.client_mcp import client_mcp_config
from kimi_cli.frontends.acp.effort import effort_options, set_effort
from kimi_cli.frontends.acp.features import commands_update, run_prompt, session_modes
from kimi_cli.frontends.acp.updates import to_updates
from kimi_cli.util.logs import get_logger

log = get_logger("acp")
STOP_REASONS = {"done": "end_turn", "max_steps": "max_turn_requests", "token_budget": "max_tokens",
                "loop_detected": "refusal", "cancelled": "cancelled"}  # fmt: skip


class AcpSession:
    def __init__(self, runtime: Any, agent: Any, approver: Any, conn: Any) -> None:
        self.runtime = runtime
        self.agent = agent
        self.approver = approver
        self.conn = conn
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.sender = asyncio.ensure_future(self._send())
        self.turn: asyncio.Task[Any] | None = None
        self.mcp_servers: Any = None  # as the client gave them, for a reopen once the folder is trusted
        self.trust_asked = False

    @property
    def id(self) -> str:
        return str(self.runtime.session.id)

    def emit(self, event: Event) -> None:
        for update in to_updates(event, str(self.runtime.workdir)):
            self.queue.put_nowait(update)

    async def _send(self) -> None:
        while True:
            update = await self.queue.get()
            try:
                await self.conn.session_update(session_id=self.id, update=update)
            except Exception as exc:  # a client that went away must not kill the turn
                log.debug("session_update failed: %s", exc)
            finally:
                self.queue.task_done()

    async def flush(self) -> None:
        await self.queue.join()


class EditorFs:
    """ReadFile, WriteFile and StrReplaceFile through the editor: unsaved buffers are seen, edits land there.
    Writes into .git/ or .kimi/ are refused (kimi_cli.frontends.acp.fs_guard)."""

    def __init__(self, conn: Any, session_id: str, root: Path) -> None:
        self.conn = conn
        self.session_id = session_id
        self.root = root

    async def read(self, path: Path) -> str | None:
        try:
            response = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except Exception as exc:  # the editor cannot: the disk can
            log.debug("fs/read_text_file %s failed: %s", path, exc)
            return None
        return str(response.content)

    async def write(self, path: Path, text: str) -> None:
        from kimi_cli.frontends.acp.fs_guard import check_editor_write

        check_editor_write(self.root, path)
        await self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text)


class KimiAcpAgent:
    def __init__(self, flags: dict[str, Any] | None = None) -> None:
        self.flags = dict(flags or {})
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self.editor_fs = False  # the client reads and writes files itself (unsaved buffers included)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> Any:  # fmt: skip
        from acp import PROTOCOL_VERSION
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            InitializeResponse,
            McpCapabilities,
            PromptCapabilities,
            SessionCapabilities,
            SessionForkCapabilities,
        )

        fs = getattr(client_capabilities, "fs", None)
        self.editor_fs = bool(fs and fs.read_text_file and fs.write_text_file)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(fork=SessionForkCapabilities()),
            ),
            agent_info=Implementation(name="kimi", title="Kimi", version=__version__),
        )

    async def _open(self, cwd: str, mcp_servers: Any, resume_id: str | None) -> AcpSession:
        from kimi_cli.agent.bootstrap import Runtime, SessionChoice
        from kimi_cli.agent.toolbox import make_agent

        flags = dict(self.flags)
        choice = SessionChoice("editor", resume_id=resume_id)
        with client_mcp_config(mcp_servers) as config_file:  # in memory, read once, never left on disk
            if config_file:
                flags["mcp_config"] = [config_file]
            runtime = await asyncio.to_thread(Runtime.build, Path(cwd).resolve(), flags, choice)
        holder: dict[str, AcpSession] = {}
        cfg = runtime.config  # the terminal's policy: network included
        approver = make_approver(self.conn, runtime.session.id, "yolo" if cfg.yolo else cfg.approval.policy,
                                 runtime.rules, network=cfg.sandbox.allow_network, hooks=runtime.hooks)  # fmt: skip
        agent, _provider = await asyncio.to_thread(
            make_agent, runtime, lambda e: holder["s"].emit(e) if "s" in holder else None, approver
        )
        session = AcpSession(runtime, agent, approver, self.conn)
        session.mcp_servers = mcp_servers
        holder["s"] = session
        if self.editor_fs:
            agent.ctx.editor_files = EditorFs(self.conn, session.id, runtime.workdir)
        self.sessions[session.id] = session
        return session

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        from acp.schema import NewSessionResponse

        try:
            session = await self._open(cwd, mcp_servers, None)
        except KimiError as exc:
            raise _request_error(exc) from None
        session.queue.put_nowait(commands_update(session))  # custom commands for the editor's / menu
        return NewSessionResponse(session_id=session.id, modes=_modes(session.runtime.mode.current),
                                  config_options=effort_options(session))  # fmt: skip

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        from acp.schema import LoadSessionResponse

        try:
            session = await self._open(cwd, mcp_servers, session_id)
        except KimiError as exc:
            raise _request_error(exc) from None
        for message in session.agent.messages:
            for update in _replay(message):
                session.queue.put_nowait(update)
        session.queue.put_nowait(commands_update(session))
        await session.flush()
        return LoadSessionResponse(modes=_modes(session.runtime.mode.current), config_options=effort_options(session))

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        """session/fork: a new session with the same history and undo points under a new id, as /fork and
        `kimi --fork` make (kimi_cli.session.fork); the original, open here or not, goes on untouched."""
        from acp.schema import ForkSessionResponse

        from kimi_cli.session.fork import fork_session

        source = self.sessions.get(session_id)
        if source is not None:
            if source.turn is not None and not source.turn.done():
                raise _invalid(f"session {session_id} is answering a prompt: fork it once the turn has ended")
            await asyncio.to_thread(source.runtime.session.settle)  # its last records are on disk first
        try:
            new_id = await asyncio.to_thread(fork_session, Path(cwd).resolve(), session_id)
            session = await self._open(cwd, mcp_servers, new_id)
        except KimiError as exc:
            raise _request_error(exc) from None
        session.queue.put_nowait(commands_update(session))
        return ForkSessionResponse(session_id=session.id, modes=_modes(session.runtime.mode.current),
                                   config_options=effort_options(session))  # fmt: skip

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        from acp.schema import SetSessionModeResponse

        session = self._session(session_id)
        if mode_id not in MODES and mode_id != "plan":
            raise _invalid(f"unknown mode {mode_id!r}; modes: {', '.join([*MODES, 'plan'])}")
        set_mode(session.approver, mode_id)  # plan mode keeps the approval row of the mode before it
        session.runtime.mode.set(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kwargs: Any) -> Any:
        """The reasoning effort (kimi_cli.frontends.acp.effort); the only config option."""
        return set_effort(self._session(session_id), config_id, value)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        from acp.schema import PromptResponse, Usage

        session = await self._settle_trust(self._session(session_id))
        message = await asyncio.to_thread(_user_message, prompt, session.runtime.image_limits())  # Pillow
        session.turn = asyncio.ensure_future(run_prompt(session, message))  # /commands, plan approval
        try:
            outcome = await session.turn
            reason = STOP_REASONS.get(outcome.reason, "end_turn")
        except asyncio.CancelledError:
            reason = "cancelled"
        except KimiError as exc:
            await session.flush()
            raise _request_error(exc) from None
        finally:
            session.turn = None
            session.agent.steps = 0
        await session.flush()
        usage = session.agent.usage
        return PromptResponse(stop_reason=reason, usage=Usage(  # type: ignore[arg-type]
            total_tokens=usage.total_tokens, input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens,
            cached_read_tokens=usage.cached_tokens))  # fmt: skip

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.turn is not None:
            session.turn.cancel()

    async def _settle_trust(self, session: AcpSession) -> AcpSession:
        """The folder's .kimi asks for more than defaults and is not trusted: ask once (kimi_cli.hostsafe.trust)."""
        from kimi_cli.frontends.acp.trust_question import ask_folder_trust
        from kimi_cli.hostsafe import trust

        state = session.runtime.folder_trust
        if state is None or state.applies or session.trust_asked:
            return session
        session.trust_asked = True
        if not await ask_folder_trust(self.conn, session.id, state):
            return session
        trust.decide(state, True, "trusted in the editor")
        await session.flush()
        session.sender.cancel()
        await session.runtime.aclose()
        session.runtime.session.close()
        fresh = await self._open(str(session.runtime.workdir), session.mcp_servers, session.id)
        fresh.trust_asked = True
        fresh.approver.set_mode(session.approver.before)
        fresh.approver.set_mode(session.approver.mode)
        fresh.runtime.mode.set(session.runtime.mode.current)
        return fresh

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise _invalid(f"no session {session_id!r} (create one with session/new)")
        return session

    async def close(self) -> None:
        for session in self.sessions.values():
            if session.turn is not None:
                session.turn.cancel()
            with contextlib.suppress(Exception):
                await session.runtime.aclose()
            session.runtime.session.close()
            session.sender.cancel()


def _modes(current: str) -> Any:
    return session_modes(current)  # ask, auto, plan, yolo (kimi_cli.frontends.acp.features)


def _user_message(blocks: list[Any], limits: Any = None) -> dict[str, Any]:
    """The prompt's blocks as one user message; images sized for the model (kimi_cli.media.pipeline)."""
    from kimi_cli.media.image import ImageError, ImageLimits
    from kimi_cli.media.pipeline import prepare_data_url

    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append({"type": "text", "text": block.text})
        elif kind == "image":
            url = f"data:{block.mime_type};base64,{block.data}" if block.data else block.uri
            if block.data:
                try:
                    url = prepare_data_url(url, limits or ImageLimits(), "the attached image").data_url()
                except ImageError as exc:
                    parts.append({"type": "text", "text": f"[image left out: {exc}]"})
                    continue
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is None and getattr(resource, "blob", None):
                text = f"[binary resource, {len(base64.b64decode(resource.blob))} bytes]"
            parts.append({"type": "text", "text": f'<resource uri="{resource.uri}">\n{text}\n</resource>'})
        elif kind == "resource_link":
            parts.append({"type": "text", "text": f"[resource: {block.name} {block.uri}]"})
    if all(p["type"] == "text" for p in parts):
        return {"role": "user", "content": "\n\n".join(p["text"] for p in parts)}
    return {"role": "user", "content": parts}


def _replay(message: dict[str, Any]) -> list[Any]:
    """A logged message as the updates a client would have seen (session/load)."""
    import acp

    role, content = message.get("role"), message.get("content")
    text = content if isinstance(content, str) else " ".join(
        p.get("text", "") for p in content or [] if isinstance(p, dict))  # fmt: skip
    if role == "user" and text:
        return [acp.update_user_message_text(text)]
    out: list[Any] = []
    if role == "assistant":
        if text:
            out.append(acp.update_agent_message_text(text))
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            out.append(acp.start_tool_call(call["id"], fn.get("name", "tool"), status="completed"))
    return out


def _invalid(message: str) -> Exception:
    from acp import RequestError

    return RequestError.invalid_params({"message": message})


def _request_error(exc: KimiError) -> Exception:
    from acp import RequestError

    if exc.exit_code == ExitCode.USAGE:
        return RequestError.invalid_params({"message": str(exc)})
    return RequestError.internal_error({"message": str(exc)})


async def serve(flags: dict[str, Any]) -> int:
    from acp import run_agent
    from acp.stdio import stdio_streams

    agent = KimiAcpAgent(flags)
    from kimi_cli.frontends.acp.stdin_guard import STREAM_LIMIT, checked_stdin

    raw, writer = await stdio_streams(limit=STREAM_LIMIT)
    reader = await checked_stdin(raw, writer)
    try:
        # session/fork is in ACP's unstable set: the SDK routes it only with use_unstable_protocol
        await run_agent(agent, writer, reader, use_unstable_protocol=True)  # type: ignore[arg-type]
    finally:
        await agent.close()
    return 0
