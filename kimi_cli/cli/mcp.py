"""`kimi mcp list|test|add|remove|serve`: the MCP servers kimi starts, whether they work, and kimi as one."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from kimi_cli.util.redact import redacted_args, redacted_url

mcp_app = typer.Typer(
    name="mcp",
    help="MCP servers: list them, test one, add or remove one (the mcpServers JSON of Claude Code and kimi-cli); "
    "`kimi mcp serve` serves kimi itself as one.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",  # one help style for every command (kimi_cli/cli/subcommands.py)
)
ScopeOpt = Annotated[str, typer.Option("--scope", help="user (~/.kimi/mcp.json) | project (.kimi/mcp.json).")]


def _echo(text: str, err: bool = False) -> None:
    """Server names, commands, errors and tool descriptions come from configs and servers: made visible."""
    from kimi_cli.util.sanitize import visible

    typer.echo(visible(text), err=err)


_redacted_url = redacted_url  # the names this command's tests and callers know
_redacted_args = redacted_args


def _line(text: str) -> None:
    """One line of output whatever the server put in it: its newlines are written out too."""
    from kimi_cli.util.sanitize import visible

    typer.echo(visible(text, one_line=True))


def _redacted(entry: dict[str, object]) -> dict[str, object]:
    """The entry as it may be shown: header and environment values (tokens) never echoed back."""
    shown = dict(entry)
    for key in ("headers", "env"):
        values = shown.get(key)
        if isinstance(values, dict):
            shown[key] = {k: "[hidden]" for k in values}
    args = shown.get("args")
    if isinstance(args, list):
        shown["args"] = _redacted_args([str(a) for a in args])
    if isinstance(shown.get("url"), str):
        shown["url"] = _redacted_url(str(shown["url"]))
    return shown


def _scope_file(scope: str) -> Path:
    from kimi_cli.util.paths import kimi_home

    if scope not in ("user", "project"):
        typer.echo("kimi mcp: --scope must be user or project", err=True)
        raise typer.Exit(2)
    return kimi_home() / "mcp.json" if scope == "user" else Path.cwd() / ".kimi" / "mcp.json"


_PLACE: dict[str, object] = {}  # what _load found for _start: the user's own servers, the [sandbox] settings


def _load() -> dict:
    from kimi_cli.errors import KimiError
    from kimi_cli.extensions.mcp.config import load_sources
    from kimi_cli.extensions.mcp.wiring import users_own
    from kimi_cli.hostsafe import trust

    state = trust.current(Path.cwd())  # one read of the folder's files: the notice and the servers agree
    notice = state.notice()
    if notice:  # the folder's own servers are neither listed nor started until it is trusted
        _echo(f"kimi mcp: {notice}", err=True)
    try:
        sources = load_sources(Path.cwd(), folder=state)
    except KimiError as exc:
        _echo(f"kimi mcp: {exc}", err=True)
        raise typer.Exit(int(exc.exit_code)) from None
    _PLACE["own"] = users_own(state, sources)
    try:  # the sandbox servers run in is the session's: [sandbox] mode and its hidden paths
        from kimi_cli.config import load_config

        _PLACE["sandbox"] = load_config(Path.cwd(), {}, folder=state).sandbox
    except KimiError:
        _PLACE["sandbox"] = None
    return {name: cfg for name, (_path, cfg) in sources.items()}


def _start(servers: dict) -> object:
    from kimi_cli.extensions.mcp.manager import McpManager
    from kimi_cli.hostsafe.programs import sandbox_writable
    from kimi_cli.util.logs import log_dir

    if Path.cwd() != Path("/"):  # a workspace: its .venv/bin is no place to find a server's program
        sandbox_writable(Path.cwd())
    settings = _PLACE.get("sandbox")
    own = _PLACE.get("own")
    manager = McpManager(
        servers, log_dir(), sandbox_mode=getattr(settings, "mode", "auto"), settings=settings,
        host_allowed=own if isinstance(own, set) else None, workspace=Path.cwd(),
    )  # fmt: skip
    manager.start()
    manager.wait_settled()
    return manager


@mcp_app.command("list")
def list_command() -> None:
    """Each configured server: its status and how many tools it offers (each is started to find out)."""
    servers = _load()
    if not servers:
        typer.echo("no MCP servers configured (kimi mcp add NAME -- COMMAND ARGS, or .kimi/mcp.json)")
        return
    manager = _start({n: s for n, s in servers.items() if s.enabled})
    try:
        for name, cfg in servers.items():
            where = (" ".join([cfg.command or "", *_redacted_args(cfg.args)]) if cfg.kind == "stdio"
                     else _redacted_url(cfg.url or ""))  # fmt: skip
            if not cfg.enabled:
                _echo(f"{name:<20} disabled  {cfg.kind:<5} {where}")
                continue
            state = manager.states[name]  # type: ignore[attr-defined]
            status = f"ready, {len(state.tools)} tools" if state.status == "ready" else f"failed: {state.error}"
            if state.rejected:
                status += f" ({len(state.rejected)} left out: not valid MCP; kimi mcp test {name})"
            _echo(f"{name:<20} {status}  ({cfg.kind}: {where}){_placed(state)}")
        for notice in manager.notices:  # type: ignore[attr-defined]
            _echo(f"kimi mcp: {notice}", err=True)
    finally:
        manager.close()  # type: ignore[attr-defined]


def _placed(state: object) -> str:
    """Where a stdio server ran: `sandboxed (bwrap; workspace read-only, no network)` or `on the host`."""
    cfg, where = state.config, getattr(state, "where", "")  # type: ignore[attr-defined]
    if cfg.kind != "stdio":
        return ""
    if where == "host":
        return "  [on the host: " + ('"sandbox": false]' if not cfg.sandbox else "--sandbox none]")
    workspace = "workspace writable" if cfg.workspace == "write" else "workspace read-only"
    network = "network" if cfg.network else "no network"
    return f"  [sandboxed ({where or 'sandbox'}; {workspace}, {network})]"


@mcp_app.command("test")
def test_command(name: Annotated[str, typer.Argument(help="The server's name.")]) -> None:
    """Connect to one server, list its tools, and show how long it took."""
    servers = _load()
    if name not in servers:
        _echo(f"kimi mcp: no server {name!r}; configured: {', '.join(servers) or 'none'}", err=True)
        raise typer.Exit(2)
    started = time.monotonic()
    manager = _start({name: servers[name]})
    try:
        state = manager.states[name]  # type: ignore[attr-defined]
        if state.status != "ready":
            _echo(f"{name}: failed after {time.monotonic() - started:.2f} s: {state.error}")
            raise typer.Exit(1)
        _echo(f"{name}: ready in {state.ready_after:.2f} s, {len(state.tools)} tools")
        for tool in state.tools:
            described = (tool.description or "").splitlines()[0][:100] if tool.description else ""
            _line(f"  {tool.name}: {described}")
        for tool_name, why in state.rejected:
            _line(f"  {tool_name}: left out, not valid MCP ({why})")
    finally:
        manager.close()  # type: ignore[attr-defined]


@mcp_app.command("add", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def add_command(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for the server.")],
    url: Annotated[str | None, typer.Option("--url", help="An HTTP server's URL.", metavar="URL")] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", help="K=V header for an HTTP server (repeatable).", metavar="K=V")
    ] = None,
    scope: ScopeOpt = "project",
    no_sandbox: Annotated[
        bool, typer.Option("--no-sandbox", help='Run it on the host ("sandbox": false; only --scope user).')
    ] = False,
    network: Annotated[bool, typer.Option("--network", help="Give the sandboxed server the network.")] = False,
    workspace_write: Annotated[
        bool, typer.Option("--workspace-write", help="Let the sandboxed server write the workspace.")
    ] = False,
    pass_env: Annotated[
        list[str] | None, typer.Option("--pass-env", help="A variable it may see (repeatable).", metavar="NAME")
    ] = None,
) -> None:
    """Add a server: `kimi mcp add NAME -- COMMAND ARGS...` or `kimi mcp add NAME --url URL [--header K=V]`.
    A stdio server runs sandboxed: its own ~/.kimi/mcp/NAME/, the workspace read-only, no network."""
    from kimi_cli.extensions.mcp.config import save_server

    command = [a for a in ctx.args if a != "--"]
    if bool(command) == bool(url):
        typer.echo("kimi mcp add: give either `-- COMMAND ARGS...` or --url URL", err=True)
        raise typer.Exit(2)
    entry: dict[str, object] = {"command": command[0], "args": command[1:]} if command else {"url": url}
    if header:
        entry["headers"] = dict(h.split("=", 1) for h in header if "=" in h)
    if no_sandbox and scope != "user":
        typer.echo("kimi mcp add: --no-sandbox only with --scope user (a folder's file may not say it)", err=True)
        raise typer.Exit(2)
    if command:
        entry.update({k: v for k, v in (("sandbox", False if no_sandbox else None), ("network", network or None),
                      ("workspace", "write" if workspace_write else None), ("pass_env", pass_env or None))
                      if v is not None})  # fmt: skip
    path = _scope_file(scope)
    save_server(path, name, entry)
    _echo(f"added {name} to {path}: {json.dumps(_redacted(entry))}")


@mcp_app.command("remove")
def remove_command(
    name: Annotated[str, typer.Argument(help="The server's name.")], scope: ScopeOpt = "project"
) -> None:
    """Remove a server from the user or project file."""
    from kimi_cli.extensions.mcp.config import save_server

    path = _scope_file(scope)
    save_server(path, name, None)
    _echo(f"removed {name} from {path}")


@mcp_app.command("serve")
def serve_command(
    http: Annotated[
        int | None, typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1:PORT/mcp (default: stdio).")
    ] = None,
    root: Annotated[
        list[Path] | None,
        typer.Option("--root", help="A folder tasks may run in, with its subfolders (repeatable; default: here)."),
    ] = None,
    file_tools: Annotated[
        bool, typer.Option("--file-tools", help="Also serve the read-only file tools (read_file, glob, grep).")
    ] = False,
) -> None:
    """Serve kimi as an MCP server: the tools `kimi` (run a task) and `kimi_reply` (continue a session).
    HTTP needs `Authorization: Bearer TOKEN`: KIMI_MCP_TOKEN, or the one printed on stderr at start."""
    from kimi_cli.errors import KimiError

    roots = [p.expanduser().resolve() for p in (root or [Path.cwd()])]
    for folder in roots:
        if not folder.is_dir():
            _echo(f"kimi mcp serve: --root {folder} is not a directory", err=True)
            raise typer.Exit(2)
    from kimi_cli.frontends.mcp_server.server import build_server, serve_http, serve_stdio

    server = build_server(roots, file_tools=file_tools)
    if http is None:
        serve_stdio(server)
        return
    from kimi_cli.frontends.mcp_server.gate import TOKEN_ENV, server_token

    try:
        token, made = server_token()
    except KimiError as exc:
        _echo(f"kimi mcp serve: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"kimi: serving MCP on http://127.0.0.1:{http}/mcp", err=True)
    if made:
        typer.echo(f"kimi: token (send Authorization: Bearer TOKEN; set {TOKEN_ENV} to choose it): {token}", err=True)
    serve_http(server, http, token)
