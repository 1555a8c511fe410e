"""SandboxPolicy: what a sandboxed command may see and change, as plain data shared by every backend."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.hostsafe.protected import PROTECTED_NAMES
from kimi_cli.kernel import contain
from kimi_cli.sandbox.env import EnvNotice, sandbox_env
from kimi_cli.sandbox.hidden import default_entries, existing, home_roots, homes, patterns

__all__ = ["PROC_READ_ONLY", "HiddenPath", "SandboxPolicy", "build_policy", "host_sockets", "scrub_env"]

# The host-wide corners of /proc that a command must never write, on every backend: sysctls (a root command
# that writes kernel.core_pattern makes the host kernel run a program as real root), sysrq, interrupt and
# bus settings, file-system tunables. bwrap binds them read-only itself; Docker's are checked at start;
# Landlock never grants a write under /proc.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
ACCEPTING = 0x10000  # __SO_ACCEPTCON in /proc/net/unix's Flags: a listening socket


@dataclass(frozen=True)
class HiddenPath:
    path: Path
    is_dir: bool


@dataclass(frozen=True)
class SandboxPolicy:
    """Writable roots, read-only holes in them, hidden credential stores, host sockets, network, environment."""

    workspace: Path
    private_tmp: Path
    read_only: tuple[Path, ...] = ()
    hidden: tuple[HiddenPath, ...] = ()
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)
    sockets: tuple[Path, ...] = ()  # listening unix sockets outside the workspace when the session began
    hidden_patterns: tuple[str, ...] = ()  # the table made absolute: bwrap looks again before each command
    home_roots: tuple[Path, ...] = ()  # the homes and XDG folders home entries live in (Landlock splits them)
    writable: tuple[Path, ...] = ()  # more writable roots beside the workspace (an MCP server's: the workspace)
    notice: EnvNotice = field(default_factory=EnvNotice, compare=False)


def scrub_env(environ: dict[str, str], allow: list[str] | None = None, deny: list[str] | None = None) -> dict[str, str]:
    """The environment a command gets (see env.py: an allowlist, and no credential-looking value)."""
    return sandbox_env(environ, allow, deny)[0]


def build_policy(
    workspace: Path,
    private_tmp: Path,
    *,
    network: bool = False,
    extra_hidden: list[str] | None = None,
    environ: dict[str, str] | None = None,
    env_allow: list[str] | None = None,
    env_deny: list[str] | None = None,
) -> SandboxPolicy:
    """The default policy for a workspace: only existing hidden paths are listed (bwrap needs targets)."""
    env, withheld = sandbox_env(dict(os.environ) if environ is None else environ, env_allow, env_deny)
    # The home commands see, and the password database's: HOME may point elsewhere (CI, a wrapper, sudo -E).
    every_home = homes(Path(env.get("HOME") or Path.home()))
    from kimi_cli.util.paths import private_dirs  # kimi's own folders, wherever KIMI_HOME/XDG_CACHE_HOME put them

    entries = [*default_entries(), *(extra_hidden or []), *(str(p) for p in private_dirs())]
    full_environ = os.environ if environ is None else environ
    found = tuple(p for p in patterns(entries, every_home, full_environ) if not _covers(Path(p), workspace))
    hidden = current_hidden(found, workspace)
    ws = workspace.resolve()
    from kimi_cli.hostsafe.programs import sandbox_writable  # kimi's host programs never come from these

    sandbox_writable(ws, private_tmp)
    # Read-only to commands inside the writable workspace: the protected folders, the file tools' table too. Never
    # a link: mounting `.kimi -> ~/.ssh` read-only would mount the secret itself (bind sources resolve).
    read_only = tuple(ws / name for name in PROTECTED_NAMES if (ws / name).exists() and not (ws / name).is_symlink())
    return SandboxPolicy(
        workspace=ws,
        private_tmp=private_tmp,
        read_only=read_only,
        hidden=tuple(hidden),
        network=network,
        env=env,
        sockets=tuple(host_sockets([ws, private_tmp.resolve()])),
        notice=EnvNotice(withheld),
        hidden_patterns=found,
        home_roots=tuple(home_roots(every_home, full_environ)),
    )


def current_hidden(found: tuple[str, ...], workspace: Path) -> list[HiddenPath]:
    """What the patterns match now (never a folder that holds the workspace)."""
    return [HiddenPath(path, path.is_dir()) for path in existing(found) if not _covers(path, workspace)]


def host_sockets(inside: list[Path], table: str = "/proc/net/unix") -> list[Path]:
    """Paths of the host's listening unix sockets (the kernel's own list), minus those in `inside`.
    Plain strings, and a stat only for listeners (bwrap looks again before every command)."""
    try:
        with open(table, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()[1:]
    except OSError:
        return []
    found: dict[str, Path] = {}
    for line in lines:
        parts = line.split(None, 7)
        if len(parts) < 8 or not parts[7].startswith("/"):
            continue  # unnamed or abstract (bwrap's network namespace covers abstract names)
        path = parts[7]
        if path in found or not int(parts[3], 16) & ACCEPTING or contain.inside_any(path, inside):
            continue  # a connection, or a socket that is not listening: nothing to connect to
        try:
            if not stat.S_ISSOCK(os.stat(path).st_mode):
                continue
        except (OSError, ValueError):  # not ours to stat (root's docker socket for a user): we cannot reach it
            continue
        found[path] = Path(path)
    return list(found.values())


def _covers(path: Path, workspace: Path) -> bool:
    """Hiding a folder that contains the workspace would hide the workspace too."""
    return contain.inside(workspace.resolve(), path.resolve())
