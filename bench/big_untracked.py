"""A file-changing step beside a 300 MB untracked log costs no more than without it (issue 20).

Whole `kimi -p` processes, each one WriteFile step against the scripted server, in two copies of a
small repository: one with a 300 MB untracked log (ignored by nothing), one without. Reports the median
wall time of each, the difference, and kimi's peak RSS beside the log.
Usage: python3 bench/big_untracked.py [RUNS]
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, commit_all, kimi_bin, median, table

PEAK = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, st, ru = os.wait4(p.pid, 0)\nprint(ru.ru_maxrss)\n"
)


def make_repo(path: Path, big: bool) -> None:
    path.mkdir(parents=True)
    for i in range(200):
        (path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    commit_all(path, "init")
    if big:
        subprocess.run(f"yes 'INFO request served in 12 ms' | head -c 300000000 > {path / 'huge.log'}",
                       shell=True, check=True)  # fmt: skip


def run_once(work: Path, repo: Path, tag: str) -> tuple[float, int]:
    script = work / f"script-{tag}.json"
    call = {"id": "w", "name": "WriteFile", "arguments": {"path": f"note-{tag}.txt", "content": tag}}
    script.write_text(json.dumps([{"tool_calls": [call]}, {"text": "done"}]))
    port = work / f"port-{tag}"
    port.unlink(missing_ok=True)
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "scripted_server.py"), str(script),
                               "--port-file", str(port)])  # fmt: skip
    while not port.exists() or not port.read_text():
        time.sleep(0.01)
    env = {**os.environ, "HOME": str(work / "home"), "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": port.read_text(),
           "KIMI_API_KEY": "bench-key"}  # fmt: skip
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", PEAK, kimi_bin(), "-p", "note", "--no-pack"], cwd=repo, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    wall = time.perf_counter() - started
    server.send_signal(signal.SIGTERM)
    server.wait()
    (repo / f"note-{tag}.txt").unlink(missing_ok=True)
    return wall, int(out.stdout.strip())


def main(runs: int = 5) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        plain, big = work / "plain", work / "big"
        make_repo(plain, False)
        make_repo(big, True)
        walls: dict[str, list[float]] = {"plain": [], "big": []}
        peaks: list[int] = []
        for i in range(runs):
            walls["plain"].append(run_once(work, plain, f"p{i}")[0])
            wall, peak = run_once(work, big, f"b{i}")
            walls["big"].append(wall)
            peaks.append(peak)
    p, b = median(walls["plain"]), median(walls["big"])
    rows = [
        ["without the log", f"{p * 1000:.0f} ms", "1.00x"],
        ["beside a 300 MB untracked log", f"{b * 1000:.0f} ms", f"{b / p:.2f}x"],
    ]
    note = (
        f"\nDifference: {(b - p) * 1000:+.0f} ms (target <= +50 ms). "
        f"Peak RSS beside the log: {median(peaks) / 1024:.0f} MB (target <= 250 MB). Medians of {runs} runs."
    )
    return table(["`kimi -p` with one WriteFile step", "median wall", "ratio"], rows) + note


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
