"""Choose the sandbox backend: an explicit mode, or auto (bwrap, then docker). Never a silent fallback."""

from __future__ import annotations

import sys
from typing import Any

from kimi_cli.errors import ConfigError
from kimi_cli.tools.sandbox.base import Sandbox
from kimi_cli.tools.sandbox.bwrap import BwrapSandbox, bwrap_works
from kimi_cli.tools.sandbox.docker_backend import DockerSandbox, docker_works
from kimi_cli.tools.sandbox.none import NoSandbox
from kimi_cli.tools.sandbox.policy import SandboxPolicy

HOW_TO = (
    "Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), "
    "or start a Docker engine and pass --sandbox docker, or accept running commands unsandboxed with "
    "--sandbox none (every command then asks for approval unless --yolo)."
)
NONE_WARNING = "warning: --sandbox none: shell commands run without isolation, with your permissions and network.\n"


def open_sandbox(mode: str, policy: SandboxPolicy, output_cap: int, docker: dict[str, Any], session: str) -> Sandbox:
    """Build the sandbox for a session; ConfigError (exit 2) explains what to do when none is usable."""
    if mode == "none":
        sys.stderr.write(NONE_WARNING)
        return NoSandbox(policy, output_cap)
    if mode in ("bwrap", "auto"):
        ok, why = bwrap_works(policy)
        if ok:
            return BwrapSandbox(policy, output_cap)
        if mode == "bwrap":
            raise ConfigError(f"--sandbox bwrap is not usable: {why}. {HOW_TO}")
    ok_docker, why_docker = docker_works()
    if ok_docker:
        return DockerSandbox(policy, output_cap, session=session, **docker)
    if mode == "docker":
        raise ConfigError(f"--sandbox docker is not usable: {why_docker}. {HOW_TO}")
    raise ConfigError(f"no sandbox is available: {why}; {why_docker}. {HOW_TO}")
