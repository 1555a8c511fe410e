"""The one containment check: is this path the root, or below it?

Lexical, component by component (`/ws2` is not inside `/ws`): resolve both first where links matter. Every "is
this inside the workspace (the private tmp, a hidden folder, a repository)" in kimi asks here, from the file
tools to the landlock supervisors; so it is standard library only, as the rest of kernel/ (the spawner loads it
by path, as python -I -S).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself costs the spawner's start a few ms
if TYPE_CHECKING:
    from collections.abc import Iterable

    StrPath = str | os.PathLike[str]


def _text(path: StrPath) -> str:
    text = os.path.normpath(os.fspath(path))
    return "/" + text.lstrip("/") if text.startswith("//") else text  # normpath keeps a leading "//"


def below(root: StrPath, path: StrPath) -> str | None:
    """`path` relative to `root` ("" for the root itself), or None when it is not inside it."""
    text, top = _text(path), _text(root)
    if text == top:
        return ""
    if top == ".":  # a relative root: the relative paths that stay below it
        return None if text == ".." or text.startswith(("/", "../")) else text
    prefix = top if top.endswith("/") else top + "/"
    return text[len(prefix) :] if text.startswith(prefix) else None


def inside(path: StrPath, root: StrPath) -> bool:
    """Whether `path` is `root` or lies below it."""
    return below(root, path) is not None


def inside_any(path: StrPath, roots: Iterable[StrPath]) -> bool:
    """Whether `path` is, or lies below, one of `roots`."""
    return any(below(root, path) is not None for root in roots)
