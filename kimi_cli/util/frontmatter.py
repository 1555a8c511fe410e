"""Markdown front matter (`---` lines around `key: value` pairs), as custom commands and skills write it.

A small reader, not YAML: values stay strings (Claude Code's `argument-hint: [pr] [priority]` is text, which
YAML would turn into a list), quotes around a value are removed, `key: |` or `key: >` take the indented lines
below, and `- item` lines under an empty key make a list. Unreadable lines are skipped.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def split(text: str) -> tuple[dict[str, str | list[str]], str]:
    """(front matter, body); text without front matter is all body."""
    text = text.lstrip("\ufeff")
    match = FENCE.match(text)
    if match is None:
        return {}, text
    meta: dict[str, str | list[str]] = {}
    lines = match.group(1).splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip() or line.lstrip().startswith("#") or line.startswith((" ", "\t")):
            continue
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key, value = key.strip(), value.strip()
        block: list[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index].startswith((" ", "\t"))):
            block.append(lines[index].strip())
            index += 1
        if value in ("|", ">", "|-", ">-"):
            joiner = "\n" if value.startswith("|") else " "
            meta[key] = joiner.join(b for b in block if b or joiner == "\n").strip()
        elif not value and block and all(b.startswith("- ") or not b for b in block):
            meta[key] = [_unquote(b[2:]) for b in block if b]
        else:
            meta[key] = _unquote(" ".join([value, *[b for b in block if b]]).strip())
    return meta, match.group(2)


def text_of(meta: dict[str, str | list[str]], key: str) -> str:
    value = meta.get(key, "")
    return ", ".join(value) if isinstance(value, list) else value


def list_of(meta: dict[str, str | list[str]], key: str) -> list[str]:
    """A list however it is written: `- a` lines, `[a, b]`, or `a, b`."""
    value = meta.get(key, "")
    if isinstance(value, list):
        return [v.strip() for v in value if v.strip()]
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return [_unquote(part) for part in _split_commas(value) if part.strip()]


def _split_commas(value: str) -> list[str]:
    """Commas outside parentheses: `Bash(git add:*), Bash(git status:*)` is two items."""
    parts, depth, current = [], 0, ""
    for char in value:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts
