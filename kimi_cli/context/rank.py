"""Order files by relevance to the task: named files, their definers and users, tests, recent, docs, centrality."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

from kimi_cli.context.analysis import Outline
from kimi_cli.context.tags import IDENTIFIER

DOC_AND_BUILD = re.compile(
    r"(^|/)(readme[^/]*|agents\.md|contributing[^/]*|pyproject\.toml|setup\.py|setup\.cfg|package\.json|"
    r"cargo\.toml|go\.mod|makefile|cmakelists\.txt|tsconfig\.json|build\.gradle[^/]*|pom\.xml|dockerfile|"
    r"tox\.ini|noxfile\.py)$",
    re.IGNORECASE,
)
STOPWORDS = {"the", "and", "for", "that", "this", "with", "from", "into", "fix", "add", "make", "use", "test", "tests"}


def task_mentions(task: str, paths: list[str]) -> tuple[list[str], set[str]]:
    """Files the task names (by path or file name) and the identifiers it mentions."""
    named: list[str] = []
    lowered = task.lower()
    for path in paths:
        base = path.rsplit("/", 1)[-1]
        if path.lower() in lowered or (
            len(base) > 3 and base.lower() in lowered and re.search(rf"(?<![\w/.]){re.escape(base.lower())}\b", lowered)
        ):
            named.append(path)
    words = {w for w in IDENTIFIER.findall(task) if w.lower() not in STOPWORDS}
    return named, words


def recent_files(root: Path, limit: int = 40) -> list[str]:
    """Files touched by recent commits, newest first."""
    try:
        out = subprocess.run(
            ["git", "log", "-n", str(limit), "--name-only", "--format=", "--no-renames"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    seen: dict[str, None] = {}
    for line in out.stdout.splitlines():
        if line.strip():
            seen.setdefault(line.strip(), None)
    return list(seen)


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


def reference_graph(outlines: dict[str, Outline]) -> tuple[dict[str, dict[str, float]], dict[str, set[str]]]:
    """Edges from a file to the files defining names it uses; common names weigh less."""
    definers: dict[str, set[str]] = defaultdict(set)
    for path, outline in outlines.items():
        for d in outline.defs:
            if len(d.name) >= 3:
                definers[d.name].add(path)
    edges: dict[str, dict[str, float]] = {}
    uses: dict[str, set[str]] = defaultdict(set)
    for path, outline in outlines.items():
        row: dict[str, float] = defaultdict(float)
        for name in outline.idents & definers.keys():
            uses[name].add(path)
            owners = definers[name]
            if len(owners) > 25:
                continue  # names like `get` or `__init__` say nothing about structure
            for owner in owners:
                if owner != path:
                    row[owner] += 1.0 / len(owners)
        edges[path] = dict(row)
    return edges, uses


def test_files_for(path: str, all_paths: list[str]) -> list[str]:
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    if len(stem) < 3:
        return []
    pattern = re.compile(rf"(^|/)(test_{re.escape(stem)}|{re.escape(stem)}_test|{re.escape(stem)}\.(test|spec))\b")
    return [p for p in all_paths if p != path and pattern.search(p)]


def rank_files(
    root: Path, task: str, texts: dict[str, str], outlines: dict[str, Outline] | None
) -> tuple[list[str], dict[str, str]]:
    """All packable paths in order, and why each of the leading ones is there.

    Without outlines (the whole repository fits) the order only decides what the model reads first.
    """
    paths = sorted(texts)
    named, words = task_mentions(task, paths)
    why: dict[str, str] = {}
    order: list[str] = []

    def take(items: list[str], reason: str) -> None:
        for p in items:
            if p in texts and p not in why:
                why[p] = reason
                order.append(p)

    centrality: dict[str, float] = {}
    definers: list[str] = []
    users: list[str] = []
    if outlines:
        edges, uses = reference_graph(outlines)
        definers = sorted({p for p, o in outlines.items() for d in o.defs if d.name in words})
        # Users only of distinctive names: a word used by many files (`object`, `value`) ranks nothing.
        limit = max(3, len(outlines) // 20)
        rare = [w for w in words if 0 < len(uses.get(w, ())) <= limit]
        users = sorted({p for w in rare for p in uses[w]})
        centrality = pagerank(edges, sorted(outlines), set(named) | set(definers))

    def by_rank(items: list[str]) -> list[str]:
        return sorted(items, key=lambda p: (-centrality.get(p, 0.0), p))

    take(named, "named in the task")
    take(by_rank(definers), "defines a name in the task")
    take(by_rank(users), "uses a name in the task")
    take([t for p in list(order) for t in test_files_for(p, paths)], "tests of the files above")
    take([p for p in recent_files(root) if p in texts], "changed recently")
    take(sorted(p for p in texts if DOC_AND_BUILD.search(p)), "docs and build config")
    if centrality:
        take(by_rank(list(centrality)), "central in the reference graph")
    take(sorted(texts, key=lambda p: (len(texts[p]), p)), "remaining, smallest first")
    return order, why
