"""Choose the sandbox backend: an explicit mode, or auto (bwrap, then landlock, then docker).

Each candidate is probed with a real sandboxed `true`: auto picks what works here, not what is
installed. Never a silent fallback to no sandbox: when nothing works, the message says why each one
failed and what fixes it on this machine.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError
from kimi_cli.sandbox.backends.bwrap import BwrapSandbox, bwrap_works
from kimi_cli.sandbox.backends.docker import DockerSandbox, docker_works
from kimi_cli.sandbox.backends.none import NoSandbox
from kimi_cli.sandbox.base import Sandbox
from kimi_cli.sandbox.policy import SandboxPolicy

NONE_WARNING = "warning: --sandbox none: shell commands run without isolation, with your permissions and network.\n"
APPARMOR_SYSCTL = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
USERNS_SYSCTL = Path("/proc/sys/kernel/unprivileged_userns_clone")


@dataclass
class SandboxChoice:
    sandbox: Sandbox
    reason: str  # why this backend, shown once (status line, --version, /sandbox)

    def __post_init__(self) -> None:
        prepare = getattr(self.sandbox, "prepare_guard", None)
        if prepare is not None:  # the session's sandbox: its guard's first walk starts now, beside the pack
            prepare()


def bwrap_advice(why: str) -> str:
    """What fixes bwrap on this machine, from its own error and the kernel's settings."""
    if shutil.which("bwrap") is None:
        return "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
    restricted = _sysctl(APPARMOR_SYSCTL) == "1"
    if restricted or "uid map" in why or "Permission denied" in why:
        return (
            "bubblewrap is installed but may not create user namespaces here"
            + (" (AppArmor: kernel.apparmor_restrict_unprivileged_userns=1, the Ubuntu 24.04 default)" if restricted
               else "")
            + ". Fixes: use --sandbox landlock (needs no namespaces); or install the bwrap-userns-restrict AppArmor "
            "profile (apt-get install apparmor-profiles, then link bwrap-userns-restrict into /etc/apparmor.d/); "
            "or sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
        )  # fmt: skip
    if _sysctl(USERNS_SYSCTL) == "0":
        return "unprivileged user namespaces are off: sudo sysctl -w kernel.unprivileged_userns_clone=1"
    return "bubblewrap is installed but failed; see its message above"


def _sysctl(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _landlock(policy: SandboxPolicy, output_cap: int) -> tuple[Sandbox | None, str]:
    from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox, landlock_works

    ok, why = landlock_works(policy)
    return (LandlockSandbox(policy, output_cap), why) if ok else (None, why)


def open_sandbox(mode: str, policy: SandboxPolicy, output_cap: int, docker: dict[str, Any], session: str) -> Sandbox:
    return choose_sandbox(mode, policy, output_cap, docker, session).sandbox


def choose_sandbox(
    mode: str, policy: SandboxPolicy, output_cap: int, docker: dict[str, Any], session: str
) -> SandboxChoice:
    """Build the sandbox for a session; ConfigError (exit 2) explains what to do when none is usable."""
    if mode == "none":
        sys.stderr.write(NONE_WARNING)
        return SandboxChoice(NoSandbox(policy, output_cap), "--sandbox none: no isolation")
    failures: list[str] = []
    if mode in ("bwrap", "auto"):
        ok, why = bwrap_works(policy)
        if ok:
            return SandboxChoice(BwrapSandbox(policy, output_cap), "bubblewrap namespaces work here")
        failures.append(f"bwrap: {why} ({bwrap_advice(why)})")
        if mode == "bwrap":
            raise ConfigError(f"--sandbox bwrap is not usable: {failures[-1]}")
    if mode in ("landlock", "auto"):
        sandbox, why = _landlock(policy, output_cap)
        if sandbox is not None:
            prefix = "bwrap unusable, so " if failures else ""
            return SandboxChoice(sandbox, f"{prefix}Landlock + seccomp ({why})")
        failures.append(f"landlock: {why} (needs Linux 5.13+ with Landlock enabled)")
        if mode == "landlock":
            raise ConfigError(f"--sandbox landlock is not usable: {failures[-1]}")
    ok_docker, why_docker = docker_works()
    if ok_docker:
        prefix = "bwrap and landlock unusable, so " if failures else ""
        return SandboxChoice(
            DockerSandbox(policy, output_cap, session=session, **docker), f"{prefix}a Docker container"
        )
    failures.append(f"docker: {why_docker} (start a Docker engine, or add your user to the docker group)")
    if mode == "docker":
        raise ConfigError(f"--sandbox docker is not usable: {failures[-1]}")
    raise ConfigError(
        "no sandbox works here:\n  " + "\n  ".join(failures)
        + "\nOr run commands unsandboxed with --sandbox none (every command then asks for approval unless --yolo)."
    )  # fmt: skip
