"""JSON text that any string survives: session logs, `-p` JSON output, request bodies.

`json.dumps(..., ensure_ascii=False)` leaves lone surrogates (a model may stream `"\\ud800"`) in the text,
and writing that as UTF-8 raises UnicodeEncodeError: the session log or the JSON result is lost. Here they
become `\\ud800` escapes, which json.loads turns back into the same string, so the data stays exact.
C1 and bidi controls are escaped too, so JSON printed on a terminal is inert there.
"""

from __future__ import annotations

import json
import re
from typing import Any

UNSAFE = re.compile(r"[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def dumps(value: Any, **kwargs: Any) -> str:
    """json.dumps with ensure_ascii=False, valid UTF-8 whatever the strings hold."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    if text.isascii() and "\x7f" not in text:  # nothing to escape (the common case: no regex pass over it)
        return text
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def utf8(json_text: str) -> bytes:
    """Encoded JSON text; lone surrogates (only possible inside strings) become \\u escapes. The common
    case costs one encode, as before."""
    try:
        return json_text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json_text).encode("utf-8")


SURROGATE = re.compile(r"[\ud800-\udfff]")
