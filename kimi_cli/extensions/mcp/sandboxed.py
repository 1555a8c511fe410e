"""A stdio MCP server in the sandbox: its own policy, the session's backend, the language servers' way of starting.

An MCP server reads web pages, tickets and repositories for the model, so one that is injected or compromised
must not have the user's home. By default a stdio server runs in the sandbox backend the session uses (bwrap or
landlock; with a Docker session, whichever of the two works on the host: the container has no seam for a second,
differently confined process) under a policy of its own:
- its one writable folder is ~/.kimi/mcp/<name>/ (0700; its HOME, with its private tmp inside; a folder's own
  server's is <name>.folder-<digest>, see folder_state_name). The rest of
  ~/.kimi stays hidden: the folder is split around, as Landlock splits homes;
- it reads what a sandboxed command reads (its install, node_modules, a venv, the system), never the hidden
  credential table;
- the workspace is read-only unless its config says `"workspace": "write"` (.git and .kimi stay read-only and
  guarded as for commands);
- the network only with `"network": true`; host unix sockets never;
- its environment is the sandbox's allowlist (kimi_cli.sandbox.env), plus the names its `pass_env` lists, plus
  its own `env`; never a key variable or a name on env.NEVER, whichever of them asks.
It is started as the language servers are (kimi_cli.sandbox.long_lived.start_in_sandbox: the backend's
spawn_spec under the launcher that ends its group with kimi). `"sandbox": false` runs it on the host as before;
only the user's own configuration may say so (kimi_cli.hostsafe.trust_rules.MCP_SERVER_FIELDS).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shlex
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.extensions.mcp.config import ServerConfig, file_safe, server_cwd

if TYPE_CHECKING:
    from kimi_cli.config import SandboxSettings
    from kimi_cli.sandbox.long_lived import ServerProcess
    from kimi_cli.sandbox.policy import SandboxPolicy

HINTS = (
    'if it needs the network set "network": true, to write the workspace "workspace": "write", to see a variable '
    '"pass_env": ["NAME"]; or run it on the host with "sandbox": false in your own ~/.kimi/mcp.json'
)


class SandboxStartError(Exception):
    """A server that cannot start sandboxed: the message says why and what to set."""


def folder_state_name(name: str, workspace: Path) -> str:
    """The state folder's name for a server a folder's own files configure: its name and a digest of the folder.
    A folder's server named like one of the user's ("github") ran with the user's server's HOME, and read what
    that one keeps there (its tokens); the user's own servers keep `name` itself."""
    import hashlib

    digest = hashlib.sha256(str(workspace.absolute()).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{file_safe(name)[:60]}.folder-{digest}"


def state_dir(name: str) -> Path:
    """~/.kimi/mcp/<name>/, made 0700 (each level), the server's HOME and only writable folder. `name` is the
    server's name, or folder_state_name's for a folder's server."""
    from kimi_cli.util.paths import kimi_home, make_private_dir

    folder = kimi_home() / "mcp" / file_safe(name)
    for level in (kimi_home(), folder.parent, folder):
        make_private_dir(level)
    # Landlock only grants: a ~/.kimi/mcp holding nothing the server's hidden table names would be granted whole,
    # and a folder made there later (another server's, started a moment after) readable. This marker is always
    # there to hide, so its children are granted one by one.
    marker = folder.parent / ".hidden-from-servers"
    if not marker.exists() and not marker.is_symlink():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    # tmp lies in the folder the server writes: a link it left there would be the bind source (bwrap) or the granted
    # path (Landlock) of its next /tmp, a host folder past every hidden path. A real folder goes back in its place.
    tmp = folder / "tmp"
    if tmp.is_symlink() or (tmp.exists() and not tmp.is_dir()):
        tmp.unlink()
    make_private_dir(tmp)
    return folder


def backend_name(mode: str) -> str:
    """The backend sandboxed servers use for a session's `[sandbox] mode`: "none" (no sandbox: the host),
    else bwrap or landlock, probed once (auto and docker: bwrap where it works, else landlock)."""
    if mode in ("none", "bwrap", "landlock"):
        return mode
    return _probed()


_PROBED: list[str] = []


def _probed() -> str:
    if not _PROBED:
        import tempfile

        from kimi_cli.sandbox.backends.bwrap import bwrap_works
        from kimi_cli.sandbox.backends.landlock.backend import landlock_works
        from kimi_cli.sandbox.policy import build_policy

        with tempfile.TemporaryDirectory(prefix="kimi-mcp-probe-") as folder:
            probe = build_policy(Path(folder), Path(folder))
            name = "bwrap" if bwrap_works(probe)[0] else "landlock" if landlock_works(probe)[0] else ""
        _PROBED.append(name)
    if not _PROBED[0]:
        raise SandboxStartError(f"neither bwrap nor landlock can sandbox it here; {HINTS}")
    return _PROBED[0]


def server_policy(
    name: str, cfg: ServerConfig, workspace: Path, settings: SandboxSettings | None = None,
    environ: dict[str, str] | None = None,
) -> SandboxPolicy:  # fmt: skip
    """The server's own policy: see the module's docstring."""
    from kimi_cli.hostsafe.protected import PROTECTED_NAMES
    from kimi_cli.hostsafe.secrets import ALL_KEY_VARIABLES
    from kimi_cli.sandbox.env import NEVER, pass_env_refusal
    from kimi_cli.sandbox.policy import HiddenPath, build_policy
    from kimi_cli.util.paths import kimi_home

    home = state_dir(name)
    environ = dict(os.environ) if environ is None else environ
    refused = set(NEVER) | set(ALL_KEY_VARIABLES)
    # One name each, as --pass-env takes them: env_allow reads patterns, and a folder's "*" passed every credential
    passed = [n for n in cfg.pass_env if n not in refused and not pass_env_refusal(n)]
    base = build_policy(
        home, home / "tmp", network=cfg.network, environ=environ, env_allow=passed,
        extra_hidden=settings.hidden_paths if settings else None, env_deny=settings.env_deny if settings else None,
    )  # fmt: skip
    # ~/.kimi holds the server's folder, so build_policy left it out of the hidden table (it never hides a
    # folder holding the writable root): everything in it but the way down to this server's folder is hidden.
    hidden = list(base.hidden)
    for folder, keep in ((kimi_home(), "mcp"), (home.parent, home.name)):
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            hidden += [HiddenPath(Path(e.path), e.is_dir(follow_symlinks=False)) for e in entries if e.name != keep]
    env = {**base.env, **{k: v for k, v in cfg.env.items() if k not in refused}}
    env.update(HOME=str(home), TMPDIR=str(home / "tmp"))
    from kimi_cli.extensions.mcp.host_launch import code_from_cwd

    if code_from_cwd(cfg.args):  # `python -m NAME` never imports a NAME.py planted in the workspace
        env.setdefault("PYTHONSAFEPATH", "1")
    ws = workspace.resolve()
    # Read-only: bound so (bwrap's private /tmp would cover a workspace under /tmp otherwise); Landlock grants
    # it reading as it grants the system. Written: .git and .kimi in it stay read-only, as for commands.
    if cfg.workspace == "write":
        protected = tuple(ws / n for n in PROTECTED_NAMES if (ws / n).exists() and not (ws / n).is_symlink())
        return dataclasses.replace(base, hidden=tuple(hidden), env=env, writable=(ws,), read_only=protected)
    return dataclasses.replace(base, hidden=tuple(hidden), env=env, read_only=(ws,))


def open_backend(backend: str, policy: SandboxPolicy) -> Any:
    """The backend's sandbox object for the server's policy (its spawn_spec starts the server)."""
    if backend == "bwrap":
        from kimi_cli.sandbox.backends.bwrap import BwrapSandbox

        return BwrapSandbox(policy, 1 << 16, shell="/bin/sh")
    from kimi_cli.kernel.restrict import Unavailable
    from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox

    try:
        return LandlockSandbox(policy, 1 << 16, shell="/bin/sh")
    except (Unavailable, OSError) as exc:
        raise SandboxStartError(f"landlock cannot sandbox it here ({exc}); {HINTS}") from None


def launch_line(program: str, args: list[str], cwd: Path) -> str:
    """The shell line the sandbox runs: into the server's folder, then exec of its argv."""
    return f"cd {shlex.quote(str(cwd))} && exec {shlex.join([program, *map(str, args)])}"


def check_install(program: str, policy: SandboxPolicy) -> None:
    """A program under a hidden folder cannot run in the sandbox: say so before starting it."""
    from kimi_cli.kernel.contain import inside

    real = Path(os.path.realpath(program))
    for entry in policy.hidden:
        if inside(real, entry.path):
            raise SandboxStartError(f"its program {program} lies in {entry.path}, which the sandbox hides; {HINTS}")


@contextlib.asynccontextmanager
async def sandboxed_stdio(
    name: str, cfg: ServerConfig, workspace: Path, backend: str, settings: SandboxSettings | None,
    errlog: Any, started: list[ServerProcess],
) -> AsyncIterator[tuple[Any, Any]]:  # fmt: skip
    """The MCP session's two streams over a sandboxed server's stdout and stdin. `started` gets the process
    (the manager reads its stderr's last line when the server fails)."""
    import anyio
    from mcp.shared.message import SessionMessage

    from kimi_cli.extensions.mcp.host_launch import resolve_command
    from kimi_cli.sandbox.long_lived import ServerProcess, StderrTail, start_in_sandbox

    if backend == "landlock" and cfg.network:
        # The landlock backend confines a process it does not fork through its spawner with connect() refused
        # outright (no supervisor tells the host's unix sockets from the network): a server that needs the
        # network would start and then fail every call. Say so now.
        raise SandboxStartError(
            '"network": true needs the bwrap backend: under landlock a sandboxed server cannot connect anywhere '
            '(--sandbox bwrap where it works, or "sandbox": false in your own ~/.kimi/mcp.json)'
        )
    policy = server_policy(name, cfg, workspace, settings)
    program = resolve_command(cfg.command or "")
    check_install(program, policy)
    sandbox = open_backend(backend, policy)
    try:
        outside = (policy.workspace, policy.private_tmp, *policy.writable)
        try:
            proc = await start_in_sandbox(launch_line(program, cfg.args, server_cwd(cfg)), sandbox, policy.workspace,
                                          outside)  # fmt: skip
        except OSError as exc:
            raise SandboxStartError(f"the {backend} sandbox did not start: {exc}; {HINTS}") from None
        server = ServerProcess(proc, StderrTail())
        started.append(server)
        server.drain = asyncio.ensure_future(_drain(proc, server, errlog))
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

        async def reader() -> None:
            # Lines by hand: the stream's own readline stops at its 64 KB limit, and a result may be an image of
            # megabytes (the SDK's stdio reads lines of any length too; result_limits cuts what is kept).
            assert proc.stdout is not None
            async with read_in:
                pending = bytearray()
                while chunk := await proc.stdout.read(1 << 20):
                    pending += chunk
                    while (end := pending.find(b"\n")) >= 0:
                        line = bytes(pending[:end])
                        del pending[: end + 1]
                        if line.strip():
                            await read_in.send(_message(line))

        async def writer() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(OSError, anyio.ClosedResourceError):
                async with write_out:
                    async for message in write_out:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        proc.stdin.write(data.encode() + b"\n")
                        await proc.stdin.drain()

        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(writer)
            try:
                yield read_out, write_in
            finally:
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await server.stop()
    finally:
        sandbox.close_sync()


def _message(line: bytes) -> Any:
    """One line of the server's stdout: a JSON-RPC message, or the error the session is handed instead."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _drain(proc: asyncio.subprocess.Process, server: ServerProcess, errlog: Any) -> None:
    """The server's stderr into its log and the tail kept for the failure message."""
    assert proc.stderr is not None
    with contextlib.suppress(Exception):
        while chunk := await proc.stderr.read(65536):
            server.stderr.feed(chunk)
            errlog.write(chunk.decode("utf-8", "replace"))
            errlog.flush()


def failure(backend: str, server: ServerProcess | None, error: str) -> str:
    """Why a sandboxed server did not start: the error, its stderr's last line, and what to set."""
    last = server.stderr.last_line() if server is not None else ""
    said = f"; its last words: {last}" if last else ""
    return f"{error} (sandboxed with {backend}{said}); {HINTS}"
