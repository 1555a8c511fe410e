"""The programs kimi itself starts on the host (git, bwrap, rg, a pager) come from where no command can write.

A user who works in a project usually has its virtualenv or `node_modules/.bin` on PATH, often first; those
folders are inside the workspace, which every sandboxed command may write. A plain PATH lookup would then
find a `git` or `bwrap` a command planted there a moment (or a session) ago, and run it outside the sandbox:
a planted `bwrap` is a sandbox that does nothing. So kimi's own host programs are looked up on the PATH
without the entries a sandbox can write: relative ones (`.`, an empty entry: the current folder, usually the
workspace) and every folder inside a workspace kimi has opened in this process, or one named by the caller.
A candidate whose real path leads back into such a folder (a link) is skipped too, and so is one whose
resolution merely passes through such a folder: `ws/bin -> /usr/bin` resolves outside today, but a command
may point the link elsewhere between the lookup and the exec (every link on the way is checked, not only
where it ends). What remains lies wholly outside sandbox-writable folders, so the sandbox cannot change a
decision once made: `trusted_path` keeps it for the process (keyed by the PATH and the folders).

Commands in the sandbox keep the user's PATH: the project's virtualenv is what `pytest` should find there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.kernel.contain import inside_any

_WRITABLE: set[str] = set()
_lock = threading.Lock()


def sandbox_writable(*folders: Path | str) -> None:
    """Note folders that sandboxed commands may write (a workspace, a private tmp) for every later lookup."""
    with _lock:
        for folder in folders:
            real = os.path.realpath(folder)
            if real != os.sep:  # `/` as a workspace would leave no PATH at all; nothing sane lives there
                _WRITABLE.add(real)


_MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


@dataclass
class Walk:
    """How the absolute path resolves, one name at a time: every path visited (`steps`, links included),
    each link met with its text (`links`), where it ends, and whether it met more links than the kernel
    follows (a loop)."""

    steps: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    end: str = os.sep
    loop: bool = False


def walk_links(path: str) -> Walk:
    """Resolve `path` as the kernel would, keeping what a check must see: a link anywhere on the way can be
    pointed elsewhere later, not only the last one (this module's PATH checks, hostsafe.pins)."""
    walk = Walk()
    pending = [c for c in path.split(os.sep) if c]
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            walk.end = os.path.dirname(walk.end)
            continue
        step = os.path.join(walk.end, part)
        walk.steps.append(step)
        try:
            target = os.readlink(step)
        except OSError:  # not a link, or not there
            walk.end = step
            continue
        walk.links.append((step, target))
        if len(walk.links) > _MAX_LINKS:
            walk.loop = True
            return walk
        if os.path.isabs(target):
            walk.end = os.sep
        pending = [c for c in target.split(os.sep) if c] + pending
    return walk


def passes_writable(path: str, roots: Iterable[str]) -> bool:
    """True when resolving the absolute `path` visits a sandbox-writable folder at any step: a link met on
    the way, or where the path ends. Such a path can be redirected by a command after any check. A loop
    counts as writable: never a program kimi runs."""
    roots = tuple(roots)
    walk = walk_links(path)
    return walk.loop or any(inside_any(step, roots) for step in walk.steps) or inside_any(walk.end, roots)


def _roots(exclude: Iterable[Path | str]) -> frozenset[str]:
    with _lock:
        roots = set(_WRITABLE)
    roots.update(os.path.realpath(p) for p in exclude)
    return frozenset(roots)


_decided: dict[tuple[str, frozenset[str]], str] = {}


def trusted_path(path: str | None = None, exclude: Iterable[Path | str] = ()) -> str:
    """PATH (default: this process's) without relative entries and entries that are, or resolve through,
    a sandbox-writable folder."""
    raw = os.environ.get("PATH", os.defpath) if path is None else path
    roots = _roots(exclude)
    key = (raw, roots)
    if (known := _decided.get(key)) is not None:
        return known
    kept: list[str] = []
    for entry in raw.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue  # "" and "." are the current folder
        if entry in kept or passes_writable(entry, roots):
            continue
        kept.append(entry)
    result = os.pathsep.join(kept)
    if len(_decided) > 64:
        _decided.clear()
    _decided[key] = result
    return result


def host_which(name: str, exclude: Iterable[Path | str] = (), path: str | None = None) -> str | None:
    """The absolute path of `name` on the trusted PATH, or None. Never a file that resolves into, or through,
    a sandbox-writable folder, whatever PATH entry led to it."""
    roots = _roots(exclude)
    for entry in trusted_path(path, exclude).split(os.pathsep):
        if not entry:
            continue
        candidate = os.path.join(entry, name)
        if not os.path.isfile(candidate) or not os.access(candidate, os.X_OK):
            continue
        if passes_writable(candidate, roots):
            continue
        return candidate
    return None
