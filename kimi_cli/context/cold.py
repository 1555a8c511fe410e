"""A cold pack, planned: scan every file once, rank from cheap signals, then read and parse only what is used.

1. Scan (kimi_cli.context.scan): each file's facts and task term counts; texts are dropped unless the whole
   repository might fit the budget.
2. Graph: among the candidate source files (all of them, or the 3,000 most promising on a big tree),
   which names defined elsewhere each one uses (its text is read again), plus its resolved imports.
3. Rank (kimi_cli.context.rank) and choose (kimi_cli.context.select): whole files in order until the
   full-text share is spent, then outlines parsed in order until the rest is.
Peak memory is the facts, the graph and the chosen texts, not the repository.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kimi_cli.context.analysis import Analyzer, keys_for
from kimi_cli.context.enumerate import FileRecord
from kimi_cli.context.graph import MAX_OWNERS, defined_names, reference_graph
from kimi_cli.context.imports import Resolver
from kimi_cli.context.pack_cache import PackState
from kimi_cli.context.pack_layout import (
    COLLAPSE_AT,
    LISTING_SHARE,
    MAX_CHARS_PER_TOKEN,
    OUTLINE_SHARE,
    SAFETY,
    overhead,
    render_tree,
)
from kimi_cli.context.rank import kind_weight, rank_files, task_mentions
from kimi_cli.context.relevance import query_terms
from kimi_cli.context.scan import (
    FileFacts,
    Scan,
    Workers,
    analyse_nodes,
    names_used,
    scan_repository,
    worker_count,
)
from kimi_cli.context.select import Reader, choose_full, choose_outlines
from kimi_cli.context.tokens import TokenCounter

if TYPE_CHECKING:
    from kimi_cli.context.analysis import Outline


class PackerParts(Protocol):
    """What a cold pack uses of the RepoPacker that calls it (a Protocol, so this module never imports it)."""

    root: Path
    counter: TokenCounter
    analyzer: Analyzer
    max_file_bytes: int
    progress: Callable[[str, int, int], None]


MAX_GRAPH = 3000  # source files in the reference graph of a big tree: the ones that can still win a place
MAX_GRAPH_CHARS = 1_000_000  # a bigger file (a generated table) is not searched for names
MAX_GRAPH_TOTAL = 25_000_000  # characters in the graph at most (SQLAlchemy's source and tests: 21M; torch: 126M)


@dataclass
class Cold:
    state: PackState
    sizes: dict[str, int]
    texts: dict[str, str]  # of the files in full only
    outlines: dict[str, Outline]


def cold_pack(packer: PackerParts, paths: list[str], task: str, budget: int, disk_bytes: int) -> Cold:
    workers = Workers(min(worker_count(), packer.analyzer.workers))
    try:
        return _cold_pack(packer, paths, task, budget, disk_bytes, workers)
    finally:
        workers.close()


def _cold_pack(
    packer: PackerParts, paths: list[str], task: str, budget: int, disk_bytes: int, workers: Workers
) -> Cold:
    named = frozenset(task_mentions(task, paths)[0]) if task.strip() else frozenset()
    terms = query_terms(task) if task.strip() else {}
    scan = scan_repository(
        packer.root, paths, terms, named, packer.max_file_bytes, int(budget * MAX_CHARS_PER_TOKEN),
        sizes_hint=disk_bytes, workers=workers, progress=packer.progress,
    )  # fmt: skip
    facts = scan.facts
    records = [FileRecord(p, f.size, text="") for p, f in facts.items()]
    records += [FileRecord(p, int(v[0]), reason=str(v[1])) for p, v in scan.skipped.items()]  # type: ignore[call-overload]
    collapse = len(records) > COLLAPSE_AT
    tree_tokens = packer.counter.count(render_tree(records, {}, placeholder=True))
    if collapse:
        tree_tokens = min(tree_tokens, int(budget * LISTING_SHARE))
    room = int(budget * (1 - SAFETY)) - tree_tokens - 64
    live = [p for p, f in facts.items() if not f.demoted]
    keys: dict[str, str] = {}  # content keys, taken when a text is read for counting or parsing
    tokens: dict[str, int] = {}
    if len(scan.held) == len(live) and sum(facts[p].chars for p in live) / MAX_CHARS_PER_TOKEN <= room:
        packer.progress("counting", 0, len(live))  # it might all fit: count everything
        keys = keys_for(scan.held)
        tokens = packer.analyzer.tokens(scan.held, keys, sorted(live))
    fits = len(tokens) == len(live) and sum(tokens[p] + overhead(p) for p in live) <= room

    packer.progress("ranking", 0, len(live))
    order, why = rank_scanned(packer.root, task, scan, named, packer.max_file_bytes, workers)

    full_room = room if fits else int(room * (1 - OUTLINE_SHARE))
    candidates = [p for p in order if not facts[p].demoted]
    with Reader(packer.root, packer.max_file_bytes, scan.held) as reader:
        modes, costs, texts, used = choose_full(candidates, facts, reader, packer.analyzer, full_room, tokens, keys)
        scan.held.clear()
        outlines: dict[str, Outline] = {}
        if not fits:
            packer.progress("outlining", 0, 0)
            pool = workers.pool() if workers.count >= 2 else None
            outlines = choose_outlines(candidates, facts, modes, costs, used, room, packer.analyzer, reader, keys, pool)
    why.update({p: f"listed only: {f.demoted}" for p, f in facts.items() if f.demoted})
    # A file listed for lack of room shows "over budget" whatever it ranked for: its reason is not kept (on the
    # torch tree, 1.3 MB less state to read back on every warm pack).
    why = {p: r for p, r in why.items() if p in modes or r.startswith("listed only")}
    repo_tokens, exact = repo_total(facts, tokens)
    shown_keys = {p: keys[p] for p in list(tokens) + list(modes) if p in keys}
    state = PackState(
        {}, order, why, dict(modes), costs, tokens, shown_keys, dict(scan.skipped), tree_tokens, room, repo_tokens,
        exact,
    )  # fmt: skip
    state.collapse = collapse
    sizes = {r.path: r.size for r in records}
    return Cold(state, sizes, texts, outlines)


def rank_scanned(
    root: Path, task: str, scan: Scan, named: frozenset[str], max_bytes: int, workers: Workers | None = None
) -> tuple[list[str], dict[str, str]]:
    """Order and reasons for a scanned repository: the reference graph of its candidates, then rank_files."""
    live = [p for p, f in scan.facts.items() if not f.demoted]
    nodes = graph_nodes(task, scan, live, named)
    analyse_nodes(root, scan, nodes, max_bytes, workers)
    defined = frozenset(n for n, owners in defined_names(scan.facts, nodes).items() if len(owners) <= MAX_OWNERS)
    uses = names_used(root, nodes, defined, max_bytes, scan.held, workers)
    edges = reference_graph(scan.facts, nodes, uses, Resolver(live, scan.manifests))
    return rank_files(root, task, scan.facts, scan.lexical() if scan.terms else {}, edges, nodes)


def rank_repository(root: Path, task: str, max_bytes: int = 1_000_000) -> tuple[list[str], dict[str, str]]:
    """The whole ranking on its own (tests, tools): scan every file, then rank_scanned."""
    from kimi_cli.context.enumerate import list_paths

    paths = list_paths(root)
    named = frozenset(task_mentions(task, paths)[0]) if task.strip() else frozenset()
    terms = query_terms(task) if task.strip() else {}
    scan = scan_repository(root, paths, terms, named, max_bytes, hold_chars=1 << 40)
    return rank_scanned(root, task, scan, named, max_bytes)


def graph_nodes(task: str, scan: Scan, live: list[str], named: frozenset[str]) -> list[str]:
    """The source files in the reference graph. On a big tree (more than MAX_GRAPH files or
    MAX_GRAPH_TOTAL characters: what the graph costs grows with both), the ones that can still win a place:
    with a task, the files it names and the best lexical hits; then the project's own source, shallow and
    small first."""
    facts = scan.facts
    usable = [p for p in live if facts[p].lang is not None and facts[p].chars <= MAX_GRAPH_CHARS]
    if len(usable) <= MAX_GRAPH and sum(facts[p].chars for p in usable) <= MAX_GRAPH_TOTAL:
        return sorted(usable)
    chosen: list[str] = [p for p in usable if p in named]
    if task.strip():
        scores = scan.lexical()
        chosen += sorted((p for p in usable if p in scores), key=lambda p: (-scores[p], p))[: MAX_GRAPH // 2]
    chosen += sorted(usable, key=lambda p: (-kind_weight(p, task), p.count("/"), facts[p].chars, p))
    nodes: list[str] = []
    total = 0
    for path in dict.fromkeys(chosen):
        if len(nodes) >= MAX_GRAPH or total + facts[path].chars > MAX_GRAPH_TOTAL:
            break
        nodes.append(path)
        total += facts[path].chars
    return sorted(nodes)


def repo_total(facts: dict[str, FileFacts], tokens: dict[str, int]) -> tuple[int, bool]:
    """All packable text in tokens; files never counted are estimated from the ones that were."""
    total = sum(tokens.values())
    if len(tokens) == len(facts):
        return total, True
    counted_chars = sum(facts[p].chars for p in tokens)
    uncounted = sum(f.chars for p, f in facts.items() if p not in tokens)
    return total + (round(uncounted * total / counted_chars) if counted_chars else uncounted // 4), False
