"""A 20-step headless run in the packed Flask 3.1.3 sdist (issue 47): kimi's default transport (`direct`, the
standard library's HTTP/1.1) against the same kimi with `KIMI_TRANSPORT=httpx`, alternating run by run against
tests/scripted_server.py (20 ReadFile steps of Flask's own modules, then an answer).

Per run: the whole process's wall seconds, CPU seconds (user + system with the children it waited for, wait4),
peak RSS, and the step gap from the server's timeline (one reply finished -> the next request's body fully arrived;
each request carries the ~1.2 MB pack, so every gap is a step at >1 MB). kimi's pack is cached first (two warm-up
runs). Usage: python3 bench/steps20.py [RUNS]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, commit_all, kimi_bin, median, table

sys.path.insert(0, str(ROOT / "tests"))
from scripted_server import ScriptedModelServer

STEPS = 20
TRANSPORTS = ("direct", "httpx")


def flask_tree(work: Path) -> Path:
    source = next((p for p in (ROOT / "bench" / "corpora").glob("flask-*") if p.is_dir()), None)
    if source is None:
        raise SystemExit("flask is missing from bench/corpora: run python3 bench/pack.py once (it fetches it)")
    tree = work / source.name
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    commit_all(tree, "flask")
    return tree


def script(tree: Path) -> list[dict]:
    files = sorted(tree.glob("src/flask/**/*.py"))[:STEPS]
    usage = {"prompt_tokens": 1000, "completion_tokens": 10}
    steps = [{"text": "", "tool_calls": [{"id": f"ReadFile:{i}", "name": "ReadFile",
              "arguments": {"path": str(f)}}], "usage": usage} for i, f in enumerate(files)]  # fmt: skip
    return [*steps, {"text": "done", "usage": usage}]


def one(tree: Path, env: dict[str, str]) -> tuple[float, float, float, list[float]]:
    server = ScriptedModelServer(script(tree)).start()
    try:
        started = time.monotonic()
        argv = [kimi_bin(), "-p", "read the modules", "--output-format", "json", "--yolo"]
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        proc = subprocess.Popen(argv, cwd=tree, env={**env, "KIMI_BASE_URL": server.base_url}, **quiet)  # type: ignore[call-overload]
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        if status != 0 or len(server.requests) != STEPS + 1:
            raise SystemExit(f"run failed: status {status}, {len(server.requests)} requests")
        line = server.timeline
        gaps = [line[i + 1][0] - line[i][1] for i in range(len(line) - 1)]
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, gaps
    finally:
        server.stop()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    work = Path(tempfile.mkdtemp(prefix="kimi-steps20-"))
    try:
        tree = flask_tree(work)
        (work / "home" / ".kimi").mkdir(parents=True)
        (work / "home" / ".kimi" / "config.toml").write_text("context_length = 16000000\n")
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        base.update({"HOME": str(work / "home"), "KIMI_PROVIDER": "openai", "KIMI_API_KEY": "bench-key"})
        envs = {name: {**base, "KIMI_TRANSPORT": name} for name in TRANSPORTS}
        for _ in range(2):
            one(tree, envs["direct"])
        runs: dict[str, list[tuple[float, float, float, list[float]]]] = {name: [] for name in TRANSPORTS}
        for _ in range(rounds):
            for name in TRANSPORTS:
                runs[name].append(one(tree, envs[name]))
        rows = []
        for name in TRANSPORTS:
            r = runs[name]
            gaps = [g for run in r for g in run[3]]
            wall, cpu, rss = (median([x[i] for x in r]) for i in range(3))
            rows.append(
                [f"kimi, transport {name}", f"{wall:.3f}", f"{cpu:.3f}", f"{rss:.0f}", f"{median(gaps) * 1000:.1f}"]
            )
        ratio = median([a[1] / b[1] for a, b in zip(runs["direct"], runs["httpx"], strict=True)])
        print(f"{rounds} alternating rounds of {STEPS} ReadFile steps in packed flask; medians")
        print(table(["run", "wall s", "CPU s", "peak RSS MB", "step gap ms (server)"], rows))
        print(f"CPU ratio direct/httpx, pair by pair: {ratio:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
