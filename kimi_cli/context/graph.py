"""The reference graph between files: shared names (a file uses a name another defines) and resolved imports.

Names are the language-free signal: a Python file calling `render_table` points at the file defining it.
Imports are exact where they resolve (kimi_cli.context.imports); in a JS monorepo they carry most of the
structure, since common method names (`render`, `options`) are defined in dozens of places and are dropped.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from kimi_cli.context.imports import Resolver
from kimi_cli.context.scan import FileFacts

MAX_OWNERS = 25  # a name defined in more files than this (`get`, `__init__`) says nothing about structure
IMPORT_WEIGHT = 1.0  # an import counts like one name owned by that file alone


def defined_names(facts: dict[str, FileFacts], nodes: list[str]) -> dict[str, set[str]]:
    """Name -> the files (among `nodes`) defining it."""
    definers: dict[str, set[str]] = defaultdict(set)
    for path in nodes:
        for name in facts[path].defs:
            definers[name].add(path)
    return definers


def reference_graph(
    facts: dict[str, FileFacts],
    nodes: list[str],
    uses: dict[str, frozenset[str]],
    resolver: Resolver | None,
) -> dict[str, dict[str, float]]:
    """Edges from a file to the files defining names it uses (shared by owners) and to the files it imports."""
    definers = defined_names(facts, nodes)
    node_set = set(nodes)
    edges: dict[str, dict[str, float]] = {}
    for path in nodes:
        row: dict[str, float] = defaultdict(float)
        imported = resolver.resolve_all(path, facts[path].lang, facts[path].imports) if resolver else []
        scope = _go_scope(path, facts[path].lang, imported, resolver)
        for name in uses.get(path, frozenset()):
            owners = definers.get(name)
            if not owners or len(owners) > MAX_OWNERS:
                continue
            if scope is not None:
                owners = owners & scope  # Go: a name comes from the file's own package or one it imports
                if not owners:
                    continue
            for owner in owners:
                if owner != path:
                    row[owner] += 1.0 / len(owners)
        for target, share in imported:
            if target != path and target in node_set:
                row[target] += IMPORT_WEIGHT * share
        edges[path] = dict(row)
    return edges


def _go_scope(
    path: str, lang: str | None, imported: list[tuple[str, float]], resolver: Resolver | None
) -> set[str] | None:
    """The files a Go file can take names from: its own package and the repository packages it imports.
    None (no restriction) for other languages, or a Go tree without a go.mod to resolve imports by."""
    if lang != "go" or resolver is None or not resolver.go_modules:
        return None
    return {target for target, _ in imported} | set(resolver.go_package_files(posixpath.dirname(path)))


def pagerank(
    edges: dict[str, dict[str, float]], nodes: list[str], personal: set[str], iterations: int = 30
) -> dict[str, float]:
    """Power iteration with damping 0.85; teleports and dangling mass go to `personal` (or everyone)."""
    if not nodes:
        return {}
    import numpy as np

    index = {n: i for i, n in enumerate(nodes)}
    src, dst, weight = [], [], []
    for a, row in edges.items():
        for b, w in row.items():
            if a in index and b in index:
                src.append(index[a])
                dst.append(index[b])
                weight.append(w)
    n = len(nodes)
    src_a, dst_a, w_a = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(weight)
    out_w = np.bincount(src_a, weights=w_a, minlength=n) if len(src) else np.zeros(n)
    share_w = w_a / out_w[src_a] if len(src) else w_a
    teleport = np.zeros(n)
    targets = [index[p] for p in personal if p in index] or list(range(n))
    teleport[targets] = 1.0 / len(targets)
    dangling = out_w <= 0
    rank = np.full(n, 1.0 / n)
    for _ in range(iterations):
        flow = np.bincount(dst_a, weights=rank[src_a] * share_w, minlength=n) if len(src) else np.zeros(n)
        rank = 0.85 * flow + (0.15 + 0.85 * rank[dangling].sum()) * teleport
    return {node: float(rank[i]) for node, i in index.items()}
