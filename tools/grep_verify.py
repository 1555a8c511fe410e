"""Grep where Landlock is missing: every line rg printed is checked against the file as a no-follow open reads it.

rg opens files by path, so a folder swapped for a link while it walks can make it read outside the
workspace. Without a kernel confinement, a printed line is kept only if the same workspace file, opened
through kimi_cli.hostsafe.fs (no link anywhere on the way), holds exactly that text at that line now.
A line read from outside then survives only if the workspace already held the same text at the same
place: nothing new leaves. What remains is an oracle: a command that can guess a line exactly learns
whether the outside file had it (one guess per line per call). Landlock, where present, closes that.
"""

from __future__ import annotations

import re
from pathlib import Path

from kimi_cli.hostsafe import fs as safe_fs

MATCH = re.compile(r"(\d+)([:-])(.*)", re.DOTALL)
MAX_LINE_BYTES = 1 << 20
MAX_VERIFY_BYTES = 64 * 1024 * 1024  # a match deeper into a file than this is dropped rather than re-read


def _file_lines(root_fd: int, rel: str, wanted: set[int]) -> dict[int, bytes]:
    """The wanted lines (1-based, without the newline) of a workspace file, read without following links."""
    try:
        fd, _st = safe_fs.open_regular_at(root_fd, rel)
    except OSError:
        return {}
    found: dict[int, bytes] = {}
    last = max(wanted)
    with open(fd, "rb", closefd=True) as fh:
        number = 0
        read = 0
        while raw := fh.readline(MAX_LINE_BYTES):
            if len(raw) == MAX_LINE_BYTES and not raw.endswith(b"\n"):
                break  # an enormous line: numbering past it cannot be checked cheaply, so stop here
            number += 1
            read += len(raw)
            if number in wanted:
                found[number] = raw.rstrip(b"\n")
            if number >= last or read > MAX_VERIFY_BYTES:
                break
    return found


def verified_lines(root: Path, lines: list[str], max_line_chars: int) -> list[str]:
    """rg's `--null` output lines that the workspace confirms, as `path:line:text` (context: `path-line-text`)."""
    parsed: list[tuple[str, int, str, str] | None] = []
    wanted: dict[str, set[int]] = {}
    for line in lines:
        path, sep, rest = line.partition("\0")
        match = MATCH.fullmatch(rest) if sep else None
        if match is None:
            parsed.append(None)  # `--` between context groups, or something we cannot check: dropped below
            continue
        rel = path[2:] if path.startswith("./") else path
        number = int(match.group(1))
        parsed.append((rel, number, match.group(2), line))
        wanted.setdefault(rel, set()).add(number)
    actual: dict[str, dict[int, bytes]] = {}
    with safe_fs.rooted(root) as root_fd:
        for rel, numbers in wanted.items():
            actual[rel] = _file_lines(root_fd, rel, numbers)
    out: list[str] = []
    for item, line in zip(parsed, lines, strict=True):
        if item is None:
            if line == "--" and out and out[-1] != "--":
                out.append("--")
            continue
        rel, number, kind, printed = item
        text = actual[rel].get(number)
        if text is None:
            continue
        path = printed.partition("\0")[0]
        expected = f"{path}\0{number}{kind}{text.decode('utf-8', errors='replace')}"[:max_line_chars]
        if expected == printed:
            out.append(f"{path}{kind}{number}{kind}{printed[len(path) + 1 + len(str(number)) + 1 :]}")
    while out and out[-1] == "--":
        out.pop()
    return out
