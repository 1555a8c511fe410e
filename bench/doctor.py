"""`kimi doctor` as a whole process, wall and CPU (user + sys of the process and its children), against the
scripted server on loopback (so the endpoint check answers), beside `python -c pass`; optionally A/B against an
older tree (`--before PATH`: a `git worktree` of an earlier commit, run as `python -m kimi_cli` from it).
Rounds alternate between the trees so a load change hits both. Issue 46: doctor <= 3 s.

    python3 bench/doctor.py 5 [--before /tmp/kimi-before]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median, table

ROOT = Path(__file__).resolve().parent.parent


def run_once(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one process and its children."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    assert os.waitstatus_to_exitcode(status) == 0, err
    return wall, usage.ru_utime + usage.ru_stime


def main(runs: int, before: str | None) -> str:
    sys.path.insert(0, str(ROOT / "tests"))
    from scripted_server import ScriptedModelServer

    trees = {"HEAD": str(ROOT)}
    if before:
        trees["before"] = before
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    base: list[tuple[float, float]] = []
    with ScriptedModelServer(model="kimi-k3.1-pro") as server, tempfile.TemporaryDirectory() as folder:
        subprocess.run(["git", "init", "-q", folder], check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update({"KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": "sk-bench"})
        for i in range(runs + 1):  # round 0 warms the caches (bytecode, the window learned)
            base_time = run_once([sys.executable, "-c", "pass"], folder, env)
            for name, tree in trees.items():
                timed = run_once([sys.executable, "-m", "kimi_cli", "doctor"], folder, {**env, "PYTHONPATH": tree})
                if i:
                    results[name].append(timed)
            if i:
                base.append(base_time)
    pass_wall = median([w for w, _ in base])
    pass_cpu = median([c for _, c in base])
    rows = [["`python -c pass`", f"{pass_wall * 1000:.0f} ms", f"{pass_cpu * 1000:.0f} ms", "1.00x"]]
    for name, times in results.items():
        wall, cpu = median([w for w, _ in times]), median([c for _, c in times])
        ratio = f"{wall / pass_wall:.2f}x"
        rows.append([f"`kimi doctor` ({name})", f"{wall * 1000:.0f} ms", f"{cpu * 1000:.0f} ms", ratio])
    load = os.getloadavg()[0]
    return table(["command", f"wall, median of {runs}", "CPU, median", "wall ratio to python -c pass"], rows) + (
        f"\nload average at the end: {load:.1f}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    before = args[args.index("--before") + 1] if "--before" in args else None
    print(main(int(args[0]) if args and args[0].isdigit() else 5, before))
