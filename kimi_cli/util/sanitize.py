"""The one terminal sanitiser: untrusted text is made visible before it reaches a terminal.

Model text, reasoning, tool output and errors, file names, MCP strings, undo lists and `-p` output can all
carry escape sequences (OSC 52 writes the clipboard, OSC 8 makes links, CSI rewinds and erases lines, a
bare CR or backspaces overwrite what was shown). Every such character becomes a visible escape such as
`\\x1b`, so the user sees exactly what was sent. Newlines and tabs stay. Bidi overrides, which reorder
what is shown, and lone surrogates, which would crash the encoder, become visible too.

Rich markup is the other channel: text printed through rich must go in as `Text` (never as a markup
string), which `visible_text` builds.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls but \t and \n, DEL, C1 controls, bidi controls, and lone surrogates.
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
LINE_UNSAFE = re.compile(UNSAFE.pattern.replace("[\\x00-\\x08\\x0b-\\x1f", "[\\x00-\\x1f", 1))
SGR = re.compile(r"\x1b\[[0-9;:]*m")  # colours and weights only: dropped from tool output, never shown raw
ESCAPE_STYLE = "reverse"


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, drop_colors: bool = False, one_line: bool = False) -> str:
    """`text` with every control character, escape sequence introducer, bidi control and lone surrogate
    written out as a visible escape. `drop_colors` removes well-formed colour sequences first (tool output
    from test runners); `one_line` also writes out newlines and tabs."""
    if drop_colors:
        text = SGR.sub("", text)
    text = text.replace("\r\n", "\n")
    if one_line:
        return re.sub(r"[\t\n]", lambda m: _escape(m.group(0)), UNSAFE.sub(lambda m: _escape(m.group(0)), text))
    return UNSAFE.sub(lambda m: _escape(m.group(0)), text)


def exact(text: str) -> str:
    """Every byte as it will run: like `visible`, but a CR before a newline is shown too (approvals)."""
    return UNSAFE.sub(lambda m: _escape(m.group(0)), text)


def is_clean(text: str) -> bool:
    """No character that `exact` would write out."""
    return UNSAFE.search(text) is None


def visible_text(
    text: str, style: str = "", *, drop_colors: bool = False, exact_bytes: bool = False, one_line: bool = False
) -> Any:
    """A rich `Text` of untrusted text: never parsed as markup, escapes shown in reverse video so that a
    written-out `\\x1b` cannot be confused with the four characters typed. `one_line` (titles) writes
    out newlines and tabs too."""
    from rich.text import Text

    if drop_colors:
        text = SGR.sub("", text)
    if not exact_bytes:
        text = text.replace("\r\n", "\n")
    out = Text(style=style)
    last = 0
    pattern = LINE_UNSAFE if one_line else UNSAFE
    for match in pattern.finditer(text):
        out.append(text[last : match.start()])
        out.append(_escape(match.group(0)), style=ESCAPE_STYLE)
        last = match.end()
    out.append(text[last:])
    return out
