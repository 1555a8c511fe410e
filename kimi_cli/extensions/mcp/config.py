"""The `mcpServers` JSON that Claude Code and kimi-cli use: ~/.kimi/mcp.json, .kimi/mcp.json, --mcp-config.

`${VAR}` expands from the environment, so secrets stay out of files. A bad file names the file and the
key, and exits 2. Later files override earlier ones server by server.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kimi_cli.errors import ConfigError
from kimi_cli.hostsafe.settings_read import read_settings_text
from kimi_cli.util import jsonsafe
from kimi_cli.util.paths import kimi_home

if TYPE_CHECKING:
    from kimi_cli.hostsafe.trust import FolderTrust

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    transport: Literal["stdio", "http", "streamable-http", "sse"] | None = Field(default=None, alias="type")
    enabled: bool = True
    startup_timeout: float = Field(default=10.0, gt=0, le=300)
    # how long the first request waits for this server (None: `[mcp] startup_timeout`, about 5 s); a server
    # ready later joins then (its tools through messages[].tools where the model takes them)
    startup_wait: float | None = Field(default=None, ge=0, le=300)
    tool_timeout: float = Field(default=60.0, gt=0, le=3600)
    enabled_tools: list[str] | None = None
    disabled_tools: list[str] = Field(default_factory=list)
    read_only: list[str] = Field(default_factory=list)
    # Where a stdio server runs (kimi_cli.extensions.mcp.sandboxed): in the session's sandbox unless `sandbox` is
    # false, which only the user's own configuration may say (kimi_cli.hostsafe.trust_rules.MCP_SERVER_FIELDS).
    sandbox: bool = True
    workspace: Literal["read", "write"] = "read"  # the workspace, read-only to the server unless "write"
    network: bool = False
    pass_env: list[str] = Field(default_factory=list)  # kimi's variables it may see (never a key, never NEVER)

    @model_validator(mode="after")
    def _one_kind(self) -> ServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either `command` (a stdio server) or `url` (an HTTP server)")
        return self

    @property
    def kind(self) -> str:
        if self.command:
            return "stdio"
        if self.transport == "sse" or (self.transport is None and (self.url or "").rstrip("/").endswith("/sse")):
            return "sse"
        return "http"

    def wants(self, tool: str) -> bool:
        if tool in self.disabled_tools:
            return False
        return self.enabled_tools is None or tool in self.enabled_tools


def file_safe(name: str) -> str:
    """A server name as a file name (its log, its state folder): no folders, no control characters, never "." or
    "..". A name that had to change ends in a digest of it, so "a/b" and "a_b" never share a state folder."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80]
    if safe == name and safe.strip("."):
        return safe
    import hashlib

    return f"{safe.strip('.')[:68] or 'server'}-{hashlib.sha256(name.encode()).hexdigest()[:11]}"


def server_cwd(cfg: ServerConfig) -> Path:
    """The folder a stdio server starts in (its own `cwd`, else kimi's: usually the workspace)."""
    import os

    return Path(os.getcwd(), cfg.cwd or "")


def expand(value: Any, environ: dict[str, str], where: str, refused: tuple[str, ...] = ()) -> Any:
    """${VAR} in every string, from the environment; a variable that is not set, or `refused`, is an error."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in refused:
                raise ConfigError(f"{where}: ${{{name}}} is never given to a folder's server (an API key)")
            if name not in environ:
                raise ConfigError(f"{where}: ${{{name}}} is not set in the environment")
            return environ[name]

        return VAR.sub(sub, value)
    if isinstance(value, list):
        return [expand(v, environ, where, refused) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, environ, f"{where}.{k}", refused) for k, v in value.items()}
    return value


def config_paths(workspace: Path, extra: list[Path] | None = None, project: bool = True) -> list[Path]:
    """The user's file, the folder's own (only when `project`), then --mcp-config files."""
    own = [workspace / ".kimi" / "mcp.json"] if project else []
    return [kimi_home() / "mcp.json", *own, *(extra or [])]


def read_file(path: Path) -> dict[str, Any]:
    try:
        data = jsonsafe.loads(read_settings_text(path))
    except OSError as exc:
        raise ConfigError(f"cannot read MCP configuration {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"invalid MCP configuration in {path}: not valid JSON ({exc})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"invalid MCP configuration in {path}: expected an object with `mcpServers`")
    return servers


def load_servers(
    workspace: Path,
    extra: list[Path] | None = None,
    environ: dict[str, str] | None = None,
    trusted: bool | None = None,
    folder: FolderTrust | None = None,
) -> dict[str, ServerConfig]:
    """Every configured server by name, later files winning; disabled ones included (for `kimi mcp list`)."""
    return {name: cfg for name, (_source, cfg) in load_sources(workspace, extra, environ, trusted, folder).items()}


def load_sources(
    workspace: Path,
    extra: list[Path] | None = None,
    environ: dict[str, str] | None = None,
    trusted: bool | None = None,
    folder: FolderTrust | None = None,
) -> dict[str, tuple[Path, ServerConfig]]:
    """Every configured server by name, with the file it came from.

    The folder's own .kimi/mcp.json counts only when the folder is trusted (kimi_cli.hostsafe.trust): its servers are
    programs that would start on the host. It, and the `mcp_config` files the folder's config names, come
    from the snapshot the trust decision was made on (`folder`, else trust.current), never from a second read."""
    from kimi_cli.hostsafe import trust
    from kimi_cli.hostsafe.secrets import ALL_KEY_VARIABLES  # (hostsafe imports this module: not sandbox.env)

    env = dict(os.environ) if environ is None else environ
    state = folder if folder is not None else trust.current(workspace)
    project = state.project
    if trusted is None:
        trusted = state.applies
    # Each layer with the variables its ${VAR} may not name: the folder's files (its .kimi/mcp.json and the files
    # its config names) never a provider's key variable, which would reach its server as env, argument or url.
    merged: dict[str, tuple[Path, Any, tuple[str, ...]]] = {}
    layers: list[tuple[Path, dict[str, Any] | None, str | None, tuple[str, ...]]] = []
    user = kimi_home() / "mcp.json"
    if user.is_file():
        layers.append((user, read_file(user), None, ()))
    if trusted and project.mcp_present:
        layers.append((project.mcp_path, project.mcp_servers, project.mcp_error, ALL_KEY_VARIABLES))
    for path in extra or []:
        known = project.mcp_file(path)
        if known is not None:
            layers.append((path, known.servers, known.error, ALL_KEY_VARIABLES))
        else:
            layers.append((path, read_file(path), None, ()))
    for path, found, error, refused in layers:
        if error is not None:
            raise ConfigError(error)
        for name, raw in (found or {}).items():
            merged[name] = (path, raw, refused)
    servers: dict[str, tuple[Path, ServerConfig]] = {}
    for name, (path, raw, refused) in merged.items():
        try:
            expanded = expand(raw, env, f"{path}: mcpServers.{name}", refused)
            servers[name] = (path, ServerConfig.model_validate(expanded))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(server)'}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigError(f"invalid MCP configuration in {path}: mcpServers.{name}: {problems}") from None
    return servers


def save_server(path: Path, name: str, server: dict[str, Any] | None) -> None:
    """Add, replace (server) or remove (None) one server in a config file, keeping the others. The user's own
    change to a folder's .kimi/mcp.json keeps a trusted folder trusted (kimi_cli.hostsafe.trust.note_own_change)."""
    from kimi_cli.hostsafe import trust
    from kimi_cli.util.paths import is_users_own

    folder = path.parent.parent
    own_project = path.name == "mcp.json" and path.parent.name == ".kimi" and not is_users_own(folder)
    before = trust.current(folder) if own_project else None
    data: dict[str, Any] = {"mcpServers": {}}
    if path.is_file():
        data = jsonsafe.loads(read_settings_text(path))
        data.setdefault("mcpServers", {})
    if server is None:
        data["mcpServers"].pop(name, None)
    else:
        data["mcpServers"][name] = server
    from kimi_cli.hostsafe.fs import write_private

    write_private(path, json.dumps(data, indent=2) + "\n")  # 0600: headers and env may hold tokens
    if before is not None:
        trust.note_own_change(folder, before, f"mcp:{name}", server)
