"""SandboxPolicy: what a sandboxed command may see and change, as plain data."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_HIDDEN = ("~/.ssh", "~/.aws", "~/.config/gcloud", "~/.kimi", "~/.netrc", "~/.docker")
SANE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SECRET_NAMES = {"KIMI_API_KEY", "MOONSHOT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
SECRET_PATTERN = re.compile(r"(_TOKEN|_SECRET|_KEY|_KEYS)$|PASSWORD|PASSWD|SECRET|CREDENTIAL", re.IGNORECASE)
DROP_ALWAYS = {"BASH_ENV", "ENV", "LD_PRELOAD", "LD_LIBRARY_PATH", "PROMPT_COMMAND"}


@dataclass(frozen=True)
class HiddenPath:
    path: Path
    is_dir: bool


@dataclass(frozen=True)
class SandboxPolicy:
    """Writable roots, read-only holes in them, hidden credential stores, network and environment."""

    workspace: Path
    private_tmp: Path
    read_only: tuple[Path, ...] = ()
    hidden: tuple[HiddenPath, ...] = ()
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)


def scrub_env(environ: dict[str, str]) -> dict[str, str]:
    """Drop API keys, tokens, secrets and passwords; keep a sane PATH, HOME and LANG."""
    out = {
        k: v
        for k, v in environ.items()
        if k not in SECRET_NAMES and k not in DROP_ALWAYS and not SECRET_PATTERN.search(k)
    }
    out.setdefault("PATH", SANE_PATH)
    out.setdefault("HOME", str(Path.home()))
    out.setdefault("LANG", "C.UTF-8")
    return out


def build_policy(
    workspace: Path,
    private_tmp: Path,
    *,
    network: bool = False,
    extra_hidden: list[str] | None = None,
    environ: dict[str, str] | None = None,
) -> SandboxPolicy:
    """The default policy for a workspace: only existing hidden paths are listed (bwrap needs targets)."""
    env = scrub_env(dict(os.environ) if environ is None else environ)
    home = Path(env.get("HOME") or Path.home())
    hidden: list[HiddenPath] = []
    for raw in (*DEFAULT_HIDDEN, *(extra_hidden or [])):
        path = Path(raw.replace("~", str(home), 1) if raw.startswith("~") else raw)
        if path.is_symlink():
            path = path.resolve()
        if path.exists() and not _covers(path, workspace):
            hidden.append(HiddenPath(path, path.is_dir()))
    git_dir = workspace / ".git"
    read_only = (git_dir,) if git_dir.exists() else ()
    return SandboxPolicy(
        workspace=workspace.resolve(),
        private_tmp=private_tmp,
        read_only=read_only,
        hidden=tuple(hidden),
        network=network,
        env=env,
    )


def _covers(path: Path, workspace: Path) -> bool:
    """Hiding a folder that contains the workspace would hide the workspace too."""
    return workspace.resolve().is_relative_to(path.resolve())
