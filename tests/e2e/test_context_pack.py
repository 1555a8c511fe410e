"""The repository packer on real temporary repositories: ignore rules, bad files, budgets, determinism."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from kimi_cli.context.packer import RepoPacker
from kimi_cli.context.tags import extract_definitions
from kimi_cli.context.tokens import TokenCounter

from support import git, run_kimi


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def modes(root: Path, budget: int = 100_000, task: str = "") -> dict[str, tuple[str, str]]:
    pack = RepoPacker(root).pack(task, budget, use_cache=False)
    return {e.path: (e.mode, e.reason) for e in pack.entries}


def make_module(i: int, lines: int = 120) -> str:
    body = "\n".join(f"    value_{i}_{n} = compute_{i}(x, {n})" for n in range(lines))
    tail = f"class Thing{i}:\n    def run(self):\n        return helper_{i}(1)\n"
    return f"def helper_{i}(x):\n{body}\n    return x\n\n\n{tail}"


def test_ignore_rules_git_exclude_and_kimiignore(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("x = 1\n")
    (repo / ".git" / "info" / "exclude").write_text("secret.txt\n")
    (repo / "secret.txt").write_text("s\n")
    (repo / ".kimiignore").write_text("fixtures/\n")
    (repo / "fixtures").mkdir()
    (repo / "fixtures" / "big.json").write_text("{}\n")
    (repo / "new_untracked.py").write_text("y = 2\n")
    got = modes(repo)
    assert "new_untracked.py" in got and "calc.py" in got
    assert not any(p.startswith(("build/", "fixtures/")) or p == "secret.txt" for p in got)


def test_bad_files_are_listed_with_reasons(repo: Path) -> None:
    (repo / "blob.bin").write_bytes(b"\x00\x01" * 100)
    (repo / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with (repo / "huge.txt").open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    (repo / "package-lock.json").write_text("{}\n")
    (repo / "loop_a").symlink_to(repo / "loop_b")
    (repo / "loop_b").symlink_to(repo / "loop_a")
    got = modes(repo)
    assert got["blob.bin"] == ("skipped", "binary")
    assert got["latin.txt"] == ("skipped", "not-utf8")
    assert got["huge.txt"] == ("skipped", "too-large")
    assert got["package-lock.json"] == ("skipped", "lock-file")
    assert got["loop_a"] == ("skipped", "symlink")
    assert got["calc.py"][0] == "full"


def test_non_git_directory_walks_with_nested_gitignore(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "src" / "gen").mkdir(parents=True)
    (root / "src" / ".gitignore").write_text("gen/\n")
    (root / "src" / "gen" / "x.py").write_text("g = 1\n")
    (root / "src" / "main.py").write_text("m = 1\n")
    (root / "loop").symlink_to(root)
    (root / bytes.fromhex("6e61c3a96d652e7079").decode()).write_text("n = 1\n")
    os.symlink("missing-target", root / "dangling")
    got = modes(root)
    assert "src/main.py" in got and "src/gen/x.py" not in got
    assert got["loop"] == ("skipped", "symlink")


def test_empty_repository_packs_to_an_empty_tree(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q")
    pack = RepoPacker(root).pack("", 10_000, use_cache=False)
    assert pack.entries == [] and re.match(r'<repository-\w+ name="empty" files="0">', pack.text)


def many_modules(repo: Path, count: int = 40) -> None:
    (repo / "pkg").mkdir()
    for i in range(count):
        (repo / "pkg" / f"module_{i:02d}.py").write_text(make_module(i))
    (repo / "tests").mkdir()
    (repo / "tests" / "test_module_17.py").write_text("from pkg.module_17 import helper_17\n")


def test_over_budget_keeps_named_files_in_full_and_outlines_others(repo: Path) -> None:
    many_modules(repo, 70)
    pack = RepoPacker(repo).pack("helper_17 in pkg/module_17.py is wrong", 12_000, use_cache=False)
    by_path = {e.path: e for e in pack.entries}
    assert by_path["pkg/module_17.py"].mode == "full"
    assert by_path["pkg/module_17.py"].reason == "named in the task"
    assert by_path["tests/test_module_17.py"].mode == "full"
    assert {"full", "outline", "listed"} <= {e.mode for e in pack.entries}
    assert TokenCounter().count(pack.text) <= 12_000
    assert all(f"module_{i:02d}.py" in pack.text for i in range(70))  # every file at least in the tree
    outline = next(e.path for e in pack.entries if e.mode == "outline")
    assert re.search(rf'<outline-\w+ path="{re.escape(outline)}">', pack.text)


def test_two_packs_of_the_same_tree_are_byte_identical(repo: Path) -> None:
    many_modules(repo)
    first = RepoPacker(repo).pack("fix helper_3", 20_000, use_cache=False).text
    second = RepoPacker(repo).pack("fix helper_3", 20_000, use_cache=False).text
    cached = RepoPacker(repo).pack("fix helper_3", 20_000).text
    cached_again = RepoPacker(repo).pack("fix helper_3", 20_000).text
    assert first == second == cached == cached_again


def test_refresh_after_an_edit_matches_a_cold_pack(repo: Path) -> None:
    many_modules(repo)
    packer = RepoPacker(repo)
    packer.pack("", 20_000)
    target = repo / "pkg" / "module_05.py"
    target.write_text(target.read_text() + "\n# edited\n")
    refreshed = packer.pack("", 20_000, persist=False)
    cold = RepoPacker(repo).pack("", 20_000, use_cache=False)
    if {e.path: e.mode for e in refreshed.entries} == {e.path: e.mode for e in cold.entries}:
        assert refreshed.text == cold.text
    assert ("# edited" in refreshed.text) == (
        dict((e.path, e.mode) for e in refreshed.entries)["pkg/module_05.py"] == "full"
    )


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        ("a.py", "class A:\n    def f(self): pass\n", ["A", "f"]),
        ("a.js", "function g() {}\nclass B { m() {} }\nconst h = () => 1\n", ["g", "B", "m", "h"]),
        ("a.ts", "interface I {}\nfunction t(): void {}\n", ["I", "t"]),
        ("a.go", "package p\nfunc F() {}\ntype S struct{}\n", ["F", "S"]),
        ("a.rs", "fn r() {}\nstruct R {}\n", ["r", "R"]),
        ("A.java", "class J { void m() {} }\n", ["J", "m"]),
        ("a.c", "int c(void) { return 0; }\n", ["c"]),
        ("a.cpp", "namespace n { int f() { return 1; } }\n", ["n", "f"]),
    ],
)
def test_definitions_in_each_language(name: str, source: str, expected: list[str]) -> None:
    defs = extract_definitions(name, source)
    assert defs is not None and [d.name for d in defs] == expected


def test_token_counter_handles_more_than_a_million_characters() -> None:
    counter = TokenCounter()
    line = "def f(x): return x * 2\n"
    text = line * 100_000  # 2.3M characters: the tokenizer alone refuses over 1M
    assert len(text) > 2_000_000
    assert abs(counter.raw(text) - 100_000 * counter.raw(line)) <= 10


def test_kimi_pack_command_formats(repo: Path, env: dict) -> None:
    many_modules(repo, 10)
    stats = run_kimi(["pack", "--budget", "8000"], repo, env)
    assert stats.returncode == 0, stats.stderr
    assert "in full" in stats.stdout and "outline only" in stats.stdout
    as_json = run_kimi(["pack", "--budget", "8000", "--format", "json"], repo, env)
    data = json.loads(as_json.stdout)
    assert data["tokens"] <= 8000 and data["counts"]["full"] >= 1
    out = repo / "pack.txt"
    text = run_kimi(["pack", "--budget", "8000", "--format", "text", "-o", str(out)], repo, env)
    assert text.returncode == 0 and out.read_text().startswith("<repository")
    bad = run_kimi(["pack", "--format", "xml"], repo, env)
    assert bad.returncode == 2


def test_pack_is_fast_to_import_lazily() -> None:
    code = "import sys, kimi_cli.cli.main; print('tree_sitter' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run(["python3", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_outlines_are_parsed_in_rank_order_and_stop_when_their_share_is_spent(repo: Path, tmp_path: Path) -> None:
    import sqlite3

    from kimi_cli.context.packer import OUTLINE_SHARE

    many_modules(repo, 300)
    packer = RepoPacker(repo)
    pack = packer.pack("", 20_000, use_cache=False)
    state = next(iter(packer._memory.values()))
    full = [p for p in state.order if state.modes.get(p) == "full"]
    outlined = [p for p in state.order if state.modes.get(p) == "outline"]
    assert full and outlined
    assert sum(state.costs[p] for p in full) <= state.room * (1 - OUTLINE_SHARE)  # the outline share is kept
    assert sum(state.costs.values()) <= state.room and pack.tokens <= 20_000
    # Outlines follow the rank order: the first file left out in full is the first one outlined.
    rest = [p for p in state.order if p not in full and p.endswith(".py") and not p.startswith("tests/")]
    assert outlined[0] == rest[0]
    # Only the files that can be used were parsed: a batch ahead of the last outline, not all 300 modules.
    with sqlite3.connect(tmp_path / "cache" / "kimi" / "tags.sqlite") as db:
        parsed = db.execute("select count(*) from tags").fetchone()[0]
    assert len(outlined) <= parsed < 300
    again = RepoPacker(repo).pack("", 20_000, use_cache=False)
    assert again.text == pack.text  # still deterministic


def test_a_cold_pack_holds_no_file_text_after_counting_it(tmp_path: Path) -> None:
    """18 MB of source, a 10k budget: the peak of Python allocations stays far below the repository's size
    (the scan keeps facts, not texts; later stages read again only what they use)."""
    import tracemalloc

    root = tmp_path / "big"
    root.mkdir()
    line = "The cache entry is written before the lock is taken, which is the bug we keep seeing.\n"
    for i in range(150):
        (root / f"notes_{i:03d}.md").write_text(f"# Notes {i}\n" + line * 1400)
    total = sum(p.stat().st_size for p in root.iterdir())
    assert total > 18_000_000
    tracemalloc.start()
    try:
        pack = RepoPacker(root).pack("the cache lock bug", 10_000, use_cache=False, persist=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert pack.tokens <= 10_000 and len(pack.by_mode("listed")) == 150  # none fits: 30k tokens each
    assert peak < total / 4, f"peak {peak:,} bytes for {total:,} bytes of text"
