"""Checkpoint cost on a 5,000-file repository: cold, after a one-file change, and `kimi undo 1`.

Compared with `git stash create` on the same repository (what a plain-git snapshot costs).
Targets: incremental <= 50 ms; `kimi undo` of one step <= 200 ms (whole process).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, commit_all, kimi_bin, median, table, time_calls, time_process

sys.path.insert(0, str(ROOT))
FILES = 5000


def make_repo(root: Path) -> None:
    root.mkdir()
    for i in range(FILES):
        folder = root / f"pkg{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i % 100:03d}.py").write_text(f"# module {i}\n" + "def f(x):\n    return x * 2\n" * 40)
    commit_all(root, "init")


def main(runs: int = 7) -> str:
    from kimi_cli.session.store import Session
    from kimi_cli.session.undo.checkpointer import SessionCheckpointer
    from kimi_cli.session.undo.shadow import ShadowRepo

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "repo"
        make_repo(repo)
        target = repo / "pkg00" / "mod000.py"
        cold = []
        for i in range(runs):
            shadow = ShadowRepo(repo, base / f"cold{i}")
            started = time.perf_counter()
            shadow.snapshot()
            cold.append(time.perf_counter() - started)
        shadow = ShadowRepo(repo, base / "home" / ".kimi")
        shadow.snapshot()
        counter = iter(range(10_000))

        def one_change() -> None:
            target.write_text(f"changed {next(counter)}\n")
            shadow.snapshot()

        incremental = time_calls(one_change, runs)
        stash = []
        for _ in range(runs):
            target.write_text(f"changed {next(counter)}\n")
            stash.append(median(time_process(["git", "stash", "create"], 1, warmup=0, cwd=repo)))
        env = {**os.environ, "HOME": str(base / "home")}
        os.environ["HOME"] = str(base / "home")
        undo = []
        for _ in range(runs):
            session = Session.create(repo, "bench", "m")
            cp = SessionCheckpointer(shadow, session)
            import asyncio

            asyncio.run(cp.snapshot("before", 1, 1, ["WriteFile"]))
            target.write_text(f"changed {next(counter)}\n")
            asyncio.run(cp.snapshot("after", 1, 2, ["WriteFile"]))
            session.close()
            undo += time_process(
                [kimi_bin(), "undo", "1", "--yes", "--session", session.id], 1, warmup=0, cwd=repo, env=env
            )
    git_stash = median(stash)
    rows = [
        ["`git stash create` after a one-file change", f"{git_stash * 1000:.0f} ms", "1.00x"],
        [
            "checkpoint, cold (new shadow repo, hashes every file)",
            f"{median(cold) * 1000:.0f} ms",
            f"{median(cold) / git_stash:.2f}x",
        ],
        [
            "checkpoint, incremental (one file changed)",
            f"{median(incremental) * 1000:.0f} ms",
            f"{median(incremental) / git_stash:.2f}x",
        ],
        ["`kimi undo 1 --yes` (whole process)", f"{median(undo) * 1000:.0f} ms", f"{median(undo) / git_stash:.2f}x"],
    ]
    return table([f"{FILES}-file repository", f"median of {runs}", "ratio to git stash create"], rows)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 7))
