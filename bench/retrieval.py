"""Retrieval quality of the pack on real bug fixes: does it hold the files the fix changed?

Cases come from any git repository with towncrier-style changelog fragments (`changelog/` or
`newsfragments/`, e.g. `changelog/1234.bugfix.rst`): a commit that adds a bugfix fragment and changes 1-3
source files. The fragment is the maintainer's own words for the bug. For each case the parent commit is
checked out (a git worktree, so history is there) and packed with the fragment as the task:
recall_full counts the changed source files the pack holds in full, recall_any in full or as an outline.
The baseline is BM25 over the same files and text, filling the same budget with whole files.

Usage: python3 bench/retrieval.py REPO [--cases 30] [--budgets 32000,100000,default]
Nothing here knows any repository: cases are found by the rule above.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from common import kimi_bin, table

CODE = re.compile(r"\.(py|pyx|js|jsx|ts|tsx|go|rs|java|c|cc|cpp|h|hpp|rb|php|cs|kt|swift|scala)$")
NOT_SOURCE = re.compile(
    r"(^|/)(tests?|testing|docs?|changelog|newsfragments|examples?|benchmarks?)/|(^|/)test_[^/]*$|_test\.\w+$"
)
FRAGMENT = re.compile(r"(^|/)(changelog|changelog\.d|newsfragments|news|changes)/[^/]*\bbugfix\b[^/]*$", re.I)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


@dataclass
class Case:
    commit: str
    parent: str
    task: str
    files: list[str]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def find_cases(repo: Path, limit: int) -> list[Case]:
    out = git(repo, "log", "--first-parent", "-m", "--format=@@%H %P", "--name-status", "--no-renames", "-n", "4000")
    cases: list[Case] = []
    for block in out.split("@@")[1:]:
        lines = block.strip().splitlines()
        commit, *parents = lines[0].split()
        if not parents:
            continue
        added = [ln.split("\t", 1)[1] for ln in lines[1:] if ln.startswith("A\t")]
        changed = [ln.split("\t", 1)[1] for ln in lines[1:] if "\t" in ln and not ln.startswith("D\t")]
        fragments = [p for p in added if FRAGMENT.search(p)]
        source = [p for p in changed if CODE.search(p) and not NOT_SOURCE.search(p)]
        if len(fragments) != 1 or not 1 <= len(source) <= 3:
            continue
        task = git(repo, "show", f"{commit}:{fragments[0]}").strip()
        cases.append(Case(commit, parents[0], task, source))
        if len(cases) >= limit:
            break
    return cases


def tokenize(text: str) -> list[str]:
    out = []
    for word in WORD.findall(text):
        out.append(word.lower())
        out += [p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word) if len(p) > 2]
    return out


def bm25_pick(work: Path, task: str, budget: int) -> set[str]:
    """Plain BM25 over the tracked text files, then whole files in score order until the budget is spent."""
    files = [p for p in git(work, "ls-files").splitlines() if (work / p).is_file()]
    docs: dict[str, Counter[str]] = {}
    sizes: dict[str, int] = {}
    for path in files:
        try:
            text = (work / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        docs[path] = Counter(tokenize(path + " " + text))
        sizes[path] = max(1, len(text) // 4)  # ~4 characters a token, the baseline's own estimate
    query = set(tokenize(task))
    n = len(docs)
    avg = sum(sum(c.values()) for c in docs.values()) / max(1, n)
    df = Counter(t for c in docs.values() for t in query if t in c)
    scores = {}
    for path, counts in docs.items():
        length = sum(counts.values())
        score = 0.0
        for term in query:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
        scores[path] = score
    picked, used = set(), 0
    for path in sorted(scores, key=lambda p: (-scores[p], p)):
        if used + sizes[path] <= budget:
            picked.add(path)
            used += sizes[path]
    return picked


def kimi_pick(work: Path, task: str, budget: int | None, home: Path) -> tuple[set[str], set[str]]:
    args = [kimi_bin(), "pack", "-t", task, "-f", "json"] + (["-b", str(budget)] if budget else [])
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(home / "cache")}
    out = subprocess.run(args, cwd=work, capture_output=True, text=True, check=True, env=env)
    entries = json.loads(out.stdout)["files"]
    full = {e["path"] for e in entries if e["mode"] == "full"}
    return full, full | {e["path"] for e in entries if e["mode"] == "outline"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo", type=Path)
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--budgets", default="32000,100000,default")
    args = parser.parse_args()
    budgets = [None if b == "default" else int(b) for b in args.budgets.split(",")]
    cases = find_cases(args.repo, args.cases)
    print(f"{len(cases)} cases from {args.repo.name}", file=sys.stderr)
    sums = {b: {"full": 0.0, "any": 0.0, "bm25": 0.0} for b in budgets}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        for n, case in enumerate(cases):
            work = Path(tmp) / f"case{n}"
            git(args.repo, "worktree", "add", "-q", "--detach", str(work), case.parent)
            try:
                for budget in budgets:
                    full, anything = kimi_pick(work, case.task, budget, home)
                    target = set(case.files)
                    sums[budget]["full"] += len(target & full) / len(target)
                    sums[budget]["any"] += len(target & anything) / len(target)
                    bm25 = bm25_pick(work, case.task, budget or 629_145)
                    sums[budget]["bm25"] += len(target & bm25) / len(target)
            finally:
                git(args.repo, "worktree", "remove", "--force", str(work))
            print(f"  case {n + 1}/{len(cases)} done", file=sys.stderr)
    rows = []
    for budget in budgets:
        s = sums[budget]
        k = len(cases) or 1
        rows.append([f"{budget:,}" if budget else "default (629k)", f"{s['full'] / k:.2f}", f"{s['any'] / k:.2f}",
                     f"{s['bm25'] / k:.2f}"])  # fmt: skip
    print(table(["budget (tokens)", "kimi recall_full", "kimi recall_any", "BM25 recall"], rows))
    print(f"\n{len(cases)} cases from {args.repo.name}: fix commits with one bugfix fragment and 1-3 source files.")


if __name__ == "__main__":
    main()
