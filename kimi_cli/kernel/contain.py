"""The one containment check: is this path the root, or below it?

Lexical, component by component (`/ws2` is not inside `/ws`): resolve both first where links matter. Every "is
this inside the workspace (the private tmp, a hidden folder, a repository)" in kimi asks here, from the file
tools to the landlock supervisors; so it is standard library only, as the rest of kernel/ (the spawner loads it
by path, as python -I -S). A caller that checks many paths against the same ones (the Landlock plan's walk)
normalises them once (`normal`) and asks `below_normal`, the check itself.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself costs the spawner's start a few ms
if TYPE_CHECKING:
    from collections.abc import Iterable

    StrPath = str | os.PathLike[str]


def normal(path: StrPath) -> str:
    """The path's lexical normal form (no `.`, `..`, doubled or trailing slash)."""
    text = os.path.normpath(path)
    return "/" + text.lstrip("/") if text.startswith("//") else text  # normpath keeps a leading "//"


def below_normal(top: str, text: str) -> str | None:
    """below() for paths already in normal form."""
    if text == top:
        return ""
    if top == ".":  # a relative root: the relative paths that stay below it
        return None if text == ".." or text.startswith(("/", "../")) else text
    prefix = top if top.endswith("/") else top + "/"
    return text[len(prefix) :] if text.startswith(prefix) else None


def below(root: StrPath, path: StrPath) -> str | None:
    """`path` relative to `root` ("" for the root itself), or None when it is not inside it."""
    return below_normal(normal(root), normal(path))


def inside(path: StrPath, root: StrPath) -> bool:
    """Whether `path` is `root` or lies below it."""
    return below(root, path) is not None


def inside_any(path: StrPath, roots: Iterable[StrPath]) -> bool:
    """Whether `path` is, or lies below, one of `roots`."""
    text = normal(path)
    return any(below_normal(normal(root), text) is not None for root in roots)
