"""Confine a host-side reader (ripgrep) to reading the workspace, with its own Landlock domain.

Grep runs `rg` on the host, whatever the session's sandbox (docker images have no rg; `none` has no
sandbox at all). rg opens files by path, so a command that swaps a workspace folder for a link to
~/.ssh while rg walks would have it read the key. Under this domain the kernel refuses any read outside
the workspace (and the system folders rg's loader needs), at the moment of the open, however the path
got there. Where Landlock is missing, `None` comes back and Grep checks rg's output instead (grep_verify).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Public, read-only system folders: a dynamically linked rg needs its loader and libraries.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache")
_probed: dict[str, bool] = {}


@dataclass
class ReadConfinement:
    """A Landlock ruleset fd and the preexec function that enters it; close() once the child is started."""

    ruleset_fd: int
    preexec: Callable[[], None]

    def close(self) -> None:
        if self.ruleset_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.ruleset_fd)
            self.ruleset_fd = -1


def _make(workspace: Path, executable: str) -> ReadConfinement | None:
    from kimi_cli.tools.sandbox.landlock_rules import (
        EXECUTE,
        READ_DIR,
        READ_FILE,
        Grant,
        LandlockPlan,
        fs_rights_for_abi,
    )
    from kimi_cli.tools.sandbox.landlock_sys import (
        PR_SET_NO_NEW_PRIVS,
        SYS_LANDLOCK_RESTRICT_SELF,
        LandlockUnavailable,
        create_ruleset,
        landlock_abi,
    )

    abi = landlock_abi()
    if abi < 1:
        return None
    grants = [Grant(str(workspace), READ_FILE | READ_DIR), Grant(os.path.realpath(executable), READ_FILE | EXECUTE)]
    for path in SYSTEM_READ:
        if os.path.isdir(path) and not os.path.islink(path):
            grants.append(Grant(path, READ_FILE | READ_DIR | EXECUTE))
        elif os.path.isfile(path) and not os.path.islink(path):
            grants.append(Grant(path, READ_FILE))
    try:
        fd = create_ruleset(LandlockPlan(fs_rights_for_abi(abi), 0, 0, tuple(grants)), abi)
    except (LandlockUnavailable, OSError):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def preexec() -> None:  # in the child, between fork and exec: syscalls only
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")

    return ReadConfinement(fd, preexec)


def confine_reads(workspace: Path, executable: str) -> ReadConfinement | None:
    """A confinement for `executable` reading `workspace`, or None where it cannot work here.

    The first use per executable runs `executable --version` under it once: an rg that is a wrapper
    script (a pyenv shim) needs more than the grants allow, and then Grep falls back to checking.
    """
    real = os.path.realpath(executable)
    if _probed.get(real) is False:
        return None
    confinement = _make(workspace, real)
    if confinement is None:
        _probed[real] = False
        return None
    if real not in _probed:
        try:
            out = subprocess.run(
                [real, "--version"], capture_output=True, timeout=10, preexec_fn=confinement.preexec, cwd=workspace
            )
            _probed[real] = out.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _probed[real] = False
        if not _probed[real]:
            confinement.close()
            return None
    return confinement
