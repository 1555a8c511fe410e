"""PackWatcher: notices files that changed after the repository was packed and writes a compact note.

The pack in the system prompt is never edited (the provider's prefix cache depends on it); the note
travels with the next message instead.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from kimi_cli.context.enumerate import list_paths
from kimi_cli.context.pack_cache import Fingerprint, fingerprint

SMALL_FILE_CHARS = 4_000
NOTE_CAP = 12_000
MAX_READ_BYTES = 8 * 1024 * 1024  # a bigger file is described from its first 8 MiB


class PackWatcher:
    """Compares the workspace with the state it had when packed (or when last noted)."""

    def __init__(self, root: Path, full_texts: dict[str, str], baseline: Fingerprint | None = None) -> None:
        """`baseline`: the fingerprint the pack was made from, where the caller has it (a change made while
        packing is then noticed, and the tree is not listed a second time)."""
        self.root = root
        self.texts = dict(full_texts)
        self.baseline: Fingerprint = dict(baseline) if baseline is not None else fingerprint(root, list_paths(root))

    def acknowledge(self, paths: list[str]) -> None:
        """The agent changed these itself, by name (a file edit): the model already knows."""
        current = fingerprint(self.root, paths)
        for path, stamp in current.items():
            if stamp[0] < 0:
                self.baseline.pop(path, None)
            else:
                self.baseline[path] = stamp
            self.texts.pop(path, None)

    def note(self) -> str:
        """A note of what changed since the baseline ('' when nothing did); the baseline moves forward."""
        now = fingerprint(self.root, list_paths(self.root))
        added = sorted(now.keys() - self.baseline.keys())
        deleted = sorted(self.baseline.keys() - now.keys())
        changed = sorted(p for p in now.keys() & self.baseline.keys() if now[p] != self.baseline[p])
        self.baseline = now
        if not (added or deleted or changed):
            return ""
        lines = ["[kimi] Files changed since the repository snapshot in the system prompt:"]
        for path in changed:
            lines.append(self._describe(path))
        lines += [f"added: {p}" for p in added]
        lines += [f"deleted: {p}" for p in deleted]
        for path in deleted:
            self.texts.pop(path, None)
        text = "\n".join(lines)
        return text if len(text) <= NOTE_CAP else text[:NOTE_CAP] + "\n[... note cut; read the files for details]"

    def _describe(self, path: str) -> str:
        from kimi_cli.hostsafe.fs import UnsafePath, read_bytes

        try:  # through kimi_cli.hostsafe.fs: a file replaced by a link (`ln -sf ~/.ssh/id_rsa a.py`) is not read
            new = read_bytes(self.root, path, MAX_READ_BYTES).decode("utf-8")
        except UnsafePath:
            self.texts.pop(path, None)
            return f"changed: {path} (now a symlink, or under one; not followed)"
        except (OSError, UnicodeDecodeError):
            self.texts.pop(path, None)
            return f"changed: {path} (not readable as text)"
        old = self.texts.get(path)
        self.texts[path] = new
        if old is None:
            return f"changed: {path}"
        if len(new) <= SMALL_FILE_CHARS:
            from kimi_cli.context.pack_markup import block, boundary_for  # markers a file cannot forge

            return f"changed: {path}, now:\n" + block("file", boundary_for([path, new]), path, new)
        diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
        return f"changed: {path}:\n{diff[: NOTE_CAP // 2]}"
