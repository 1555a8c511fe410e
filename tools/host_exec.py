"""The programs kimi itself starts on the host (git, bwrap, rg, a pager) come from where no command can write.

A user who works in a project usually has its virtualenv or `node_modules/.bin` on PATH, often first; those
folders are inside the workspace, which every sandboxed command may write. A plain PATH lookup would then
find a `git` or `bwrap` a command planted there a moment (or a session) ago, and run it outside the sandbox:
a planted `bwrap` is a sandbox that does nothing. So kimi's own host programs are looked up on the PATH
without the entries a sandbox can write: relative ones (`.`, an empty entry: the current folder, usually the
workspace) and every folder inside a workspace kimi has opened in this process, or one named by the caller.
A candidate whose real path leads back into such a folder (a link) is skipped too.

Commands in the sandbox keep the user's PATH: the project's virtualenv is what `pytest` should find there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

_WRITABLE: set[str] = set()
_lock = threading.Lock()


def sandbox_writable(*folders: Path | str) -> None:
    """Note folders that sandboxed commands may write (a workspace, a private tmp) for every later lookup."""
    with _lock:
        for folder in folders:
            real = os.path.realpath(folder)
            if real != os.sep:  # `/` as a workspace would leave no PATH at all; nothing sane lives there
                _WRITABLE.add(real)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _roots(exclude: Iterable[Path | str]) -> set[str]:
    with _lock:
        roots = set(_WRITABLE)
    roots.update(os.path.realpath(p) for p in exclude)
    return roots


def trusted_path(path: str | None = None, exclude: Iterable[Path | str] = ()) -> str:
    """PATH (default: this process's) without relative entries and entries inside a sandbox-writable folder."""
    raw = os.environ.get("PATH", os.defpath) if path is None else path
    roots = _roots(exclude)
    kept: list[str] = []
    for entry in raw.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue  # "" and "." are the current folder
        if _under(os.path.realpath(entry), roots) or entry in kept:
            continue
        kept.append(entry)
    return os.pathsep.join(kept)


def host_which(name: str, exclude: Iterable[Path | str] = (), path: str | None = None) -> str | None:
    """The absolute path of `name` on the trusted PATH, or None. Never a file that resolves into a
    sandbox-writable folder, whatever PATH entry led to it."""
    roots = _roots(exclude)
    for entry in trusted_path(path, exclude).split(os.pathsep):
        if not entry:
            continue
        candidate = os.path.join(entry, name)
        if not os.path.isfile(candidate) or not os.access(candidate, os.X_OK):
            continue
        if _under(os.path.realpath(candidate), roots):
            continue
        return candidate
    return None
