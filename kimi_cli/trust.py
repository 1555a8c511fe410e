"""Folder trust: may this folder's own config widen what kimi does?

A workspace's `.kimi/config.toml` and `.kimi/mcp.json` are data the workspace controls: a cloned repository
ships them, and a sandboxed command can write them. Settings there that would widen what kimi may do (where
the user's API key goes, programs started on the host, a sandbox turned off, approvals waved through) apply
only once the user trusts the folder. Settings that narrow (deny rules, hidden paths, a stricter policy)
always apply. Trust is remembered in ~/.kimi/trusted.json by folder and by a digest of exactly those
settings, so a change to them asks again.

For other features (hooks, custom commands, ...): add the keys that widen to WIDENING below, and ask
`is_trusted(folder)` before using anything the folder's config declares. Front ends decide once per session
with `resolve()` (interactive: a question; headless: `--trust` or `kimi trust`; ACP: a permission request).
"""

from __future__ import annotations

import hashlib
import json
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.paths import kimi_home, write_private
from kimi_cli.settings_read import read_settings_text

# Dotted key in a project config -> when it widens: "any" (any value), "true" (a true value), "nonempty"
# (a non-empty list or table), or a tuple of the values that widen. One line per setting; keep it data.
WIDENING: dict[str, Any] = {
    "base_url": "any",  # the user's key would go to the folder's endpoint
    "provider": "any",
    "api_key": "any",
    "providers": "nonempty",
    "yolo": "true",
    "approval.allow": "nonempty",
    "sandbox.mode": ("none",),
    "sandbox.allow_network": "true",
    "sandbox.writable_paths": "nonempty",
    "sandbox.readable_paths": "nonempty",
    "sandbox.env_allow": "nonempty",  # kimi's environment (tokens, database URLs) into commands
    "web.allowed_hosts": "nonempty",
    "web.allowed_private_hosts": "nonempty",
    "git.allow_hooks": "true",
    "mcp_config": "nonempty",
    "hooks": "any",
    "commands": "any",
}
# Files of the folder, not settings, that widen what kimi does: the scripts its hooks run, its custom commands
# that run `!cmd` or pre-approve tools. "module:function" (folder) -> [(key, value, description)]; the values
# go into the digest, so a changed script or command asks again.
FILE_WIDENINGS = ("kimi_cli.hooks.pins:widenings", "kimi_cli.hooks.claude:widenings",
                  "kimi_cli.commands_custom.loader:widenings", "kimi_cli.mcp.host_launch:widenings")  # fmt: skip
WHAT = {
    "base_url": "send requests (and your API key) to {host} ({value})",
    "provider": "use the provider {value}",
    "api_key": "use its own API key",
    "providers": "change provider endpoints: {host} ({value})",
    "yolo": "approve every action (yolo)",
    "approval.allow": "approve without asking: {value}",
    "sandbox.mode": 'run commands with no sandbox (sandbox.mode = "none")',
    "sandbox.allow_network": "give sandboxed commands the network",
    "sandbox.writable_paths": "let commands write {value}",
    "sandbox.readable_paths": "let commands read {value}",
    "sandbox.env_allow": "pass your environment variables {value} to commands",
    "web.allowed_hosts": "fetch without asking from {value}",
    "web.allowed_private_hosts": "fetch from private or local hosts {value}",
    "git.allow_hooks": "run the repository's git hooks on commit",
    "mcp_config": "load MCP config files {value}",
    "hooks": "run hook commands",
    "commands": "add custom commands",
}


@dataclass(frozen=True)
class Widening:
    """One thing a folder's config asks for that widens what kimi may do."""

    key: str  # "base_url", "sandbox.mode", "mcp:NAME"
    value: Any
    description: str


@dataclass
class FolderTrust:
    """A folder, what its config asks for, and whether those settings apply in this session."""

    folder: Path
    asks: list[Widening] = field(default_factory=list)
    digest: str = ""
    trusted: bool = False
    how: str = "nothing to trust"  # remembered | --trust | you agreed | not trusted | nothing to trust

    @property
    def applies(self) -> bool:
        """Whether the folder's widening settings may be used (trusted, or it asks for nothing)."""
        return self.trusted or not self.asks

    def notice(self) -> str | None:
        """The one notice for an untrusted folder that asks for something, naming what was ignored."""
        if self.applies:
            return None
        names = ", ".join(w.key for w in self.asks)
        return (
            f"{self.folder} asks (in .kimi or .claude) for settings that widen what kimi may do ({names}); this "
            f"folder is not trusted, so they are ignored. Trust it with --trust or `kimi trust {self.folder}`."
        )

    def summary(self) -> list[str]:
        return [w.description for w in self.asks]


def _get(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _widens(rule: Any, value: Any) -> bool:
    if value is None:
        return False
    if rule == "any":
        return True
    if rule == "true":
        return value is True
    if rule == "nonempty":
        return bool(value)
    return value in rule


def _short(value: Any) -> str:
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def project_files(folder: Path) -> tuple[Path, Path]:
    return folder / ".kimi" / "config.toml", folder / ".kimi" / "mcp.json"


def is_users_own(folder: Path) -> bool:
    """The folder's .kimi is the user's own ~/.kimi (kimi started in the home folder): nothing to trust."""
    try:
        return (folder / ".kimi").resolve() == kimi_home().resolve()
    except OSError:
        return False


def hosts_in(value: Any) -> str:
    """The hosts the URLs in a setting lead to, named apart from the (possibly cut) URL text: a long
    `https://api.moonshot.ai----...@evil.example/` must not show only its harmless-looking start."""
    from urllib.parse import urlsplit

    found: list[str] = []
    for text in _strings(value):
        if "://" not in text:
            continue
        try:
            parts = urlsplit(text.strip())
            host = (parts.hostname or "(no host)") + (
                " (the URL also carries a user name)" if "@" in parts.netloc else ""
            )
        except ValueError:
            host = "(an invalid URL)"
        found.append(host)
    return ", ".join(dict.fromkeys(found)) or "(no URL)"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def widening_in(config: dict[str, Any], mcp_servers: dict[str, Any]) -> list[Widening]:
    """What a project config (parsed TOML) and its MCP servers ask for that widens."""
    found = []
    for key, rule in WIDENING.items():
        value = _get(config, key)
        if _widens(rule, value):
            found.append(Widening(key, value, WHAT.get(key, key).format(value=_short(value), host=hosts_in(value))))
    for name, server in sorted(mcp_servers.items()):
        what = server.get("command") or server.get("url") if isinstance(server, dict) else server
        if isinstance(server, dict) and server.get("url"):
            what = f"{hosts_in(server.get('url'))}: {what}"
        if isinstance(server, dict) and server.get("args"):
            what = f"{what} {' '.join(map(str, server['args']))}"
        found.append(Widening(f"mcp:{name}", server, f"start the MCP server {name!r}: {_short(what)}{_hidden(server)}"))
    return found


def _hidden(server: Any) -> str:
    """What a server's config does beyond its command line, which the question would otherwise not show:
    the environment variables of yours it reads (`${KIMI_API_KEY}` in a header goes to its URL), and the
    environment it sets (NODE_OPTIONS, LD_PRELOAD and PYTHONPATH load other code)."""
    import re

    if not isinstance(server, dict):
        return ""
    notes = []
    used = sorted(set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", json.dumps(server))))
    if used:
        notes.append(f"given your environment variables {', '.join(used)}")
    for field_name, label in (("env", "setting"), ("headers", "sending headers")):
        table = server.get(field_name)
        if isinstance(table, dict) and table:
            notes.append(f"{label} {', '.join(map(str, sorted(table)))}")
    if server.get("cwd"):
        notes.append(f"in {server['cwd']}")
    return f" ({'; '.join(notes)})" if notes else ""


def file_widenings(folder: Path) -> list[Widening]:
    """What the folder's files ask for (FILE_WIDENINGS); a source that fails counts as asking for nothing."""
    import importlib

    found: list[Widening] = []
    for source in FILE_WIDENINGS:
        module, _, name = source.partition(":")
        try:
            found += [Widening(*item) for item in getattr(importlib.import_module(module), name)(folder)]
        except ImportError:
            continue
    return found


def read_project(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The folder's config.toml and mcp.json `mcpServers`, raw; unreadable files count as empty here
    (loading them later reports the error)."""
    config_path, mcp_path = project_files(folder)
    config: dict[str, Any] = {}
    servers: dict[str, Any] = {}
    try:
        config = tomllib.loads(read_settings_text(config_path)) if config_path.is_file() else {}
    except (OSError, ValueError):
        config = {}
    try:
        data = json.loads(read_settings_text(mcp_path)) if mcp_path.is_file() else {}
        servers = data.get("mcpServers", {}) if isinstance(data, dict) else {}
        servers = servers if isinstance(servers, dict) else {}
    except (OSError, ValueError):
        servers = {}
    return config, servers


def digest_of(asks: list[Widening]) -> str:
    canonical = json.dumps([[w.key, w.value] for w in asks], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def assess(folder: Path) -> FolderTrust:
    """What the folder asks for, and whether the user already trusted exactly that."""
    folder = folder.resolve()
    if is_users_own(folder):
        return FolderTrust(folder)
    asks = widening_in(*read_project(folder)) + file_widenings(folder)
    state = FolderTrust(folder, asks, digest_of(asks))
    if not asks:
        return state
    remembered = _load().get(str(folder))
    if isinstance(remembered, dict) and remembered.get("digest") == state.digest:
        state.trusted, state.how = True, "remembered"
    else:
        state.how = "not trusted"
    return state


# --- ~/.kimi/trusted.json -------------------------------------------------------------------------------


def store_path() -> Path:
    return kimi_home() / "trusted.json"


def _load() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text())
    except (OSError, ValueError):
        return {}
    folders = data.get("folders") if isinstance(data, dict) else None
    return folders if isinstance(folders, dict) else {}


def _save(folders: dict[str, Any]) -> None:
    write_private(store_path(), json.dumps({"version": 1, "folders": folders}, indent=2, sort_keys=True) + "\n")


def remember(state: FolderTrust) -> None:
    """Trust the folder's current widening settings (a later change to them asks again)."""
    folders = _load()
    folders[str(state.folder)] = {"digest": state.digest, "asks": state.summary(), "trusted_at": int(time.time())}
    _save(folders)


def revoke(folder: Path) -> bool:
    folders = _load()
    found = folders.pop(str(folder.resolve()), None) is not None
    if found:
        _save(folders)
    return found


def trusted_folders() -> dict[str, Any]:
    return _load()


# --- the decision for this session ----------------------------------------------------------------------

_DECIDED: dict[Path, FolderTrust] = {}
Ask = Callable[[FolderTrust], bool]


def resolve(folder: Path, grant: bool = False, ask: Ask | None = None) -> FolderTrust:
    """Decide once for this session: remembered trust, `--trust` (remembered), or the answer to `ask`.
    Without either, the folder's widening settings are ignored (see FolderTrust.notice)."""
    state = assess(folder)
    if state.asks and not state.trusted:
        if grant:
            state.trusted, state.how = True, "--trust"
            remember(state)
        elif ask is not None and ask(state):
            state.trusted, state.how = True, "you agreed"
            remember(state)
    _DECIDED[state.folder] = state
    return state


def decide(state: FolderTrust, trusted: bool, how: str) -> FolderTrust:
    """Record an answer obtained elsewhere (an ACP permission request); a yes is remembered."""
    if state.asks and trusted and not state.trusted:
        state.trusted, state.how = True, how
        remember(state)
    _DECIDED[state.folder] = state
    return state


def current(folder: Path) -> FolderTrust:
    """This session's decision for the folder, else what is remembered."""
    folder = folder.resolve()
    return _DECIDED.get(folder) or assess(folder)


def is_trusted(folder: Path) -> bool:
    """May this folder's config widen what kimi does? True when trusted or when it asks for nothing.

    Asked of the folder as it is NOW: the decision was about the settings shown when it was made, and a
    command (or another session's command) may have rewritten them since: while the user read the question,
    or later in the session. Settings that changed apply only once trusted as they are."""
    return trusted_state(folder) is not None


def trusted_state(folder: Path) -> FolderTrust | None:
    """The folder's settings as assessed now, when they may apply (is_trusted); else None. A caller that
    read some of those settings itself compares them with this state's `asks`, so what it uses is what was
    trusted even if a writer changes the files in between (kimi_cli.hooks.sources)."""
    decided = current(folder)
    now = assess(folder)
    if not now.asks or now.trusted or (decided.trusted and decided.digest == now.digest):
        return now
    return None


def strip_widening(config: dict[str, Any]) -> dict[str, Any]:
    """The project config without its widening settings (what narrows stays)."""
    out = json.loads(json.dumps(config, default=str)) if config else {}
    for key, rule in WIDENING.items():
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and _widens(rule, node.get(parts[-1])):
            del node[parts[-1]]
    return out


def note_own_change(folder: Path, before: FolderTrust, key: str, value: Any) -> None:
    """The user changed one widening setting themselves (saved an allow rule, `kimi mcp add`): the folder
    stays trusted when its settings applied before and nothing else changed meanwhile. `value` None: removed."""
    if not before.applies:
        return
    after = assess(folder)
    expected = {w.key: w.value for w in before.asks}
    if value is None:
        expected.pop(key, None)
    else:
        expected[key] = value
    got = {w.key: w.value for w in after.asks}
    if json.dumps(got, sort_keys=True, default=str) == json.dumps(expected, sort_keys=True, default=str):
        remember(after)
        after.trusted, after.how = True, before.how if before.trusted else "your own change"
        _DECIDED[after.folder] = after


def note_own_allow_rule(folder: Path, before: FolderTrust, rule: str) -> None:
    """The user saved an allow rule into the folder's config (see note_own_change)."""
    allow = next((list(w.value) for w in before.asks if w.key == "approval.allow"), [])
    note_own_change(folder, before, "approval.allow", [*allow, rule])
