"""The pack's layout: the shares of the budget, the per-block overhead, and the listing of every path.

Shared by the packer and the cold-pack stages (cold.py, select.py), which the packer calls: kept apart so
none of them imports the module that imports it.
"""

from __future__ import annotations

from typing import Literal

from kimi_cli.context.enumerate import FileRecord
from kimi_cli.context.pack_markup import BOUNDARY_TOKENS
from kimi_cli.context.pack_markup import tree_name as _name

Mode = Literal["full", "outline", "listed", "skipped"]


def overhead(path: str) -> int:
    """Tokens for a block's header and footer around the text: `<file-B path="...">` ... `</file-B>`."""
    return 8 + BOUNDARY_TOKENS + (len(path) + 1) // 2


OUTLINE_SHARE = 0.12  # of the budget kept for outlines when not everything fits
SAFETY = 0.005  # of the budget, for the difference between per-block counts and the rendered whole
FULL_HEADING = "## Files in full, most relevant first"
OUTLINE_HEADING = "## Outlines (definitions and line numbers) of files not shown in full; read a file for more"
TREE_HEADING = "## Every file (F: in full, O: outline, L: listed only, S: skipped)"
MAX_CHARS_PER_TOKEN = 8  # above this many chars per token of budget, a repository cannot fit
MAX_OUTLINED = 3000  # files parsed with tree-sitter when not everything fits: the ones that can still win a place
MAX_PARSE_CHARS = 400_000  # a bigger file (a generated header, a vendored bundle) is not parsed
COLLAPSE_AT = 2000  # past this many files, folders with nothing packed are listed as one line each
LISTING_SHARE = 0.10  # of the budget, at most, for the listing of a big repository


def render_tree(
    records: list[FileRecord], modes: dict[str, Mode], placeholder: bool = False, collapse: bool = False
) -> str:
    """Every file under its folder, with a one-letter mark; skipped files say why and how big. With
    `collapse`, a folder that holds nothing packed is one line: its file count, main extensions and size
    (the model can list it)."""
    if collapse:
        return _collapsed_tree(records, modes)
    return _full_tree(records, modes, placeholder)


def _full_tree(records: list[FileRecord], modes: dict[str, Mode], placeholder: bool = False) -> str:
    lines: list[str] = []
    shown_dirs: set[str] = set()
    for rec in sorted(records, key=lambda r: r.path):
        parts = rec.path.split("/")
        for depth in range(len(parts) - 1):
            folder = "/".join(parts[: depth + 1])
            if folder not in shown_dirs:
                shown_dirs.add(folder)
                lines.append(f"{'  ' * depth}{_name(parts[depth])}/")
        indent = "  " * (len(parts) - 1)
        if rec.text is None:
            lines.append(f"{indent}{_name(parts[-1])} S ({rec.reason}, {rec.size} B)")
        else:
            mark = "F" if placeholder else {"full": "F", "outline": "O"}.get(modes.get(rec.path, "listed"), "L")
            lines.append(f"{indent}{_name(parts[-1])} {mark}")
    return "\n".join(lines)


def _collapsed_tree(records: list[FileRecord], modes: dict[str, Mode]) -> str:
    packed_dirs: set[str] = {""}
    totals: dict[str, list[FileRecord]] = {}
    for rec in records:
        parts = rec.path.split("/")
        for depth in range(1, len(parts)):
            totals.setdefault("/".join(parts[:depth]), []).append(rec)
        if modes.get(rec.path) in ("full", "outline"):
            for depth in range(1, len(parts)):
                packed_dirs.add("/".join(parts[:depth]))
    lines: list[str] = []
    shown: set[str] = set()
    for rec in sorted(records, key=lambda r: r.path):
        parts = rec.path.split("/")
        visible = True
        for depth in range(len(parts) - 1):
            folder = "/".join(parts[: depth + 1])
            if folder not in shown:
                shown.add(folder)
                if folder in packed_dirs:
                    lines.append(f"{'  ' * depth}{_name(parts[depth])}/")
                else:
                    summary = _summary(totals.get(folder, []))
                    lines.append(f"{'  ' * depth}{_name(parts[depth])}/ ... {summary} (nothing packed; list it to see)")
            if folder not in packed_dirs:
                visible = False
                break
        if visible:
            indent = "  " * (len(parts) - 1)
            if rec.text is None:
                lines.append(f"{indent}{_name(parts[-1])} S ({rec.reason}, {rec.size} B)")
            else:
                mark = {"full": "F", "outline": "O"}.get(modes.get(rec.path, "listed"), "L")
                lines.append(f"{indent}{_name(parts[-1])} {mark}")
    return "\n".join(lines)


def _summary(records: list[FileRecord]) -> str:
    from collections import Counter

    exts = Counter(r.path.rsplit(".", 1)[-1] if "." in r.path.rsplit("/", 1)[-1] else "(none)" for r in records)
    main = ", ".join(f".{e} {n}" if e != "(none)" else f"{e} {n}" for e, n in exts.most_common(3))
    size = sum(r.size for r in records)
    return f"{len(records)} files ({main}), {size / 1e6:.1f} MB"
