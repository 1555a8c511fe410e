"""Which language servers kimi knows, which languages they serve, and where each one is found.

A server is found in one of two places, and where decides who controls its code:
- the user's own setup: a program on PATH, looked up as every host program kimi starts is (kimi_cli.hostsafe.
  programs: never in, or through a link into, a folder a sandboxed command may write), or a command the user's
  `[lsp.servers.NAME]` names;
- the project's: `node_modules/.bin/...` or `.venv/bin/...` inside the workspace. That is code the workspace
  controls (a cloned repository ships it, a sandboxed command can write it), so it is used only in a trusted
  folder, only where a sandbox runs it, and only while its file still has the digest the user trusted
  (kimi_cli.extensions.lsp.project).
Either way the server itself runs in the session's sandbox (kimi_cli.extensions.lsp.process): a server reads
the workspace's own configuration (pyrightconfig.json, tsconfig.json's paths and plugins, a Cargo build script,
go.mod's toolchain line), so what the workspace controls never runs, or reads, outside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# file suffix -> (language, the languageId LSP wants)
SUFFIXES: dict[str, tuple[str, str]] = {
    ".py": ("python", "python"), ".pyi": ("python", "python"),
    ".ts": ("typescript", "typescript"), ".mts": ("typescript", "typescript"), ".cts": ("typescript", "typescript"),
    ".tsx": ("typescript", "typescriptreact"),
    ".js": ("javascript", "javascript"), ".mjs": ("javascript", "javascript"), ".cjs": ("javascript", "javascript"),
    ".jsx": ("javascript", "javascriptreact"),
    ".go": ("go", "go"),
    ".rs": ("rust", "rust"),
}  # fmt: skip
LANGUAGES = ("python", "typescript", "javascript", "go", "rust")


@dataclass(frozen=True)
class ServerSpec:
    """One server: how it starts, what it serves, and what it is told."""

    name: str
    languages: tuple[str, ...]
    program: str  # looked up on the user's PATH
    args: tuple[str, ...] = ()
    project: tuple[str, ...] = ()  # where a project ships its own copy, relative to the workspace
    init_options: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # workspace/configuration answers, by section
    env: dict[str, str] = field(default_factory=dict)  # set for the server (shell words: "${TMPDIR:-/tmp}/x" works)
    tsserver: bool = False  # typescript-language-server: diagnostics are asked of tsserver directly
    navigates: bool = True  # answers definition/references (ruff only lints)


_PYRIGHT_SETTINGS = {"analysis": {"diagnosticMode": "openFilesOnly", "autoSearchPaths": True}}
BUILTIN: dict[str, ServerSpec] = {
    spec.name: spec
    for spec in (
        ServerSpec("basedpyright", ("python",), "basedpyright-langserver", ("--stdio",),
                   (".venv/bin/basedpyright-langserver", "node_modules/.bin/basedpyright-langserver"),
                   settings={"basedpyright.analysis": _PYRIGHT_SETTINGS["analysis"], "basedpyright": {}}),
        ServerSpec("pyright", ("python",), "pyright-langserver", ("--stdio",),
                   (".venv/bin/pyright-langserver", "node_modules/.bin/pyright-langserver"),
                   settings={"python.analysis": _PYRIGHT_SETTINGS["analysis"], "python": {}}),
        ServerSpec("ruff", ("python",), "ruff", ("server",), (".venv/bin/ruff",), navigates=False),
        # Automatic type acquisition would run npm (and reach the network) for the project's packages.
        ServerSpec("typescript-language-server", ("typescript", "javascript"), "typescript-language-server",
                   ("--stdio",), ("node_modules/.bin/typescript-language-server",),
                   init_options={"disableAutomaticTypingAcquisition": True, "tsserver": {"useSyntaxServer": "never"}},
                   tsserver=True),
        # go.mod's `toolchain` line would download and run another Go; the module proxy is the network.
        ServerSpec("gopls", ("go",), "gopls",
                   env={"GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "-mod=readonly",
                        "GOCACHE": "${TMPDIR:-/tmp}/kimi-gocache"}),
        ServerSpec("rust-analyzer", ("rust",), "rust-analyzer",
                   init_options={"checkOnSave": False, "cargo": {"buildScripts": {"enable": False}},
                                 "procMacro": {"enable": False}},
                   env={"CARGO_NET_OFFLINE": "true"}),
    )
}  # fmt: skip
# language -> groups of servers; in each group the first one found runs (basedpyright or else pyright)
DEFAULT_LANGUAGES: dict[str, tuple[tuple[str, ...], ...]] = {
    "python": (("basedpyright", "pyright"), ("ruff",)),
    "typescript": (("typescript-language-server",),),
    "javascript": (("typescript-language-server",),),
    "go": (("gopls",),),
    "rust": (("rust-analyzer",),),
}


def language_of(path: str) -> tuple[str, str] | None:
    """(language, languageId) of a file by its suffix, or None."""
    return SUFFIXES.get(os.path.splitext(path)[1].lower())


@dataclass(frozen=True)
class Located:
    """A server ready to start: its argv, and whose it is ("user" or "project")."""

    spec: ServerSpec
    argv: tuple[str, ...]
    source: str
    project_file: str = ""  # the workspace-relative file of a project's server (its pin)


@dataclass
class Choice:
    """What runs for one language: the servers located, and a line for each one that does not run."""

    servers: list[Located] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def specs(settings: Any) -> dict[str, ServerSpec]:
    """The built-in servers with the user's `[lsp.servers.NAME]` applied (a new name defines a server)."""
    import dataclasses

    out = dict(BUILTIN)
    for name, own in (settings.servers or {}).items():
        base = out.get(name) or ServerSpec(name, (), "")
        changes: dict[str, Any] = {}
        if own.command:
            changes["program"], changes["args"] = own.command[0], tuple(own.command[1:])
            changes["project"] = ()  # the user's command is the user's, never a project file
        if own.languages:
            changes["languages"] = tuple(own.languages)
        out[name] = dataclasses.replace(base, **changes)
    return out


def groups_for(language: str, settings: Any, known: dict[str, ServerSpec]) -> list[tuple[str, ...]]:
    """The server groups for a language: the user's `[lsp.languages]` list (each name runs when found), else
    the defaults, plus any server the user defined for the language."""
    off = {name for name, own in (settings.servers or {}).items() if not own.enabled}
    chosen = (settings.languages or {}).get(language)
    groups: list[tuple[str, ...]]
    if chosen is not None:
        groups = [(name,) for name in chosen]
    else:
        groups = [tuple(g) for g in DEFAULT_LANGUAGES.get(language, ())]
        listed = {name for g in groups for name in g}
        groups += [(n,) for n, s in known.items() if language in s.languages and n not in listed and n not in BUILTIN]
    return [kept for g in groups if (kept := tuple(n for n in g if n not in off and n in known))]


def locate(spec: ServerSpec, workspace: Path, project_ok: bool, path_env: str | None = None) -> Located | None:
    """Where this server's program is: the project's copy when `project_ok` (trusted, sandboxed) and present,
    else the user's. A command given as a path is the user's own and used as it is."""
    from kimi_cli.hostsafe.programs import host_which

    if project_ok:
        for rel in spec.project:
            candidate = workspace / rel
            if _project_file(candidate, workspace) is not None:
                return Located(spec, (str(candidate), *spec.args), "project", rel)
    if not spec.program:
        return None
    if "/" in spec.program:
        program = os.path.expanduser(spec.program)
        usable = os.path.isfile(program) and os.access(program, os.X_OK)
        return Located(spec, (program, *spec.args), "user") if usable else None
    found = host_which(spec.program, (workspace,), path_env)
    return Located(spec, (found, *spec.args), "user") if found else None


def _project_file(candidate: Path, workspace: Path) -> Path | None:
    """The real file behind a project's server entry when it is an executable inside the workspace."""
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_relative_to(workspace.resolve()) or not real.is_file() or not os.access(candidate, os.X_OK):
        return None
    return real


def project_servers(workspace: Path) -> dict[str, Path]:
    """Every built-in server's project copy present in the workspace: {relative entry: real file}."""
    found: dict[str, Path] = {}
    for spec in BUILTIN.values():
        for rel in spec.project:
            real = _project_file(workspace / rel, workspace)
            if real is not None:
                found[rel] = real
    return found
