"""Order files by relevance to the task: named files, their definers and users, tests, recent, docs, centrality."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from kimi_cli.context.graph import pagerank
from kimi_cli.context.scan import FileFacts
from kimi_cli.context.tags import IDENTIFIER

DOC_AND_BUILD = re.compile(
    r"(^|/)(readme[^/]*|agents\.md|contributing[^/]*|pyproject\.toml|setup\.py|setup\.cfg|package\.json|"
    r"cargo\.toml|go\.mod|makefile|cmakelists\.txt|tsconfig\.json|build\.gradle[^/]*|pom\.xml|dockerfile|"
    r"tox\.ini|noxfile\.py)$",
    re.IGNORECASE,
)
STOPWORDS = {"the", "and", "for", "that", "this", "with", "from", "into", "fix", "add", "make", "use", "test", "tests"}


MAX_SAME_NAME = 3  # a file name the task mentions that more files share (a monorepo's 60 package.json) names none


def task_mentions(task: str, paths: list[str]) -> tuple[list[str], set[str]]:
    """Files the task names (by path, or by a file name few files share) and the identifiers it mentions."""
    named: list[str] = []
    by_base: dict[str, list[str]] = defaultdict(list)
    lowered = task.lower()
    for path in paths:
        base = path.rsplit("/", 1)[-1]
        if "/" in path and path.lower() in lowered:  # a root file's path is its name: the rule below
            named.append(path)
        elif (
            len(base) > 3 and base.lower() in lowered and re.search(rf"(?<![\w/.]){re.escape(base.lower())}\b", lowered)
        ):
            by_base[base.lower()].append(path)
    named += [p for group in by_base.values() if len(group) <= MAX_SAME_NAME for p in group]
    words = {w for w in IDENTIFIER.findall(task) if w.lower() not in STOPWORDS}
    return sorted(named), words


def history(root: Path, limit: int = 300) -> list[tuple[int, list[str]]]:
    """(commit time, files) of recent commits, newest first; [] outside git. Large commits are dropped:
    a reformat or a vendoring touches everything and says nothing about what belongs together."""
    from kimi_cli.hostsafe.git.workspace import workspace_git  # hardened: no signature check, no diff driver

    out = workspace_git(root, ["log", "-n", str(limit), "--name-only", "--format=@@%ct", "--no-renames"], timeout=30)
    if out is None:
        return []
    commits: list[tuple[int, list[str]]] = []
    for block in out.stdout.decode("utf-8", "replace").split("@@")[1:]:
        lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
        if lines and lines[0].isdigit():
            commits.append((int(lines[0]), lines[1:]))
    return commits


def recent_files(commits: list[tuple[int, list[str]]], limit: int = 40) -> list[str]:
    """Files touched by the last commits, newest first: only when history means something (more than one
    commit, not all at one time): in a fresh clone of a single commit, every file "changed recently"."""
    if len(commits) < 2 or len({t for t, _ in commits}) < 2:
        return []
    seen: dict[str, None] = {}
    for _, files in commits[:limit]:
        if len(files) <= 50:
            for path in files:
                seen.setdefault(path, None)
    return list(seen)


def co_changed(commits: list[tuple[int, list[str]]], seeds: list[str]) -> dict[str, float]:
    """How often each file changed together with the seeds, as a share of the seeds' own changes."""
    seed_set = set(seeds)
    together: dict[str, float] = defaultdict(float)
    for _, files in commits:
        if len(files) > 20 or not seed_set.intersection(files):
            continue
        for path in files:
            if path not in seed_set:
                together[path] += 1.0
    top = max(together.values(), default=0.0)
    return {p: c / top for p, c in together.items()} if top else {}


def test_files_for(path: str, all_paths: list[str]) -> list[str]:
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    if len(stem) < 3:
        return []
    pattern = re.compile(rf"(^|/)(test_{re.escape(stem)}|{re.escape(stem)}_test|{re.escape(stem)}\.(test|spec))\b")
    return [p for p in all_paths if p != path and pattern.search(p)]


SOURCE_EXT = re.compile(
    r"\.(py|pyx|pyi|js|jsx|mjs|cjs|ts|tsx|mts|cts|go|rs|java|kt|c|cc|cpp|h|hpp|rb|php|cs|swift|scala|lua|"
    r"astro|svelte|vue)$"
)
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec|e2e)/|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|conftest\.py)$"
)
# Sample projects a test suite runs against, recorded outputs, demos: in a JS monorepo thousands of small
# files (astro: 2,700 under test/fixtures) that share every word with the source they exercise.
FIXTURE_PATH = re.compile(
    r"(^|/)(fixtures?|__fixtures__|__snapshots__|__mocks__|testdata|test-data|samples?|demos?|playground|"
    r"benchmarks?)/",
    re.I,
)
DOC_PATH = re.compile(r"(^|/)(docs?|doc-src|changelog|changes|newsfragments|examples?)/|\.(md|rst|txt|adoc)$", re.I)
DOC_TASK = re.compile(r"\b(docs?|documentation|readme|changelog|typo|docstring|tutorial|guide)\b", re.I)
CONFIG_TASK = re.compile(r"\b(config|configuration|setup\.py|pyproject|package\.json|ci|workflow|build|lint)\b", re.I)
TEST_TASK = re.compile(r"\b(tests?|testing|fixture|pytest|unittest|spec)\b", re.I)


def kind_weight(path: str, task: str) -> float:
    """Source first, then tests, then docs, config and fixtures, unless the task is about those."""
    if FIXTURE_PATH.search(path):
        return 0.55 if TEST_TASK.search(task) else 0.3
    if TEST_PATH.search(path):
        return 0.75 if TEST_TASK.search(task) else 0.55
    if DOC_PATH.search(path):
        return 0.9 if DOC_TASK.search(task) else 0.3
    if DOC_AND_BUILD.search(path):
        return 0.9 if CONFIG_TASK.search(task) or DOC_TASK.search(task) else 0.35
    if SOURCE_EXT.search(path):
        return 1.0
    return 0.5


def rank_files(
    root: Path,
    task: str,
    facts: dict[str, FileFacts],
    lexical: dict[str, float],
    edges: dict[str, dict[str, float]],
    nodes: list[str],
) -> tuple[list[str], dict[str, str]]:
    """All packable paths in order, and why each of the leading ones is there.

    With a task: a score per file from lexical relevance (`lexical`: task words in the text and path), the
    files the task names, the definitions of its identifiers, the reference graph (`edges` between `nodes`)
    around the best hits, and what changed together with them in history, weighed by the kind of file.
    Without a task: what history and the graph's centrality say. Demoted (generated) files go last.
    """

    demoted = {p for p, f in facts.items() if f.demoted}
    paths = sorted(facts)
    named, _words = task_mentions(task, paths)
    commits = history(root)
    why: dict[str, str] = {}
    order: list[str] = []

    def take(items: list[str], reason: str) -> None:
        for p in items:
            if p in facts and p not in why and p not in demoted:
                why[p] = reason
                order.append(p)

    centrality: dict[str, float] = {}
    definers: list[str] = []
    if nodes:
        code_words = code_identifiers(task)
        owners: dict[str, set[str]] = defaultdict(set)
        for p in nodes:
            for name in facts[p].defs:
                if name in code_words:
                    owners[name].add(p)
        definers = sorted({p for group in owners.values() if len(group) <= 3 for p in group})
        centrality = pagerank(edges, nodes, set(named) | set(definers))

    if task.strip():
        scores = _task_scores(task, facts, lexical, named, definers, edges, commits, demoted)
        ranked = sorted((p for p, v in scores.items() if v > 0), key=lambda p: (-scores[p], p))
        for path in ranked:
            if path in named:
                take([path], "named in the task")
            elif path in definers:
                take([path], "defines a name in the task")
            else:
                take([path], f"relevant to the task (score {scores[path]:.1f})")
        take([t for p in ranked[:10] for t in test_files_for(p, paths)], "tests of the files above")
    take([p for p in recent_files(commits) if p in facts], "changed recently")
    take(sorted(p for p in facts if DOC_AND_BUILD.search(p)), "docs and build config")
    # No task: the project's own source before its tests, docs and the rest, by centrality then size.
    rest = sorted(facts, key=lambda p: (-kind_weight(p, ""), -centrality.get(p, 0.0), facts[p].chars, p))
    take([p for p in rest if centrality.get(p)], "central in the reference graph")
    take(rest, "remaining, source first, smallest first")
    order += sorted(demoted)
    return order, why


CODE_WORD = re.compile(r"`([A-Za-z_][\w.]*)`|\b([A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*))\b|\b([A-Za-z_]\w{2,})\(")


def code_identifiers(task: str) -> set[str]:
    """Names in the task that look like code: `quoted`, snake_case, camelCase, or called()."""
    found: set[str] = set()
    for match in CODE_WORD.finditer(task):
        name = next(g for g in match.groups() if g)
        found.add(name.rsplit(".", 1)[-1])
    return {n for n in found if len(n) >= 3}


def _task_scores(
    task: str,
    facts: dict[str, FileFacts],
    lexical: dict[str, float],
    named: list[str],
    definers: list[str],
    edges: dict[str, dict[str, float]],
    commits: list[tuple[int, list[str]]],
    demoted: set[str],
) -> dict[str, float]:
    """Lexical relevance (0..1, weighed by kind of file), plus bounded boosts from definitions, the graph
    around the best source hits, and co-change with them. No boost can lift a file past a strong hit."""
    top = max(lexical.values(), default=1.0) or 1.0
    base = {p: v / top * kind_weight(p, task) for p, v in lexical.items() if p not in demoted}
    boost: dict[str, float] = defaultdict(float)
    for path in definers:
        boost[path] += 0.5
    seeds = [p for p in sorted(base, key=lambda p: (-base[p], p)) if kind_weight(p, task) >= 1.0][:5]
    reverse: dict[str, dict[str, float]] = defaultdict(dict)
    for a, row in edges.items():
        for b, w in row.items():
            reverse[b][a] = w
    for seed in seeds:
        neighbours = {**reverse.get(seed, {}), **edges.get(seed, {})}
        total = sum(neighbours.values())
        for neighbour, weight in neighbours.items():
            boost[neighbour] += 0.6 * base[seed] * weight / total  # a seed shares out 0.6 of its score
    for path, share in co_changed(commits, seeds[:3]).items():
        boost[path] += 0.2 * share
    scores: dict[str, float] = {}
    for path in set(base) | set(boost):
        if path in facts and path not in demoted:
            scores[path] = base.get(path, 0.0) + min(boost.get(path, 0.0), 0.5) * kind_weight(path, task)
    for path in named:
        scores[path] = scores.get(path, 0.0) + 100.0
    return scores
