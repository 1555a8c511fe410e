"""Best of three (`kimi -p --attempts 3 --check CMD`) against one attempt (`kimi -p --check CMD`), whole processes.

The scripted server (its own process) answers each request after 0.5 s; each attempt makes two requests (an
edit, then its answer) and ends with the check (pytest on one test, in its sandbox). Only the second attempt
turns the test green. Target (issue 43): three attempts <= 1.5x the wall time of one, on 2 cores.
Usage: python3 bench/attempts.py [RUNS]   (unset PYTHONDONTWRITEBYTECODE first, as for every kimi timing)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import commit_all, kimi_bin, median, scripted_server, stop, table

DELAY = 0.5
CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
FIXES = {1: "return a * b", 2: "return a + b", 3: "return b - a"}


def script(n: int) -> list[dict]:
    entries: list[dict] = []
    for k in range(1, n + 1):
        edit = {"path": "calc.py", "edit": {"old": "return a - b", "new": FIXES[2 if n == 1 else k]}}
        match = {"match": f"attempt {k} of {n}"} if n > 1 else {}
        entries += [
            {**match, "hang": DELAY, "tool_calls": [{"id": f"e{k}", "name": "StrReplaceFile", "arguments": edit}]},
            {**match, "hang": DELAY, "text": f"attempt {k} done"},
        ]
    return entries


def make_repo(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    worktrees = root.parent / f"{root.name}.worktrees"
    if worktrees.exists():
        shutil.rmtree(worktrees)
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    commit_all(root, "red")


def one_run(work: Path, n: int) -> float:
    make_repo(work / "repo")
    server, base = scripted_server(work, script(n))
    env = {**os.environ, "HOME": str(work / "home"), "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": base,
           "KIMI_API_KEY": "bench-key"}  # fmt: skip
    args = [kimi_bin(), "-p", "make test_add pass", "--check", CHECK, "--yolo", "--no-pack", "--output-format", "json"]
    if n > 1:
        args += ["--attempts", str(n)]
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=work / "repo", env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    stop(server)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0 and (n == 1 or result["chosen"] == 2), proc.stderr[-2000:]
    return wall


def main(runs: int = 3) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        ones, threes = [], []
        for _ in range(runs):  # alternating, so that load on the machine falls on both alike
            ones.append(one_run(work, 1))
            threes.append(one_run(work, 3))
    one, three = median(ones), median(threes)
    rows = [
        ["one attempt (`-p --check`)", f"{one:.2f} s", " ".join(f"{t:.2f}" for t in ones), "1.00x"],
        [
            "best of three (`--attempts 3`)",
            f"{three:.2f} s",
            " ".join(f"{t:.2f}" for t in threes),
            f"{three / one:.2f}x",
        ],
    ]
    return table([f"0.5 s per answer, pytest check (cores: {os.cpu_count()})", f"median of {runs}", "runs", "ratio"],
                 rows)  # fmt: skip


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
