"""Host git in a Landlock domain of its own: it may execute only git, and write only where its work is.

The second layer under host git's config overrides (hardening.py's, and host.py's for filter drivers). Those
name every key we know that starts a program, and neutralise the filter drivers the config declares right
before each call; a writer racing that read, or a key no list knows, would still meet this: the kernel refuses
to execute anything but git (its binary, its exec path and its loader) and to write outside the repository and
the workspace.

Landlock and no_new_privs belong to a thread, and a child inherits its creator's: so each call runs on a
fresh thread that enters the domain, starts git, waits and ends. kimi's other threads are untouched and
kimi is never forked. Where Landlock is missing, calls run as they are (the overrides still hold).
"""

from __future__ import annotations

import functools
import os
import struct
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from kimi_cli.hostsafe.git.hardening import base_env
from kimi_cli.hostsafe.git.pin import is_pinned

T = TypeVar("T")
PT_INTERP = 3


def _git_programs() -> tuple[tuple[str, bool], ...]:
    """(path, is a folder) for what git needs to execute: itself, its exec path, its ELF interpreter. The
    git is the one host.py runs: found outside every folder a sandboxed command may write (hostsafe.programs)."""
    from kimi_cli.hostsafe.programs import host_which

    return _programs_of(host_which("git"))


@functools.cache
def _programs_of(git: str | None) -> tuple[tuple[str, bool], ...]:
    found: list[tuple[str, bool]] = []
    if not git:
        return ()
    real = os.path.realpath(git)
    found.append((real, False))
    interp = _interpreter(real)
    if interp:
        found.append((os.path.realpath(interp), False))
    try:
        exec_path = subprocess.run([git, "--exec-path"], capture_output=True, text=True, timeout=10, cwd="/",
                                   env=base_env()).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        exec_path = ""
    if exec_path and os.path.isdir(exec_path):
        found.append((os.path.realpath(exec_path), True))
    return tuple(found)


def _interpreter(binary: str) -> str | None:
    """The PT_INTERP path of a 64-bit little-endian ELF binary (the dynamic loader the kernel opens)."""
    try:
        with open(binary, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            for i in range(phnum):
                fh.seek(phoff + i * phentsize)
                ph = fh.read(phentsize)
                (kind,) = struct.unpack_from("<I", ph, 0)
                if kind == PT_INTERP:
                    (offset,) = struct.unpack_from("<Q", ph, 8)
                    (size,) = struct.unpack_from("<Q", ph, 32)
                    fh.seek(offset)
                    return fh.read(size).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


@functools.cache
def _abi() -> int:
    if os.environ.get("KIMI_HOST_GIT_NO_LANDLOCK"):  # a kernel that misbehaves: the overrides still hold
        return 0
    try:
        from kimi_cli.kernel.restrict import landlock_abi

        return landlock_abi()
    except (ImportError, OSError):
        return 0


def available() -> bool:
    """Whether host git calls run confined here: Landlock, git found, and `git --version` works inside."""
    from kimi_cli.hostsafe.programs import host_which

    return _available_with(host_which("git"))


@functools.cache
def _available_with(git: str | None) -> bool:
    if _abi() < 1 or not git or not _programs_of(git):
        return False
    try:
        probe = [git, "--version"]
        out = _confined(lambda: subprocess.run(probe, capture_output=True, timeout=10, cwd="/", env=base_env()), ())
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return False
    return out.returncode == 0


def run_confined(call: Callable[[], T], writable: Iterable[Path | str]) -> T:
    """`call()` (which starts git) on a thread whose children may execute only git and write only beneath
    `writable` (and /dev/null); as it is where confinement is not available."""
    if not available():
        return call()
    return _confined(call, writable)


def _confined(call: Callable[[], T], writable: Iterable[Path | str]) -> T:
    abi = _abi()
    programs = _git_programs()
    from kimi_cli.kernel.restrict import create_ruleset, enter_domain
    from kimi_cli.kernel.rights import EXECUTE, IOCTL_DEV, READ_DIR, READ_FILE, TRUNCATE, WRITE_FILE, fs_rights_for_abi

    handled = fs_rights_for_abi(abi) & ~(READ_FILE | READ_DIR)  # reads stay free: git reads what it likes
    write = handled & ~EXECUTE
    grants: list[tuple[str, int]] = []
    for path, _is_dir in programs:
        grants.append((path, EXECUTE))  # a grant may carry only handled rights; reads are not handled
    # Not the temp folder: workspaces often live there. A pinned git folder (`/proc/self/fd/N`, git/pin.py) is granted
    # as the inode its descriptor holds ("N/.": the magic link is followed as a folder on the way, by the kernel),
    # never as the path it had a moment ago: `.git` may have been swapped for a link to another repository since.
    roots = {f"{p}/." if is_pinned(p) else os.path.realpath(p) for p in writable}
    grants += [(root, write) for root in sorted(roots) if os.path.isdir(root)]
    grants.append(("/dev/null", WRITE_FILE | (TRUNCATE if abi >= 3 else 0) | (IOCTL_DEV if abi >= 5 else 0)))
    fd = create_ruleset(abi, handled, 0, 0, grants)
    outcome: dict[str, object] = {}

    def worker() -> None:
        try:
            enter_domain(fd)
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    try:
        thread = threading.Thread(target=worker, name="kimi-host-git", daemon=True)
        thread.start()
        thread.join()
    finally:
        os.close(fd)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
