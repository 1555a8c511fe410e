"""What an approval or trust question shows: everything, with nothing hidden in plain sight.

The sanitiser (kimi_cli.util.sanitize) writes out control characters. A question needs more: `npm test`, 260
spaces, then `; echo PWNED > marker` looks like `npm test` wherever the text is cut, wrapped or scrolled.
So here runs of blanks and of empty lines become counted marks (`⎵×260`, `[40 empty lines]`), invisible
and look-alike spaces are written out (`\\u200b`), and the text is never cut silently: past a front end's
limit, a mark says how many characters are left out, and the caller must not offer `always` for it
(`Shown.complete`). Both front ends (the terminal's panels, ACP's permission requests) build their text here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kimi_cli.util.sanitize import UNSAFE

LIMIT = 20_000  # characters of one question shown in full (terminal panels, ACP details)
TITLE_LIMIT = 1_000  # characters of an ACP title (editors show titles on one card line)
SPACE_RUN = 4  # a run of this many spaces or more is counted, not shown
INDENT_KEPT = 16  # indentation at the start of a line, up to this many spaces, stays as it is (scripts)
# Spaces that are not ASCII spaces, zero-width characters and line separators: look-alikes of nothing. Also
# the letters and signs that draw as a blank (Hangul fillers, the Braille blank, Khmer's invisible vowels) and
# the other invisible format characters (soft hyphen, joiners, variation selectors, interlinear annotation,
# tags): `npm test`, 260 Braille blanks, `; echo PWNED` was a title of "npm test" and blank space, not counted.
ODD = (
    r"\u00a0\u00ad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028\u2029\u202f"
    r"\u205f-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
TOKEN = re.compile(
    r"(?P<blank>\n(?:[ \t]*\n){2,})|(?P<run>[ \t]{2,})|(?P<odd>(?P<oddc>[" + ODD + r"])(?P=oddc)*)"
    r"|(?P<unsafe>" + UNSAFE.pattern + r")"
)
LINE_TOKEN = re.compile(TOKEN.pattern + r"|(?P<line>[\t\n])")


@dataclass
class Shown:
    """A question's text as pieces: (text, is_mark); marks are kimi's own words, shown apart (reverse video)."""

    pieces: list[tuple[str, bool]] = field(default_factory=list)
    left_out: int = 0  # characters of the original not shown (past the limit)

    @property
    def complete(self) -> bool:
        return self.left_out == 0

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.pieces)

    def rich(self, style: str = "", mark_style: str = "reverse") -> Any:
        from rich.text import Text

        out = Text(style=style)
        for text, is_mark in self.pieces:
            out.append(text, style=mark_style if is_mark else "")
        return out


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _run_mark(run: str) -> str:
    spaces, tabs = run.count(" "), run.count("\t")
    if not tabs:
        return f"⎵×{spaces}"
    return f"[{spaces} spaces, {tabs} tabs]" if spaces else f"⇥×{tabs}"


def _rendered(match: re.Match[str], text: str, one_line: bool) -> list[tuple[str, bool]]:
    token, kind = match.group(0), match.lastgroup
    at_line_start = match.start() == 0 or text[match.start() - 1] == "\n"
    if kind == "blank":
        empty = f"[{token.count(chr(10)) - 1} empty lines]"
        if one_line:
            return [("\\x0a", True), (empty, True), ("\\x0a", True)]
        return [("\n", False), (empty, True), ("\n", False)]
    if kind == "run" and (
        (len(token) < SPACE_RUN and "\t" not in token)
        or (not one_line and at_line_start and "\t" not in token and len(token) <= INDENT_KEPT)
    ):
        return [(token, False)]
    if kind == "run":
        return [(_run_mark(token), True)]
    if kind == "odd" and len(token) > 1:  # a run of one invisible character, counted as blanks are
        return [(f"{_escape(token[0])}×{len(token)}", True)]
    return [(_escape(token), True)]


def show(text: str, *, one_line: bool = False, limit: int = LIMIT, what: str = "characters") -> Shown:
    """`text` made safe and plain to read, at most `limit` characters shown (a counted blank run costs only
    its mark); past that, a mark counts the characters of `text` left out. `one_line` (titles) writes out
    newlines and tabs too."""
    shown = Shown()
    pieces = shown.pieces
    used = last = 0
    full = False
    for match in (LINE_TOKEN if one_line else TOKEN).finditer(text):
        plain = text[last : match.start()]
        if used + len(plain) > limit:
            break
        pieces.append((plain, False))
        used, last = used + len(plain), match.start()
        rendered = _rendered(match, text, one_line)
        size = sum(len(piece) for piece, _ in rendered)
        if used + size > limit:
            full = True
            break
        pieces += rendered
        used, last = used + size, match.end()
    if not full:
        room = max(limit - used, 0)
        pieces.append((text[last : last + room], False))
        last = min(len(text), last + room)
    if last < len(text):
        shown.left_out = len(text) - last
        pieces.append((f" [… {shown.left_out:,} more {what} not shown]", True))
    return shown


def join(lines: Sequence[str], *, sep: str = "; ", limit: int = TITLE_LIMIT, what: str = "items") -> Shown:
    """Items on one line (a title), each shown whole or not at all; past `limit`, a mark counts those left out."""
    out = Shown()
    used = 0
    for index, line in enumerate(lines):
        item = show(line, one_line=True)
        size = len(item.plain) + (len(sep) if index else 0)
        if index and used + size > limit:
            out.left_out = len(lines) - index
            out.pieces.append((f" [… {out.left_out} more {what}]", True))
            break
        if index:
            out.pieces.append((sep, False))
        out.pieces += item.pieces
        used += size
    return out


def listing(lines: Iterable[str], *, limit: int = LIMIT, bullet: str = "• ") -> Shown:
    """One line per item, each written out whole (one_line); past `limit` characters, the rest are counted."""
    out = Shown()
    items = list(lines)
    used = 0
    for index, line in enumerate(items):
        item = show(line, one_line=True)
        if index and used + len(item.plain) > limit:
            out.left_out = len(items) - index
            out.pieces.append((f"\n[… {out.left_out} more not shown]", True))
            break
        out.pieces.append((("\n" if index else "") + bullet, False))
        out.pieces += item.pieces
        used += len(item.plain) + len(bullet) + 1
    return out


def by_danger(asks: Sequence[Any]) -> list[Any]:
    """Trust asks (kimi_cli.hostsafe.trust.Widening) the most dangerous first, ties in their own order: the
    ranking is data in the trust table (kimi_cli.hostsafe.trust_rules.DANGER)."""
    from kimi_cli.hostsafe.trust_rules import danger

    return sorted(asks, key=lambda ask: danger(str(getattr(ask, "key", ""))))
