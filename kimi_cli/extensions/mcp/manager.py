"""McpManager: every configured server on its own event loop thread, each with its own state.

Servers start at once, concurrently, while the repository is packed. A server that fails to start, times
out, or dies contributes no tools and one notice; the session never sees an exception from it. Calls from
the agent's loop cross to the MCP loop with run_coroutine_threadsafe, so a slow or stuck server cannot
block the session, and cancelling a call (Ctrl-C) cancels it on the server's side too.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.extensions.mcp.config import ServerConfig, file_safe, server_cwd
from kimi_cli.extensions.mcp.listing import list_tools


@dataclass
class ServerState:
    name: str
    config: ServerConfig
    status: str = "starting"  # starting | ready | failed | stopped
    error: str = ""
    tools: list[Any] = field(default_factory=list)  # mcp.types.Tool
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (tool name, why): not valid MCP, left out
    started: float = 0.0
    ready_after: float | None = None
    session: Any = None
    home: str = ""  # a sandboxed server's state folder under ~/.kimi/mcp (kimi_cli.extensions.mcp.sandboxed)
    where: str = ""  # a stdio server's place: "bwrap" / "landlock" (sandboxed) or "host"
    process: Any = None  # a sandboxed server's process (kimi_cli.sandbox.long_lived.ServerProcess)
    settled: threading.Event = field(default_factory=threading.Event)
    stop: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None


_cwd = server_cwd


class McpError(Exception):
    """A call could not be made (server down, timeout); the message goes to the model as the result."""


class McpManager:
    def __init__(
        self, servers: dict[str, ServerConfig], log_dir: Path, pins: dict[str, dict[str, str]] | None = None,
        sandbox_mode: str = "auto", settings: Any = None, host_allowed: set[str] | None = None,
        workspace: Path | None = None,
    ) -> None:  # fmt: skip
        """`sandbox_mode`: the session's `[sandbox] mode` (kimi_cli.extensions.mcp.sandboxed picks the backend);
        `settings`: its [sandbox] settings (hidden paths, withheld variables); `host_allowed`: the servers whose
        `"sandbox": false` comes from the user's own configuration (None: all of them)."""
        self.states = {name: ServerState(name, cfg) for name, cfg in sorted(servers.items()) if cfg.enabled}
        self.log_dir = log_dir
        self.sandbox_mode = sandbox_mode
        self.settings = settings
        self.workspace = workspace if workspace is not None else Path.cwd()
        self.notices: list[str] = []  # for the user, once: a folder's `"sandbox": false` refused
        from kimi_cli.extensions.mcp.sandboxed import folder_state_name

        for name, state in self.states.items():
            state.home = name
            if host_allowed is not None and name not in host_allowed:
                self._users_only(state)
                state.home = folder_state_name(name, self.workspace)
        from kimi_cli.extensions.mcp.host_launch import server_pins

        # Workspace files each stdio server's command line names, checked before every start: as they are now,
        # and, where given (`pins`: a folder's own servers), as the trust decision's snapshot read them.
        given = pins or {}
        self._pins = {name: {**server_pins(s.config.command, s.config.args, _cwd(s.config)), **given.get(name, {})}
                      for name, s in self.states.items() if s.config.command}  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kimi-mcp", daemon=True)
        self.started_at = 0.0  # monotonic time of start(): the first request's wait counts from here

    def _users_only(self, state: ServerState) -> None:
        """A folder's server: what only the user's own configuration may set goes back to the default."""
        from kimi_cli.hostsafe.trust_rules import MCP_SERVER_FIELDS

        fields = ServerConfig.model_fields
        reset = {key: fields[key].get_default(call_default_factory=True) for key, where in MCP_SERVER_FIELDS.items()
                 if where == "user" and key in state.config.model_fields_set}  # fmt: skip
        changed = {key: value for key, value in reset.items() if getattr(state.config, key) != value}
        if changed:
            state.config = state.config.model_copy(update=changed)
            said = ", ".join(f'"{key}"' for key in changed)
            self.notices.append(
                f"MCP server {state.name!r}: {said} is ignored, only your own ~/.kimi/mcp.json or --mcp-config may "
                "set it (a folder's server runs sandboxed)"
            )

    def start(self) -> None:
        if not self.states:
            return
        self.started_at = time.monotonic()
        self._thread.start()
        for state in self.states.values():
            asyncio.run_coroutine_threadsafe(self._launch(state), self.loop)

    def wait_settled(self, timeout: float | None = None) -> None:
        """Block until every server is ready or has failed (each is bounded by its own startup timeout)."""
        deadline = time.monotonic() + (timeout if timeout is not None else self._max_startup() + 5)
        for state in self.states.values():
            state.settled.wait(max(0.0, deadline - time.monotonic()))
            if not state.settled.is_set():
                state.status, state.error = "failed", "did not start in time"

    def wait_ready(self, default_wait: float) -> list[str]:
        """Before the first request: wait for each server until it has settled or its wait has passed,
        counted from start() (the servers started beside the pack, so a slow pack leaves less to wait). A
        server's wait is its `startup_wait`, else `default_wait` (`[mcp] startup_timeout`). Its own
        startup_timeout is not a cap: that clock starts only once the SDK is imported and the process spawned
        (seconds on a loaded machine), and a server that fails settles at once. Returns the servers still
        starting; they are not failed, only late."""
        for state in self.states.values():
            own = state.config.startup_wait
            wait = default_wait if own is None else own
            state.settled.wait(max(0.0, self.started_at + wait - time.monotonic()))
        return [name for name, state in self.states.items() if state.status == "starting"]

    def _max_startup(self) -> float:
        return max((s.config.startup_timeout for s in self.states.values()), default=0.0)

    async def _launch(self, state: ServerState) -> None:
        state.stop = asyncio.Event()
        state.task = asyncio.current_task()
        await self._run(state)

    async def _run(self, state: ServerState) -> None:
        import anyio
        from mcp import ClientSession

        state.started = time.monotonic()
        state.status, state.error = "starting", ""
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(state, stack))
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio.fail_after(state.config.startup_timeout):
                    await session.initialize()
                    state.tools, state.rejected = await list_tools(session)
                state.session = session
                state.status = "ready"
                state.ready_after = time.monotonic() - state.started
                state.settled.set()
                assert state.stop is not None
                await state.stop.wait()
        except BaseException as exc:  # a server's failure is its own, never the session's
            if state.status != "stopped":
                state.status = "failed"
                state.error = _describe(exc, state.config.startup_timeout)
                if state.where not in ("", "host") and not _is(exc, McpError):
                    from kimi_cli.extensions.mcp.sandboxed import SandboxStartError, failure

                    if not _is(exc, SandboxStartError):  # its own message says what to set already
                        state.error = failure(state.where, state.process, state.error)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            state.session = None
            state.settled.set()

    def _transport(self, state: ServerState, stack: contextlib.AsyncExitStack[Any]) -> Any:
        cfg = state.config
        if cfg.kind == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            from kimi_cli.extensions.mcp.host_launch import changed_pins, resolve_command, server_env
            from kimi_cli.extensions.mcp.stderr_log import CappedLog
            from kimi_cli.hostsafe.launch import supervised

            moved = changed_pins(self._pins.get(state.name, {}), _cwd(cfg))
            if moved:
                raise McpError(
                    f"not started: {', '.join(moved)} changed since the session started (a command may have "
                    "rewritten it); start a new session to use the server as it is now"
                )

            # stderr through a pipe into a capped, rotated log; kimi's copy of the pipe closes when this
            # server's stack closes, so the log thread ends with the server.
            errlog = CappedLog(self.log_dir / f"mcp-{file_safe(state.name)}.log")
            stack.callback(errlog.close_writer)
            if cfg.sandbox and self.sandbox_mode != "none":  # kimi_cli.extensions.mcp.sandboxed
                from kimi_cli.extensions.mcp.sandboxed import backend_name, sandboxed_stdio

                state.where, state.process = "sandbox", None
                state.where = backend_name(self.sandbox_mode)
                started: list[Any] = []
                inner = sandboxed_stdio(state.home, cfg, self.workspace, state.where, self.settings, errlog.writer,
                                        started)  # fmt: skip
                return _Started(inner, started, state)
            state.where = "host"
            # under the launcher that takes the server down with kimi (kimi_cli.hostsafe.launch.supervised)
            command, args = supervised(resolve_command(cfg.command or ""), cfg.args, cfg.cwd)
            params = StdioServerParameters(command=command, args=args, env=server_env(cfg.env, cfg.args), cwd=cfg.cwd)
            return stdio_client(params, errlog=errlog.writer)
        if cfg.kind == "sse":
            from mcp.client.sse import sse_client

            return sse_client(cfg.url or "", headers=cfg.headers, timeout=cfg.startup_timeout)
        return _http_transport(cfg)

    # --- calls ------------------------------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Run a tool on its server's loop; McpError when the server is down or the call times out."""
        future = asyncio.run_coroutine_threadsafe(self._call(server, tool, arguments), self.loop)
        return await asyncio.wrap_future(future)

    async def _call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        state = self.states[server]
        for attempt in (1, 2):
            if state.session is None and not await self._reconnect(state):
                raise McpError(f"MCP server {server!r} is not running ({state.error or state.status})")
            try:
                return await asyncio.wait_for(
                    state.session.call_tool(tool, arguments), timeout=state.config.tool_timeout
                )
            except TimeoutError:
                raise McpError(f"{tool} on {server!r} took longer than {state.config.tool_timeout:g} s") from None
            except Exception as exc:
                if attempt == 2:
                    raise McpError(f"{tool} on {server!r} failed: {_describe(exc, 0)}") from None
                state.error = _describe(exc, 0)  # the connection is gone: one reconnect, then one more try
                await self._stop_one(state)
                state.session = None
        raise McpError(f"MCP server {server!r} is not running")

    async def _reconnect(self, state: ServerState) -> bool:
        """One new start of a dead server, within its startup timeout."""
        await self._stop_one(state)
        state.settled.clear()
        state.status = "starting"
        state.task = asyncio.ensure_future(self._launch(state))
        deadline = time.monotonic() + state.config.startup_timeout + 1
        while state.status == "starting" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return state.status == "ready"

    async def _stop_one(self, state: ServerState) -> None:
        if state.stop is not None:
            state.stop.set()
        if state.task is not None and not state.task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(state.task), 5)
            if not state.task.done():
                state.task.cancel()

    async def reconnect(self, server: str) -> bool:
        future = asyncio.run_coroutine_threadsafe(self._reconnect(self.states[server]), self.loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Stop every server (their processes exit with them) and the loop thread."""
        if not self._thread.is_alive():
            return

        async def stop_all() -> None:
            for state in self.states.values():
                state.status = "stopped" if state.status == "ready" else state.status
            await asyncio.gather(*(self._stop_one(s) for s in self.states.values()), return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop_all(), self.loop).result(timeout=8)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=3)


class _Started(contextlib.AbstractAsyncContextManager[Any]):
    """The sandboxed transport, its process put on the state as soon as it is known (for the failure message)."""

    def __init__(self, inner: Any, started: list[Any], state: ServerState) -> None:
        self.inner, self.started, self.state = inner, started, state

    async def __aenter__(self) -> Any:
        try:
            return await self.inner.__aenter__()
        finally:
            self.state.process = self.started[0] if self.started else None

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


def _is(exc: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_is(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)


def _http_transport(cfg: ServerConfig) -> Any:
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    client = create_mcp_http_client(headers=cfg.headers or None)
    return streamable_http_client(cfg.url or "", http_client=client)


def _describe(exc: BaseException, startup_timeout: float) -> str:
    if isinstance(exc, TimeoutError) and startup_timeout:
        return f"did not answer within {startup_timeout:g} s (startup_timeout)"
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else exc
        return _describe(inner, startup_timeout)
    from kimi_cli.util.redact import redacted_urls_in

    text = redacted_urls_in(" ".join(str(exc).split()))[:300]  # an HTTP error quotes the URL it requested
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
