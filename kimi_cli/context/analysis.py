"""Per-file analysis, cached by content: token counts, and tree-sitter definitions plus identifiers.

Definitions are extracted on every core (fork workers) when there is enough source to repay the start-up.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.context.cache_db import ContentCache
from kimi_cli.context.languages import language_for
from kimi_cli.context.tags import Definition, decode_defs, encode_defs, extract_definitions, identifiers
from kimi_cli.context.tokens import TokenCounter, cache_dir, content_key

PARALLEL_MIN_BYTES = 2_000_000  # below this, starting worker processes costs more than it saves


@dataclass
class Outline:
    defs: list[Definition]
    idents: set[str]


class TagCache(ContentCache):
    """Definitions and identifiers by content key, beside the token counts."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path or cache_dir() / "tags.sqlite", "tags", ("defs", "idents"))


TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec)\.[a-z]+$")


def is_test_path(path: str) -> bool:
    return TEST_PATH.search(path) is not None


def _outline_batch(batch: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """In a worker (or in-process): encoded definitions and identifiers for (path, text) pairs.

    Tests are not parsed: what they define is rarely used elsewhere, and on a large project they are half
    the source (SQLAlchemy: 12 of 21 MB). Their identifiers still give the reference graph its edges.
    """
    out = []
    for path, text in batch:
        defs = [] if is_test_path(path) else extract_definitions(path, text)
        out.append((encode_defs(defs), " ".join(sorted(identifiers(text)))))
    return out


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
            defs_raw, idents_raw = cached[keys[path]]
            defs = decode_defs(defs_raw)
            if defs is not None:
                out[path] = Outline(defs, set(idents_raw.split()))
        return out

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
