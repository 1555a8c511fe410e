"""Per-file analysis, cached by content: token counts, and tree-sitter definitions for outlines.

Definitions are extracted on every core (fork workers) when there is enough source to repay the start-up.
Ranking does not wait on them (kimi_cli.context.scan finds names by regular expression): only the files
that are going to be outlined are parsed, in the order they are used (`outlines_in_order`).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.context.cache_db import ContentCache
from kimi_cli.context.languages import language_for
from kimi_cli.context.tags import Definition, decode_defs, encode_defs, extract_definitions
from kimi_cli.context.tokens import TokenCounter, cache_dir, content_key

PARALLEL_MIN_BYTES = 2_000_000  # below this, starting worker processes costs more than it saves


@dataclass
class Outline:
    defs: list[Definition]
    idents: set[str] = field(default_factory=set)  # no longer filled: ranking reads names in the scan


class TagCache(ContentCache):
    """Definitions by content key, beside the token counts (the `idents` column is kept, empty)."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path or cache_dir() / "tags.sqlite", "tags", ("defs", "idents"))


TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec)\.[a-z]+$")


def is_test_path(path: str) -> bool:
    return TEST_PATH.search(path) is not None


def _outline_batch(batch: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """In a worker (or in-process): encoded definitions for (path, text) pairs.

    Tests are not parsed: what they define is rarely used elsewhere, and on a large project they are half
    the source (SQLAlchemy: 12 of 21 MB).
    """
    return [(encode_defs([] if is_test_path(path) else extract_definitions(path, text)), "") for path, text in batch]


class Analyzer:
    """Token counts on demand and outlines for whole repositories, both cached by content."""

    def __init__(self, counter: TokenCounter, tags: TagCache | None = None, workers: int | None = None) -> None:
        self.counter = counter
        self.tags = tags or TagCache()
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))

    def tokens(self, texts: dict[str, str], keys: dict[str, str], paths: list[str]) -> dict[str, int]:
        """Exact counts (scaled by the calibration factor) for `paths`."""
        known = self.counter.lookup_many(sorted({keys[p] for p in paths}))
        out: dict[str, int] = {}
        fresh: list[tuple[str, int]] = []
        for path in paths:
            raw = known.get(keys[path])
            if raw is None:
                raw = self.counter.raw(texts[path])
                known[keys[path]] = raw
                fresh.append((keys[path], raw))
            out[path] = round(raw * self.counter.factor)
        self.counter.store(fresh)
        self.counter.flush()
        return out

    def tokens_within(self, text: str, key: str, limit: int, known: dict[str, int]) -> int | None:
        """Tokens of one text (scaled), or None when they are over `limit`. `known`: raw counts by key,
        from one lookup for a batch (TokenCounter.lookup_many); exact counts found here are stored."""
        raw = known.get(key)
        if raw is None:
            raw = self.counter.raw_within(text, int((limit + 0.5) / self.counter.factor) + 1)
            if raw is None:
                return None
            known[key] = raw
            self.counter.store([(key, raw)])
        tokens = round(raw * self.counter.factor)
        return tokens if tokens <= limit else None

    def outlines(self, texts: dict[str, str], keys: dict[str, str]) -> dict[str, Outline]:
        """Definitions and identifiers of every file that has a grammar here."""
        sources = sorted(p for p in texts if language_for(p) is not None)
        cached = self.tags.lookup_many(sorted({keys[p] for p in sources}))
        todo = [p for p in sources if keys[p] not in cached]
        fresh = self._run([(p, texts[p]) for p in todo])
        self.tags.store([(keys[p], d, ids) for p, (d, ids) in zip(todo, fresh, strict=True)])
        for path, row in zip(todo, fresh, strict=True):
            cached[keys[path]] = row
        out: dict[str, Outline] = {}
        for path in sources:
            defs = decode_defs(cached[keys[path]][0])
            if defs is not None:
                out[path] = Outline(defs)
        return out

    def outlines_in_order(
        self,
        paths: list[str],
        keys: dict[str, str],
        read: Callable[[str], str | None],
        want: Callable[[], int] | None = None,
        shared: Any = None,
    ) -> Generator[tuple[str, Outline | None], None, None]:
        """(path, outline) in the order of `paths`, parsed lazily, a batch at a time. `want()` says how many
        more files the caller expects to use (batches are sized to it, 4 to 64); without it batches double
        from 8. When a batch is big enough to repay worker processes, it is parsed in them, with the next
        batch parsing while this one is used; in process nothing is parsed ahead. The caller stops when it
        has enough; close() cancels the rest. Texts are read (and keys taken) a batch at a time. `shared`:
        a process pool to use (not shut down here) instead of one of its own."""
        pool: Any = None
        started: list[Any] = []
        ahead: deque[tuple[list[str], dict[str, Any], list[Any]]] = deque()
        start, size = 0, 8

        def submit() -> None:
            nonlocal start, size, pool
            count = max(4, min(64, want())) if want is not None else size
            batch = paths[start : start + count]
            start += len(batch)
            size = min(size * 2, 128)
            texts = {p: t for p in batch if (t := read(p)) is not None}
            keys.update({p: content_key(t) for p, t in texts.items() if p not in keys})
            cached = self.tags.lookup_many(sorted({keys[p] for p in texts}))
            todo = [(p, texts[p]) for p in batch if p in texts and keys[p] not in cached]
            work = sum(len(t) for _, t in todo)
            if pool is None and self.workers >= 2 and work >= PARALLEL_MIN_BYTES // 4:
                if shared is not None:
                    pool = shared
                else:
                    import multiprocessing
                    from concurrent.futures import ProcessPoolExecutor

                    pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
            if pool is not None and todo:
                parts = [todo[i :: self.workers] for i in range(self.workers)]
                futures = [(part, pool.submit(_outline_batch, part)) for part in parts if part]
                started.extend(future for _part, future in futures)
                ahead.append((batch, cached, futures))
            else:
                ahead.append((batch, cached, [(todo, _outline_batch(todo))] if todo else []))

        try:
            submit()
            while ahead:
                batch, cached, parts = ahead.popleft()
                if pool is not None and start < len(paths):
                    submit()  # in workers, the next batch parses while this one is used
                fresh = []
                for part, answer in parts:
                    rows = answer if isinstance(answer, list) else answer.result()
                    for (path, _text), row in zip(part, rows, strict=True):
                        cached[keys[path]] = row
                        fresh.append((keys[path], *row))
                self.tags.store(fresh)
                for path in batch:
                    row = cached.get(keys.get(path, ""))
                    decoded = decode_defs(row[0]) if row else None
                    yield path, (Outline(decoded) if decoded is not None else None)
                if not ahead and start < len(paths):
                    submit()
        finally:
            for future in started:
                future.cancel()
            if pool is not None and pool is not shared:
                pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, todo: list[tuple[str, str]]) -> list[tuple[str, str]]:
        size = sum(len(t) for _, t in todo)
        if self.workers < 2 or size < PARALLEL_MIN_BYTES:
            return _outline_batch(todo)
        order = sorted(range(len(todo)), key=lambda i: -len(todo[i][1]))
        batches: list[list[int]] = [[] for _ in range(self.workers * 4)]
        for n, index in enumerate(order):
            batches[n % len(batches)].append(index)
        answers: list[tuple[str, str]] = [("null", "")] * len(todo)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor  # ~20 ms to import: only when it pays

        with ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [(b, pool.submit(_outline_batch, [todo[i] for i in b])) for b in batches if b]
            for batch, future in futures:
                for index, answer in zip(batch, future.result(), strict=True):
                    answers[index] = answer
        return answers


def keys_for(texts: dict[str, str]) -> dict[str, str]:
    return {path: content_key(text) for path, text in texts.items()}
