"""Wiring MCP into a session: start the servers early, and turn ready servers' tools into agent tools, the late
ones at the end of the tools block as they become ready."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.extensions.mcp.config import load_sources, server_cwd
from kimi_cli.extensions.mcp.manager import McpManager
from kimi_cli.extensions.mcp.naming import assign_names, tool_name
from kimi_cli.extensions.mcp.tool import McpApprover, McpTool
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.util.logs import log_dir

if TYPE_CHECKING:
    from kimi_cli.hostsafe.trust import FolderTrust


def start_mcp(
    workdir: Path, extra_files: list[str], folder: FolderTrust | None = None, sandbox: Any = None
) -> McpManager | None:
    """Load the configuration (ConfigError on a bad file) and start every enabled server in the background.
    The folder's own servers come from `folder`'s snapshot (the session's trust decision), with the digests of
    the workspace scripts they name as that snapshot took them. Nothing is imported from the MCP SDK when no
    server is configured. `sandbox`: the session's [sandbox] settings (stdio servers run in its backend)."""
    from kimi_cli.hostsafe import trust
    from kimi_cli.util.paths import kimi_home

    # --mcp-config paths arrive absolute; a relative one comes from a config file and means the workspace's
    # (kimi_cli.extensions.mcp.host_launch digests that very file for the folder's trust).
    extra = [Path(workdir, Path(p).expanduser()) for p in extra_files]
    state = folder if folder is not None else trust.current(workdir)
    if not extra and not state.project.mcp_present and not (kimi_home() / "mcp.json").is_file():
        return None
    sources = load_sources(workdir, extra, folder=state)
    servers = {name: cfg for name, (_path, cfg) in sources.items()}
    if not any(s.enabled for s in servers.values()):
        return None
    from kimi_cli.hostsafe.programs import sandbox_writable

    sandbox_writable(
        workdir
    )  # servers' programs are never found in the workspace (kimi_cli.extensions.mcp.host_launch)
    manager = McpManager(
        servers, log_dir(), _snapshot_pins(state, sources), sandbox_mode=getattr(sandbox, "mode", "auto"),
        settings=sandbox, host_allowed=users_own(state, sources), workspace=workdir,
    )  # fmt: skip
    manager.start()
    return manager


def users_own(state: FolderTrust, sources: dict[str, tuple[Path, Any]]) -> set[str]:
    """The servers defined in the user's own files (~/.kimi/mcp.json, --mcp-config, the user's `mcp_config`),
    not in the folder's .kimi/mcp.json or a file its config lists: only theirs may say `"sandbox": false`."""
    project = state.project
    return {name for name, (path, _cfg) in sources.items()
            if path != project.mcp_path and project.mcp_file(path) is None}  # fmt: skip


def _snapshot_pins(state: FolderTrust, sources: dict[str, tuple[Path, Any]]) -> dict[str, dict[str, str]]:
    """The script digests the trust snapshot took for the folder's own servers (by server name), where the
    server starts in the folder they were taken in; the manager checks those, not digests of its own."""
    found: dict[str, dict[str, str]] = {}
    for name, (path, cfg) in sources.items():
        taken = state.project.server_pins.get((str(path), name))
        if taken is not None and cfg.command and server_cwd(cfg).resolve() == taken[0].resolve():
            found[name] = taken[1]
    return found


def mcp_tools(
    manager: McpManager, approver: McpApprover, taken: set[str]
) -> tuple[list[McpTool], list[str], list[str]]:
    """Tools of every server that is ready now, with stable unique names; a notice for each server that
    failed; and the servers still starting, which are not waited for (LateServers brings their tools)."""
    status = {name: state.status for name, state in manager.states.items()}  # one snapshot: no server in two
    ready = [name for name, st in status.items() if st == "ready"]
    starting = [name for name, st in status.items() if st == "starting"]
    failed = [name for name, st in status.items() if st not in ("ready", "starting")]
    tools, notices = _tools_of(manager, ready, approver, taken)
    told, manager.notices = manager.notices, []
    return tools, told + [_unavailable(manager, name) for name in failed] + notices, starting


def _unavailable(manager: McpManager, name: str) -> str:
    state = manager.states[name]
    return f"MCP server {name!r} is not available ({state.error or state.status}); its tools are left out"


def _tools_of(
    manager: McpManager, servers: list[str], approver: McpApprover, taken: set[str]
) -> tuple[list[McpTool], list[str]]:
    pairs: list[tuple[str, str]] = []
    by_pair: dict[tuple[str, str], Any] = {}
    notices: list[str] = []
    for name in servers:
        state = manager.states[name]
        notices += _rejected_notices(name, [(tool, why) for tool, why in state.rejected if state.config.wants(tool)])
        for tool in state.tools:
            if state.config.wants(tool.name):
                pairs.append((name, tool.name))
                by_pair[(name, tool.name)] = tool
    names = assign_names(pairs, taken)
    tools: list[McpTool] = []
    for server, tool in sorted(pairs):
        made = McpTool(manager, server, manager.states[server].config, by_pair[(server, tool)],
                       names[(server, tool)], approver)  # fmt: skip
        if made.schema_problem:  # one tool with a schema we cannot convert is left out; its server stays
            notices.append(
                f"MCP server {server!r}: tool {tool!r} is left out, its input schema cannot be sent to the model "
                f"({made.schema_problem})"
            )
            continue
        tools.append(made)
    return tools, notices


MAX_REJECTED_NOTICES = 10


def _rejected_notices(server: str, rejected: list[tuple[str, str]]) -> list[str]:
    """One notice per tool the protocol does not allow; past a few, one notice for them all."""
    if len(rejected) <= MAX_REJECTED_NOTICES:
        return [f"MCP server {server!r}: tool {tool!r} is left out, the server describes it in a form the MCP "
                f"protocol does not allow ({why})" for tool, why in rejected]  # fmt: skip
    names = ", ".join(repr(tool) for tool, _ in rejected[:5])
    return [f"MCP server {server!r}: {len(rejected)} tools are left out, the server describes them in a form the "
            f"MCP protocol does not allow ({names}, ...; `kimi mcp test {server}` lists them)"]  # fmt: skip


class LateServers:
    """Servers that were still starting when the session's first request went out.

    The first request does not wait for them. Before each later request `poll` adds the tools of those
    that have become ready at the END of the registry (the tools block already sent stays byte-identical,
    so the cached prompt prefix survives) and returns a one-line note per server for the model. When the
    model calls a tool of a server that is still starting (it cannot know its name from this session, but
    a resumed history may), `wait_for` waits for that server, within its startup timeout.
    """

    def __init__(self, manager: McpManager, approver: McpApprover, registry: ToolRegistry, pending: list[str]) -> None:
        self.manager = manager
        self.approver = approver
        self.registry = registry
        self.pending = list(pending)
        self.notices: list[str] = []  # for the user: schema problems and servers that failed late
        self._notes: list[str] = []  # for the model, from a wait_for between two requests
        self._later = registry.late  # another source of late tools, asked about the names that are not ours
        registry.late = self.wait_for

    def poll(self) -> list[str]:
        """Tools of the servers that settled since the last poll, appended; the notes for the model."""
        notes, self._notes = self._notes, []
        settled = [name for name in self.pending if self.manager.states[name].settled.is_set()]
        if not settled:
            return notes
        self.pending = [name for name in self.pending if name not in settled]
        ready = [name for name in settled if self.manager.states[name].status == "ready"]
        tools, problems = _tools_of(self.manager, ready, self.approver, set(self.registry.names))
        admit = getattr(self.registry, "admit", self.registry.append)  # a tool limit may defer some
        added = set(admit(tools))
        for name in settled:
            if name not in ready:
                self.notices.append(_unavailable(self.manager, name))
                notes.append(f"MCP server {name!r} did not start; its tools will not be available.")
                continue
            own = [t.name for t in tools if t.server == name and t.name in added]
            if own:
                notes.append(f"MCP server {name!r} is ready: its tools are now at the end of your tool list ("
                             f"{', '.join(own)}).")  # fmt: skip
        self.notices += problems
        return notes

    async def wait_for(self, names: list[str]) -> None:
        """Called with tool names the registry does not have: wait for the starting servers those names
        could belong to, then poll (its notes go out before the next request)."""
        import asyncio

        wanted = [s for s in self.pending if any(n.startswith(tool_name(s, "")) for n in names)]
        if wanted:
            # The manager settles each server at its startup timeout; the margin covers a loaded machine,
            # where that timer fires late (a settled server never waits the margin).
            timeout = max(self.manager.states[s].config.startup_timeout for s in wanted) + 5
            await asyncio.to_thread(_wait_all, [self.manager.states[s].settled for s in wanted], timeout)
            self._notes += self.poll()
        rest = [n for n in names if n not in self.registry]
        if rest and self._later is not None:
            await self._later(rest)

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices


def _wait_all(events: list[Any], timeout: float) -> None:
    import time

    deadline = time.monotonic() + timeout
    for event in events:
        event.wait(max(0.0, deadline - time.monotonic()))
