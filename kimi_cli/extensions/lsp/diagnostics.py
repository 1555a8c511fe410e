"""One diagnostic as the model reads it, what an edit introduced or fixed, and the bounded lines it is told.

A diagnostic is matched across edits by what it says (file, severity, code, message), not by its line: an
edit above an old error moves that error, and it must not read as one fixed and one new. Several equal
diagnostics are counted. Errors and warnings are reported; information and hints are not (tsserver's
"declared but never read" hints, pyright's unreachable-code notes).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}
REPORTED = ("error", "warning")
MESSAGE_CHARS = 300
PER_FILE = 500  # diagnostics kept per file: a generated file with 100,000 errors costs no more
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Diag:
    path: str  # workspace-relative (or absolute, outside it)
    line: int  # 1-based
    column: int  # 1-based, in characters
    severity: str
    code: str
    message: str  # one line
    source: str = ""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.path, self.severity, self.source, self.code, self.message)

    def text(self) -> str:
        code = f" [{self.code}]" if self.code else ""
        return f"{self.severity} {self.path}:{self.line}:{self.column}{code} {self.message}"


def one_line(message: str) -> str:
    """A server's message as one line: its lines joined, controls dropped, at most MESSAGE_CHARS."""
    parts = [_CONTROLS.sub("", part).strip() for part in message.splitlines()]
    text = " / ".join(part for part in parts if part)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def utf16_to_column(line_text: str | None, units: int) -> int:
    """A UTF-16 offset (LSP's default position encoding) as a 1-based character column."""
    if not line_text or units <= 0 or line_text.isascii():
        return units + 1
    count = 0
    for index, char in enumerate(line_text):
        if count >= units:
            return index + 1
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line_text) + 1


def column_to_utf16(line_text: str | None, column: int) -> int:
    """A 1-based character column as the UTF-16 offset LSP positions use."""
    if not line_text or line_text.isascii():
        return max(column - 1, 0)
    prefix = line_text[: max(column - 1, 0)]
    return sum(2 if ord(c) > 0xFFFF else 1 for c in prefix)


def from_lsp(items: Iterable[Any], path: str, lines: Sequence[str] | None) -> list[Diag]:
    """lsprotocol Diagnostic objects as Diags (at most PER_FILE)."""
    out: list[Diag] = []
    for item in items:
        if len(out) >= PER_FILE:
            break
        line = int(item.range.start.line)
        text = lines[line] if lines is not None and 0 <= line < len(lines) else None
        severity = SEVERITIES.get(int(item.severity) if item.severity is not None else 1, "error")
        code = "" if item.code is None else one_line(str(item.code))[:80]
        out.append(Diag(path, line + 1, utf16_to_column(text, int(item.range.start.character)), severity, code,
                        one_line(str(item.message)), one_line(str(item.source or ""))[:40]))  # fmt: skip
    return out


TS_CATEGORIES = {"error": "error", "warning": "warning", "suggestion": "hint", "message": "info"}


def from_tsserver(body: Any, path: str) -> list[Diag]:
    """tsserver's own diagnostics (semanticDiagnosticsSync, syntacticDiagnosticsSync): 1-based line and offset."""
    out: list[Diag] = []
    for item in body if isinstance(body, list) else []:
        if len(out) >= PER_FILE:
            break
        if not isinstance(item, dict) or not isinstance(item.get("start"), dict):
            continue
        start = item["start"]
        line, offset = start.get("line"), start.get("offset")
        if not isinstance(line, int) or not isinstance(offset, int):
            continue
        severity = TS_CATEGORIES.get(str(item.get("category")), "error")
        code = item.get("code")
        out.append(Diag(path, line, offset, severity, f"TS{code}" if isinstance(code, int) else "",
                        one_line(str(item.get("text", ""))), "typescript"))  # fmt: skip
    return out


def reported(diags: Iterable[Diag]) -> list[Diag]:
    return [d for d in diags if d.severity in REPORTED]


def delta(before: Sequence[Diag], after: Sequence[Diag]) -> tuple[list[Diag], list[Diag]]:
    """(introduced, fixed): what `after` has that `before` had not, and the reverse, counting equal ones."""
    return _missing_from(before, after), _missing_from(after, before)


def _missing_from(base: Sequence[Diag], other: Sequence[Diag]) -> list[Diag]:
    have = Counter(d.key for d in base)
    out = []
    for diag in other:
        if have[diag.key] > 0:
            have[diag.key] -= 1
        else:
            out.append(diag)
    return out


def _order(diag: Diag) -> tuple[int, str, int, int]:
    return (REPORTED.index(diag.severity) if diag.severity in REPORTED else 9, diag.path, diag.line, diag.column)


def edit_report(
    introduced: list[Diag], fixed: list[Diag], max_lines: int, first_check: Sequence[str] = ()
) -> list[str]:
    """The lines an edit's result gets: a heading, what it introduced, then what it fixed; [] when nothing."""
    if not introduced and not fixed:
        return []
    counts = [f"{len(introduced)} new" if introduced else "", f"{len(fixed)} fixed" if fixed else ""]
    head = f"[diagnostics] {', '.join(c for c in counts if c)} after this edit"
    if first_check:
        head += f" (first check of {', '.join(first_check[:3])}: problems from before the edit are included)"
    body = [d.text() for d in sorted(introduced, key=_order)]
    body += [f"fixed: {d.text()}" for d in sorted(fixed, key=_order)]
    if len(body) > max_lines:
        left = len(body) - max_lines
        body = [*body[:max_lines], f"... {left} more (the Diagnostics tool lists them all)"]
    return [head, *body]


def listing(diags: Sequence[Diag], max_lines: int) -> list[str]:
    """Every reported diagnostic, errors first, bounded."""
    shown = sorted(reported(diags), key=_order)
    lines = [d.text() for d in shown[:max_lines]]
    if len(shown) > max_lines:
        lines.append(f"... {len(shown) - max_lines} more (name one file to see its own)")
    return lines
