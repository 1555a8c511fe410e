"""JSON that neither side can break: text any string survives, and a reader no input can crash.

Writing (session logs, `-p` JSON output, request bodies): `json.dumps(..., ensure_ascii=False)` leaves lone
surrogates (a model may stream `"\\ud800"`) in the text, and writing that as UTF-8 raises
UnicodeEncodeError: the session log or the JSON result is lost. Here they become `\\ud800` escapes, which
json.loads turns back into the same string, so the data stays exact. C1 and bidi controls are escaped too,
so JSON printed on a terminal is inert there.

Reading (`loads`, for every JSON the model, a tool, a server, a hook or a workspace file hands kimi): bounded
in size and depth before anything is decoded, since json.loads and everything that walks its result
(validation, json.dumps, the schema checker) recurse once per level, and 1,000 nested arrays (2 KB) raise
RecursionError out of any of them. NaN and Infinity are refused (they are not JSON, and a result holding one
cannot be printed as JSON). Every refusal is a ValueError with a message a model can act on.
"""

from __future__ import annotations

import json
import math
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

MAX_DEPTH = 64  # nesting levels: far past any real tool call, answer or schema, far below the recursion limit
MAX_CHARS = 32 * 1024 * 1024
# a string (skipped whole: brackets inside it are text) or one bracket
_STRUCTURE = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]', re.DOTALL)  # possessive: linear


class JSONLimitError(ValueError):
    """The JSON is over a size or depth bound; nothing was decoded."""


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, max_chars: int = MAX_CHARS) -> Any:
    """json.loads within bounds. ValueError (never RecursionError or MemoryError from nesting) for text that
    is not JSON, is over `max_chars` characters, nests deeper than `max_depth`, or holds NaN or Infinity."""
    if len(text) > max_chars:
        raise JSONLimitError(f"{len(text):,} characters of JSON, over the {max_chars:,}-character limit")
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8")  # invalid UTF-8: UnicodeDecodeError, a ValueError
    depth_of(text, max_depth)
    try:
        return _DECODER.decode(text)
    except RecursionError:  # a deep stack at the caller's end: still no crash
        raise JSONLimitError("JSON nested too deep to decode here") from None


def depth_of(text: str, max_depth: int = MAX_DEPTH) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets in strings do not count), or -1
    when the text has too few brackets to pass `max_depth`; JSONLimitError as soon as it passes it."""
    depth = deepest = 0
    if text.count("[") + text.count("{") <= max_depth:  # cannot nest past the bound: no scan (SSE chunks)
        return -1
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > max_depth:
                raise JSONLimitError(f"JSON nested deeper than {max_depth} levels")
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"{text} is out of range for a number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)  # made once (json.loads with
# hooks builds a decoder per call)
