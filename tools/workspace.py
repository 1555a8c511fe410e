"""The workspace boundary: every path a tool touches must resolve inside it.

resolve() follows links to say where a path leads (a link inside that points inside is fine); the
tools then open the resolved path through kimi_cli.hostsafe.fs, which follows no link at all. So a
folder swapped for a link between the two steps makes the open fail; it never leads outside.
"""

from __future__ import annotations

import os
from pathlib import Path

from kimi_cli.kernel.contain import below, inside
from kimi_cli.tools.errors import ToolError


class Workspace:
    """A root folder; resolve() refuses `..`, outside absolute paths and symlinks that lead out."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        if not path or not path.strip():
            raise ToolError("path is empty: give a path relative to the workspace root")
        if "\x00" in path:
            raise ToolError("path contains a NUL byte")
        candidate = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            real = candidate.resolve()
        except (RuntimeError, OSError) as exc:  # symlink loops raise RuntimeError on 3.11
            raise ToolError(f"cannot resolve {path}: {exc}") from None
        if not inside(real, self.root):
            why = "through a symlink that leads" if _has_symlink(candidate, self.root) else "which is"
            raise ToolError(
                f"refused: {path} resolves to {real}, {why} outside the workspace {self.root}. "
                "Only paths inside the workspace can be used."
            )
        return real

    def resolve_write(self, path: str) -> Path:
        """resolve() for a tool that writes or deletes: also refused when the path as given, or where its links
        lead, passes through a folder of kimi_cli.hostsafe.protected (.git, .kimi) at any depth, in any case."""
        from kimi_cli.hostsafe.protected import protected_part, refusal

        real = self.resolve(path)
        given = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
        for rel in (below(self.root, given if given.is_absolute() else self.root / given), self.rel(real)):
            part = protected_part(rel) if rel is not None else None
            if part is not None:
                raise ToolError(refusal(path, part))
        return real

    def rel(self, path: Path) -> str:
        """A resolved path as the workspace-relative string that safe_fs opens ("" for the root)."""
        rel = below(self.root, path)
        if rel is None:
            raise ValueError(f"{path} is not inside {self.root}")
        return rel

    def refused(self, path: str, exc: OSError) -> ToolError:
        """The error for an open that safe_fs refused, or any other OSError, in words the model can act on."""
        from kimi_cli.hostsafe.fs import NotRegularFile, UnsafePath

        if isinstance(exc, UnsafePath):
            return ToolError(
                f"refused: {path} changed while it was opened (a symlink appeared on the way, which could lead "
                f"outside the workspace {self.root}); only paths inside the workspace can be used"
            )
        if isinstance(exc, NotRegularFile):
            return ToolError(f"{path} is {exc.strerror}")
        if isinstance(exc, FileNotFoundError):
            return ToolError(f"{path} does not exist")
        if isinstance(exc, IsADirectoryError):
            return ToolError(f"{path} is a directory")
        return ToolError(f"cannot access {path}: {exc.strerror or exc}")

    def relative(self, path: Path) -> str:
        rel = below(self.root, path)
        return str(path) if rel is None else rel or "."


def _has_symlink(path: Path, root: Path) -> bool:
    current = path
    while current != current.parent:
        if current.is_symlink():
            return True
        if current == root:
            break
        current = current.parent
    return False
