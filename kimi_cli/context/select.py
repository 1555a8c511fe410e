"""Choosing what the pack holds, in rank order: whole files first, then outlines until their share is spent.

Files are read again here (the scan kept no text): a file is read when its turn comes and its lower
bound (characters / 8) still fits, counted, and kept only if it goes in whole. Outlines are parsed in
the order they will be used, a batch ahead, and parsing stops when the room is spent: on SQLAlchemy
about 40 files are parsed for the 30 that get an outline, where every candidate (700) was parsed before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kimi_cli.context.analysis import Analyzer, Outline, is_test_path
from kimi_cli.context.enumerate import read_record
from kimi_cli.context.languages import language_for
from kimi_cli.context.pack_layout import MAX_CHARS_PER_TOKEN, MAX_OUTLINED, MAX_PARSE_CHARS, overhead
from kimi_cli.context.scan import FileFacts
from kimi_cli.context.tags import skeleton
from kimi_cli.context.tokens import content_key

CHUNK = 64  # files read and counted together (one cache lookup)
MIN_OUTLINE = 32  # tokens: less room than this holds no useful outline
MAX_MISSES = 32  # outlines in a row that did not fit: the rest of the share is too small to keep parsing


class Reader:
    """Texts for the later stages: the ones the scan held, else a fresh no-follow read beneath the root."""

    def __init__(self, root: Path, max_bytes: int, held: dict[str, str]) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.held = held
        self._fd: Any = None
        self._ctx: Any = None

    def __enter__(self) -> Reader:
        from kimi_cli.hostsafe.fs import rooted

        self._ctx = rooted(self.root)
        self._fd = self._ctx.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)

    def text(self, path: str) -> str | None:
        if path in self.held:
            return self.held[path]
        return read_record(self.root, path, self.max_bytes, self._fd).text


def choose_full(
    order: list[str],
    facts: dict[str, FileFacts],
    reader: Reader,
    analyzer: Analyzer,
    room: int,
    tokens: dict[str, int],
    keys: dict[str, str],
) -> tuple[dict[str, str], dict[str, int], dict[str, str], int]:
    """Whole files in order while they fit `room`: (modes, costs, their texts, tokens used). `tokens` and
    `keys` are updated with every file counted exactly on the way (a file read again gets its current key).
    A file is read only if its lower bound (characters / 8) fits what is left, and counted only up to what
    is left: the tokenizer gives up past it."""
    modes: dict[str, str] = {}
    costs: dict[str, int] = {}
    kept: dict[str, str] = {}
    used = 0
    for start in range(0, len(order), CHUNK):
        if used >= room - 16:
            break
        chunk = [p for p in order[start : start + CHUNK] if facts[p].chars / MAX_CHARS_PER_TOKEN <= room - used]
        texts: dict[str, str] = {}
        for path in chunk:
            text = reader.text(path)
            if text is not None:
                texts[path] = text
                if path not in keys or path not in reader.held:
                    key = content_key(text)
                    if keys.get(path) != key:  # new, or changed since it was counted
                        keys[path] = key
                        tokens.pop(path, None)
        known = analyzer.counter.lookup_many(sorted({keys[p] for p in texts if p not in tokens}))
        for path in chunk:
            if path not in texts:
                continue
            left = room - used - overhead(path)
            if facts[path].chars / MAX_CHARS_PER_TOKEN > left:
                continue
            count = tokens.get(path)
            if count is None:
                count = analyzer.tokens_within(texts[path], keys[path], left, known)
                if count is None:
                    continue  # over what is left: not counted to the end, not kept
                tokens[path] = count
            if count <= left:
                modes[path], costs[path] = "full", count + overhead(path)
                kept[path] = texts[path]
                used += costs[path]
    analyzer.counter.flush()
    return modes, costs, kept, used


def choose_outlines(
    order: list[str],
    facts: dict[str, FileFacts],
    modes: dict[str, str],
    costs: dict[str, int],
    used: int,
    room: int,
    analyzer: Analyzer,
    reader: Reader,
    keys: dict[str, str],
    pool: Any = None,
) -> dict[str, Outline]:
    """Outlines of the next files in order while the room lasts; parsing stops when it is spent. `pool`:
    the cold pack's worker processes, for batches big enough to repay them."""
    pending = [
        p for p in order
        if p not in modes and not facts[p].demoted and facts[p].chars <= MAX_PARSE_CHARS and language_for(p)
        and not is_test_path(p)  # tests are not outlined (analysis._outline_batch)
    ][:MAX_OUTLINED]  # fmt: skip
    chosen: dict[str, Outline] = {}
    if used >= room - MIN_OUTLINE or not pending:
        return chosen
    misses = 0
    seen: list[int] = []  # costs of the outlines parsed so far: how many more files the rest of the room wants

    def want() -> int:
        if not seen:
            return 8
        return int((room - used) / max(1.0, sum(seen) / len(seen))) + 4

    stream = analyzer.outlines_in_order(pending, keys, reader.text, want, pool)  # close() stops it
    try:
        for path, outline in stream:
            if outline is None or not outline.defs:
                continue
            cost = analyzer.counter.count(skeleton(outline.defs)) + overhead(path)
            seen.append(cost)
            if used + cost <= room:
                modes[path], costs[path] = "outline", cost
                chosen[path] = outline
                used += cost
                misses = 0
            else:
                misses += 1
            if used >= room - MIN_OUTLINE or misses >= MAX_MISSES:
                break  # the share is spent: what is left is smaller than the outlines that come next
    finally:
        stream.close()  # cancels the parses still queued
    return chosen
