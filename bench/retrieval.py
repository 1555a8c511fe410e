"""Retrieval quality of the pack on real bug fixes: does it hold the files the fix changed?

Cases come from any git repository that keeps one changelog fragment per change, in one of three
conventions: towncrier (`changelog/1234.bugfix.rst`, `newsfragments/`), changesets (`.changeset/*.md`
with YAML front matter naming the bumped packages: a fix is a change whose bumps are all `patch` and
whose text says it fixes something) and go-changelog (`.changelog/1234.txt` with a ```release-note:bug
block). A case is a commit that adds one such fragment and changes 1-3 source files; the fragment is the
maintainer's own words for the bug (front matter stripped). For each case the parent commit is checked
out (a git worktree, so history is there) and packed with the fragment as the task: recall_full counts
the changed source files the pack holds in full, recall_any in full or as an outline. The baseline is
BM25 over the same files and text, filling the same budget with whole files.

Cases are taken newest first. `--skip N` leaves out the N newest, so a ranking change can be tuned on
one split (the newest cases, "dev") and checked on another it never saw (`--skip` the dev cases: "held
out"). `--details FILE` writes, per case, where each changed file landed, for looking into misses.

Usage: python3 bench/retrieval.py REPO [--cases 30] [--skip 0] [--budgets 32000,100000,default]
Nothing here knows any repository: cases are found by the rules above.
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

CODE = re.compile(r"\.(py|pyx|js|jsx|mjs|cjs|ts|tsx|mts|cts|go|rs|java|c|cc|cpp|h|hpp|rb|php|cs|kt|swift|scala)$")
NOT_SOURCE = re.compile(
    r"(^|/)(tests?|testing|__tests__|e2e|fixtures?|docs?|changelog|newsfragments|examples?|benchmarks?)/"
    r"|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$"
)
FRAGMENT = re.compile(r"(^|/)(changelog|changelog\.d|newsfragments|news|changes)/[^/]*\bbugfix\b[^/]*$", re.I)
CHANGESET = re.compile(r"(^|/)\.changeset/(?!README)[^/]+\.md$", re.I)
GO_CHANGELOG = re.compile(r"(^|/)\.changelog/[^/]+\.txt$")
BUMP = re.compile(r"""^\s*['"]?[^'":]+['"]?\s*:\s*(patch|minor|major)\s*$""")
FIXES = re.compile(r"\bfix", re.I)
RELEASE_NOTE = re.compile(r"```release-note:(\w+)\n(.*?)```", re.S)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
DEFAULT_BUDGET = 629_145


@dataclass
class Case:
    commit: str
    parent: str
    task: str
    files: list[str]


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, input=stdin).stdout


def fix_text(path: str, text: str) -> str | None:
    """The fragment's words for a bug fix, or None when the fragment is not about one."""
    if FRAGMENT.search(path):
        return text.strip()
    if CHANGESET.search(path):
        match = re.match(r"\s*---\n(.*?)\n---\n?(.*)", text, re.S)
        if not match:
            return None
        bumps = [BUMP.match(line) for line in match.group(1).splitlines() if line.strip()]
        body = match.group(2).strip()
        if not bumps or any(b is None or b.group(1) != "patch" for b in bumps) or not FIXES.search(body):
            return None
        return body
    if GO_CHANGELOG.search(path):
        notes = RELEASE_NOTE.findall(text)
        if notes and all(kind == "bug" for kind, _ in notes):
            return "\n".join(note.strip() for _, note in notes)
    return None


def find_cases(repo: Path, limit: int, skip: int = 0) -> list[Case]:
    out = git(repo, "log", "--first-parent", "-m", "--format=@@%H %P", "--name-status", "--no-renames", "-n", "6000")
    cases: list[Case] = []
    found = 0
    for block in out.split("@@")[1:]:
        lines = block.strip().splitlines()
        commit, *parents = lines[0].split()
        if not parents:
            continue
        added = [ln.split("\t", 1)[1] for ln in lines[1:] if ln.startswith("A\t")]
        changed = [ln.split("\t", 1)[1] for ln in lines[1:] if "\t" in ln and not ln.startswith("D\t")]
        fragments = [p for p in added if FRAGMENT.search(p) or CHANGESET.search(p) or GO_CHANGELOG.search(p)]
        source = [p for p in changed if CODE.search(p) and not NOT_SOURCE.search(p)]
        if len(fragments) != 1 or not 1 <= len(source) <= 3:
            continue
        task = fix_text(fragments[0], git(repo, "show", f"{commit}:{fragments[0]}"))
        if not task:
            continue
        found += 1
        if found > skip:
            cases.append(Case(commit, parents[0], task, source))
        if len(cases) >= limit:
            break
    return cases


def checkout(repo: Path, work: Path, commit: str) -> None:
    """A worktree at `commit`. A mirror may lack its largest blobs: those files are left out, not fatal."""
    git(repo, "worktree", "add", "-q", "--no-checkout", "--detach", str(work), commit)
    git(work, "read-tree", "HEAD")
    # checkout-index writes every file it can read and reports the others (exit 1): those stay absent.
    subprocess.run(["git", "checkout-index", "--all", "--force"], cwd=work, capture_output=True)


def tokenize(text: str) -> list[str]:
    out = []
    for word in WORD.findall(text):
        out.append(word.lower())
        out += [p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word) if len(p) > 2]
    return out


def bm25_order(work: Path, task: str) -> tuple[list[str], dict[str, int]]:
    """Plain BM25 over the tracked text files: paths best first, and each file's size in tokens."""
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
    return sorted(scores, key=lambda p: (-scores[p], p)), sizes


def bm25_fill(order: list[str], sizes: dict[str, int], budget: int) -> set[str]:
    """Whole files in score order until the budget is spent."""
    picked, used = set(), 0
    for path in order:
        if used + sizes[path] <= budget:
            picked.add(path)
            used += sizes[path]
    return picked


def kimi_pick(work: Path, task: str, budget: int | None, home: Path) -> dict[str, dict[str, str]]:
    args = [kimi_bin(), "pack", "-t", task, "-f", "json"] + (["-b", str(budget)] if budget else [])
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(home / "cache")}
    out = subprocess.run(args, cwd=work, capture_output=True, text=True, check=True, env=env)
    return {e["path"]: {"mode": e["mode"], "reason": e["reason"]} for e in json.loads(out.stdout)["files"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo", type=Path)
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--skip", type=int, default=0, help="leave out this many newest cases (the dev split)")
    parser.add_argument("--budgets", default="32000,100000,default")
    parser.add_argument("--details", type=Path, help="write where each changed file landed, per case (JSON)")
    args = parser.parse_args()
    budgets = [None if b == "default" else int(b) for b in args.budgets.split(",")]
    cases = find_cases(args.repo, args.cases, args.skip)
    print(f"{len(cases)} cases from {args.repo.name}", file=sys.stderr)
    sums = {b: {"full": 0.0, "any": 0.0, "bm25": 0.0} for b in budgets}
    details = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        for n, case in enumerate(cases):
            work = Path(tmp) / f"case{n}"
            checkout(args.repo, work, case.parent)
            target = set(case.files)
            row: dict[str, object] = {"commit": case.commit, "files": case.files, "task": case.task[:300]}
            try:
                order, sizes = bm25_order(work, case.task)
                row["bm25_rank"] = {p: order.index(p) if p in order else None for p in case.files}
                for budget in budgets:
                    got = kimi_pick(work, case.task, budget, home)
                    full = {p for p, e in got.items() if e["mode"] == "full"}
                    anything = full | {p for p, e in got.items() if e["mode"] == "outline"}
                    sums[budget]["full"] += len(target & full) / len(target)
                    sums[budget]["any"] += len(target & anything) / len(target)
                    bm25 = bm25_fill(order, sizes, budget or DEFAULT_BUDGET)
                    sums[budget]["bm25"] += len(target & bm25) / len(target)
                    row[str(budget or "default")] = {p: got.get(p, {"mode": "absent"}) for p in case.files}
                    row[f"bm25 {budget or 'default'}"] = sorted(target & bm25)
            finally:
                git(args.repo, "worktree", "remove", "--force", str(work))
            details.append(row)
            print(f"  case {n + 1}/{len(cases)} done", file=sys.stderr)
    if args.details:
        args.details.write_text(json.dumps(details, indent=1))
    rows = []
    for budget in budgets:
        s = sums[budget]
        k = len(cases) or 1
        rows.append([f"{budget:,}" if budget else "default (629k)", f"{s['full'] / k:.2f}", f"{s['any'] / k:.2f}",
                     f"{s['bm25'] / k:.2f}"])  # fmt: skip
    print(table(["budget (tokens)", "kimi recall_full", "kimi recall_any", "BM25 recall"], rows))
    skipped = f", after the {args.skip} newest" if args.skip else ""
    print(f"\n{len(cases)} cases from {args.repo.name}{skipped}: fix commits with one fix fragment, 1-3 source files.")


if __name__ == "__main__":
    main()
