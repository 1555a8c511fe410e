"""One pass over the repository: what ranking needs from each file, after which its text is let go.

A cold pack used to hold every file's text (SQLAlchemy: 57M characters) until it had ranked, chosen and
rendered. Now each file is read once here, summarised into `FileFacts` (size, length, demotion, language)
and the task's term counts, and dropped. Texts are kept only while the whole repository might still fit
the budget (then they are the pack). Later stages read again the few files they need: the graph's
candidates for what they define, import and use (`analyse_nodes`, `names_used`), the chosen files for
their text, and the outlined ones for tree-sitter. On a big tree these passes run in forked workers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.context.enumerate import read_record
from kimi_cli.context.generated import generated_reason
from kimi_cli.context.imports import MANIFESTS, import_specs
from kimi_cli.context.languages import language_for
from kimi_cli.context.tags import IDENTIFIER, cheap_definitions

PARALLEL_MIN_BYTES = 8_000_000  # below this, forking workers costs more than it saves


def is_test_path(path: str) -> bool:
    from kimi_cli.context.analysis import is_test_path as test

    return test(path)


@dataclass(slots=True)
class FileFacts:
    """What one packable file contributes to ranking, without its text."""

    path: str
    size: int
    chars: int
    demoted: str = ""  # why the file is listed only (generated, vendored, bulk data), or ""
    lang: str | None = None
    defs: tuple[str, ...] = ()  # names it defines (graph candidates only; tests define nothing that counts)
    imports: tuple[str, ...] = ()  # raw import specifiers (graph candidates only)


@dataclass
class Scan:
    facts: dict[str, FileFacts] = field(default_factory=dict)
    skipped: dict[str, list[object]] = field(default_factory=dict)  # path -> [size, reason]
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # task term -> path -> occurrences
    lengths: dict[str, int] = field(default_factory=dict)  # non-demoted path -> length in ~words
    held: dict[str, str] = field(default_factory=dict)  # texts, only while everything might fit
    manifests: dict[str, str] = field(default_factory=dict)  # package.json and go.mod texts, for imports
    terms: dict[str, float] = field(default_factory=dict)

    def lexical(self) -> dict[str, float]:
        from kimi_cli.context.relevance import bm25

        return bm25(self.counts, self.lengths, self.terms)


def summarise(
    path: str, size: int, text: str, terms: dict[str, float], named: frozenset[str]
) -> tuple[FileFacts, dict[str, int], str | None]:
    """Facts, task term counts and (for a package.json or go.mod) the text worth keeping, for one file."""
    demoted = "" if path in named else (generated_reason(path, text) or "")
    if demoted:
        return FileFacts(path, size, len(text), demoted=demoted), {}, None
    facts = FileFacts(path, size, len(text), lang=language_for(path))
    counts: dict[str, int] = {}
    if terms:
        lowered = text.lower()
        counts = {t: n for t in terms if (n := lowered.count(t))}
    return facts, counts, (text if path.rsplit("/", 1)[-1] in MANIFESTS else None)


def node_facts(path: str, lang: str, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names defined, import specifiers) of one graph candidate."""
    defs: tuple[str, ...] = ()
    if not is_test_path(path):
        defs = tuple(dict.fromkeys(n for n in cheap_definitions(lang, text) if len(n) >= 3))
    return defs, import_specs(lang, text)


class Workers:
    """One pool of forked workers for a whole cold pack, started on first use: forking a process that holds
    100 MB costs 30-100 ms here, once rather than once per stage."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._pool: Any = None

    def pool(self) -> Any:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(self.count, mp_context=multiprocessing.get_context("fork"))
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def scan_repository(
    root: Path,
    paths: list[str],
    terms: dict[str, float],
    named: frozenset[str],
    max_bytes: int,
    hold_chars: int,
    sizes_hint: int = 0,
    workers: Workers | None = None,
    progress: object = None,
) -> Scan:
    """Read every path once. `hold_chars`: keep texts while their total stays under this (then drop them
    all: the repository cannot fit, and later stages read what they need). `sizes_hint`: bytes on disk,
    to decide whether workers pay."""
    if workers is not None and workers.count >= 2 and sizes_hint >= PARALLEL_MIN_BYTES and len(paths) >= 200:
        return _scan_parallel(root, paths, terms, named, max_bytes, workers)
    scan = Scan(terms=terms)
    holding = True
    held_chars = 0
    from kimi_cli.hostsafe.fs import rooted

    with rooted(root) as root_fd:
        for n, path in enumerate(paths):
            record = read_record(root, path, max_bytes, root_fd)
            if n % 500 == 0 and callable(progress):
                progress("reading", n, len(paths))
            if record.text is None:
                scan.skipped[record.path] = [record.size, record.reason or ""]
                continue
            _add(scan, *summarise(record.path, record.size, record.text, terms, named))
            if holding and not scan.facts[record.path].demoted:
                held_chars += len(record.text)
                if held_chars > hold_chars:
                    holding = False
                    scan.held.clear()
                else:
                    scan.held[record.path] = record.text
    return scan


def _add(scan: Scan, facts: FileFacts, counts: dict[str, int], manifest: str | None) -> None:
    scan.facts[facts.path] = facts
    if facts.demoted:
        return
    scan.lengths[facts.path] = max(1, facts.chars // 6)  # ~6 characters a word
    for term, n in counts.items():
        scan.counts.setdefault(term, {})[facts.path] = n
    if manifest is not None:
        scan.manifests[facts.path] = manifest


def _scan_slice(
    job: tuple[str, list[str], dict[str, float], frozenset[str], int],
) -> list[tuple[str, Any]]:
    """In a worker: ("facts", (facts, counts, manifest)) or ("skipped", (path, size, reason)) per path."""
    root, paths, terms, named, max_bytes = job
    from kimi_cli.hostsafe.fs import rooted

    out: list[tuple[str, Any]] = []
    with rooted(root) as root_fd:
        for path in paths:
            record = read_record(Path(root), path, max_bytes, root_fd)
            if record.text is None:
                out.append(("skipped", (record.path, record.size, record.reason or "")))
            else:
                out.append(("facts", summarise(record.path, record.size, record.text, terms, named)))
    return out


def _scan_parallel(
    root: Path, paths: list[str], terms: dict[str, float], named: frozenset[str], max_bytes: int, workers: Workers
) -> Scan:
    scan = Scan(terms=terms)
    step = max(50, len(paths) // (workers.count * 8))
    jobs = [(str(root), paths[i : i + step], terms, named, max_bytes) for i in range(0, len(paths), step)]
    for result in workers.pool().map(_scan_slice, jobs):
        for kind, item in result:
            if kind == "skipped":
                scan.skipped[item[0]] = [item[1], item[2]]
            else:
                _add(scan, *item)
    return scan


def analyse_nodes(root: Path, scan: Scan, nodes: list[str], max_bytes: int, workers: Workers | None = None) -> None:
    """Fill in `defs` and `imports` of the graph's candidates (read again, or from the held texts)."""
    facts = scan.facts
    langs = {p: facts[p].lang for p in nodes}
    found: dict[str, Any] = _per_node(root, nodes, scan.held, max_bytes, workers, ("facts", langs))
    for path, (defs, imports) in found.items():
        facts[path].defs, facts[path].imports = defs, imports


def names_used(
    root: Path,
    paths: list[str],
    defined: frozenset[str],
    max_bytes: int,
    held: dict[str, str] | None = None,
    workers: Workers | None = None,
) -> dict[str, frozenset[str]]:
    """For each path, the names of `defined` its text mentions (the reference graph's raw material)."""
    return _per_node(root, paths, held or {}, max_bytes, workers, ("uses", defined))


def _one(path: str, text: str, job: tuple[str, Any]) -> Any:
    kind, arg = job
    if kind == "uses":
        return frozenset(IDENTIFIER.findall(text)) & arg
    return node_facts(path, arg[path], text)


def _per_node(
    root: Path, paths: list[str], held: dict[str, str], max_bytes: int, workers: Workers | None, job: tuple[str, Any]
) -> dict[str, Any]:
    """`job` over each path's text: the held ones here, the rest read again (in workers when it pays)."""
    out = {p: _one(p, held[p], job) for p in paths if p in held}
    rest = [p for p in paths if p not in held]
    slices = [rest[i : i + 100] for i in range(0, len(rest), 100)]
    if workers is not None and workers.count >= 2 and len(slices) >= 3:
        kind, arg = job
        for answer in workers.pool().map(_node_slice, [(str(root), part, max_bytes, kind, _part_of(arg, part, kind))
                                                      for part in slices]):  # fmt: skip
            out.update(answer)
    else:
        for part in slices:
            out.update(_node_slice((str(root), part, max_bytes, *job)))
    return out


def _part_of(arg: Any, part: list[str], kind: str) -> Any:
    """What one slice's job needs: the defined names whole, the languages of its own paths only."""
    return arg if kind == "uses" else {p: arg[p] for p in part}


def _node_slice(task: tuple[str, list[str], int, str, Any]) -> dict[str, Any]:
    root, paths, max_bytes, kind, arg = task
    from kimi_cli.hostsafe.fs import rooted

    out: dict[str, Any] = {}
    with rooted(root) as root_fd:
        for path in paths:
            text = read_record(Path(root), path, max_bytes, root_fd).text
            if text is not None:
                out[path] = _one(path, text, (kind, arg))
    return out


def worker_count() -> int:
    return max(1, min(4, os.cpu_count() or 1))
