"""The system prompt: the stable instructions (system.md) and one small environment block.

The instructions are prose in package data, the same bytes for every session and workspace, so the
provider's prompt cache holds them. Everything that varies (workspace, OS, sandbox, network, approvals,
model window, date) sits in the environment block, which agent.prefix.PrefixBuilder renders once per
session and places after the pack: a new day or another flag costs the cache only that block.
"""

from __future__ import annotations

import datetime
import os
import platform
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kimi_cli.config import Config

VARIANT_ENV = "KIMI_SYSTEM_PROMPT"  # a file that replaces system.md (bench/prompt_eval.py variants)
SECTIONS = (
    "## What you already hold",
    "## Project instructions (AGENTS.md)",
    "## How to work",
    "## Tools",
    "## Editing",
    "## Testing",
    "## Git",
    "## Safety and untrusted content",
    "## Limits",
    "## The final answer",
)

# What each sandbox mode means for a command, in the model's terms (kimi_cli/sandbox/select.py picks the backend).
CONFINED = (
    "commands may write only the workspace and a private /tmp; .git and .kimi stay read-only; credential "
    "stores (~/.ssh, ~/.aws, ...) are hidden and secret environment variables removed"
)
SANDBOX_TEXT = {
    "auto": "on (bubblewrap, Landlock or Docker, whichever works here): " + CONFINED,
    "bwrap": "on (bubblewrap): " + CONFINED,
    "landlock": "on (Landlock + seccomp): " + CONFINED,
    "docker": "on (a Docker container; no background commands): " + CONFINED,
    "none": "off: commands run unconfined, with the user's own permissions and network",
}
APPROVAL_TEXT = {
    "auto": "auto (edits and sandboxed commands run; commands outside the sandbox or with network ask the user)",
    "ask": "ask (every command asks the user first)",
    "never": "never (whatever would need asking is refused)",
    "yolo": "yolo (nothing asks; the sandbox still applies)",
}


def _read(name: str) -> str:
    return (resources.files("kimi_cli.instructions") / name).read_text(encoding="utf-8")


def system_prompt() -> str:
    """The stable instructions: system.md, or the file KIMI_SYSTEM_PROMPT names (prompt experiments)."""
    variant = os.environ.get(VARIANT_ENV)
    if not variant:
        return _read("system.md").strip()
    try:
        return Path(variant).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        from kimi_cli.errors import ConfigError

        raise ConfigError(f"{VARIANT_ENV}={variant}: the prompt file cannot be read ({exc})") from None


@dataclass(frozen=True)
class Environment:
    """What varies between sessions, fixed when the session starts (the date does not move at midnight)."""

    workspace: str
    os: str
    sandbox: str = "auto"  # the configured mode
    network: bool = False
    approval: str = "auto"  # auto | ask | never | yolo
    model: str = ""
    window: int = 1_048_576
    date: str = ""

    def block(self) -> str:
        """The environment section as the model reads it."""
        if self.sandbox == "none":
            network = "on (no sandbox)"
        else:
            network = "on" if self.network else "off (downloads and package installs fail)"
        text = _read("environment.md").format(
            workspace=self.workspace,
            os=self.os,
            sandbox=SANDBOX_TEXT.get(self.sandbox, self.sandbox),
            network=network,
            approval=APPROVAL_TEXT.get(self.approval, self.approval),
            model=self.model or "unknown",
            window=f"{self.window:,}",
            date=self.date,
        )
        return text.strip()


def session_environment(
    workdir: Path, config: Config, model: str, window: int, today: datetime.date | None = None
) -> Environment:
    """The environment of a session in `workdir` under `config` (what the session bootstrap and `kimi prompt` use)."""
    return Environment(
        workspace=str(workdir),
        os=f"{platform.system()} {platform.release()} ({platform.machine()})",
        sandbox=config.sandbox.mode,
        network=config.sandbox.allow_network,
        approval="yolo" if config.yolo else config.approval.policy,
        model=model,
        window=window,
        date=(today or datetime.date.today()).isoformat(),
    )
