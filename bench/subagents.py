"""Four subagents against a server that answers each request after 0.5 s take about as long as one.

Whole `kimi -p` processes; the scripted server (its own process) delays every answer by 0.5 s, and each
subagent makes two requests. Target: 4 subagents <= 1.5x the time of 1.
Usage: python3 bench/subagents.py [RUNS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import kimi_bin, median, scripted_server, stop, table

DELAY = 0.5


def script(n: int) -> list[dict]:
    calls = [{"id": f"ag{i}", "name": "Agent", "arguments": {"task": f"look at part {i}", "kind": "explore"}}
             for i in range(n)]  # fmt: skip
    entries: list[dict] = [{"match": "survey", "tool_calls": calls}]
    for i in range(n):
        entries += [
            {"match": f"look at part {i}", "hang": DELAY,
             "tool_calls": [{"id": f"g{i}", "name": "Glob", "arguments": {"pattern": "*.py"}}]},
            {"match": f"look at part {i}", "hang": DELAY, "text": f"part {i} looked at"},
        ]  # fmt: skip
    entries.append({"match": "survey", "text": "done"})
    return entries


def one_run(work: Path, n: int) -> float:
    server, base = scripted_server(work, script(n))
    env = {**os.environ, "HOME": str(work / "home"), "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": base,
           "KIMI_API_KEY": "bench-key"}  # fmt: skip
    started = time.perf_counter()
    subprocess.run([kimi_bin(), "-p", "survey the parts", "--no-pack"], cwd=work / "repo", env=env, check=True,
                   capture_output=True)  # fmt: skip
    wall = time.perf_counter() - started
    stop(server)
    return wall


def main(runs: int = 3) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        (work / "repo").mkdir()
        subprocess.run(["git", "init", "-q"], cwd=work / "repo", check=True)
        one = median([one_run(work, 1) for _ in range(runs)])
        four = median([one_run(work, 4) for _ in range(runs)])
    rows = [["1 subagent", f"{one:.2f} s", "1.00x"], ["4 subagents", f"{four:.2f} s", f"{four / one:.2f}x"]]
    return table(["`kimi -p` with explore subagents (0.5 s per answer)", f"median of {runs}", "ratio"], rows)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
