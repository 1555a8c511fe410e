"""Harness overhead per step on a 50-step scripted session: wall time minus server time minus tool time.

The scripted server runs as its own process; kimi runs as a whole process, so start-up is included
(amortised over the 50 steps) and also reported separately. Target: <= 20 ms per step.
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

from common import ROOT, kimi_bin, median, table, time_process

STEPS = 50


def script() -> list[dict]:
    entries = []
    for i in range(STEPS - 1):
        call = {"id": f"ReadFile:{i}", "name": "ReadFile", "arguments": {"path": "mod.py", "n_lines": 20 + i}}
        entries.append({"text": f"step {i}", "tool_calls": [call]})
    entries.append({"text": "finished"})
    return entries


def one_run(work: Path) -> dict[str, float]:
    script_file = work / "script.json"
    script_file.write_text(json.dumps(script()))
    port_file, stats_file = work / "port", work / "stats.json"
    for f in (port_file, stats_file):
        f.unlink(missing_ok=True)
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "scripted_server.py"),
            str(script_file),
            "--port-file",
            str(port_file),
            "--stats-file",
            str(stats_file),
        ]
    )
    while not port_file.exists() or not port_file.read_text():
        time.sleep(0.01)
    env = {
        **os.environ,
        "HOME": str(work / "home"),
        "KIMI_PROVIDER": "openai",
        "KIMI_BASE_URL": port_file.read_text(),
        "KIMI_API_KEY": "bench",
    }
    repo = work / "repo"
    started = time.perf_counter()
    out = subprocess.run(
        [kimi_bin(), "-p", "bench", "--output-format", "json", "--max-steps", "60"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    server.send_signal(signal.SIGTERM)
    server.wait()
    stats = json.loads(stats_file.read_text())
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["steps"] == STEPS, result
    serve = sum(stats["serve_seconds"])
    tools = result["timing"]["tools_s"]
    return {
        "wall": wall,
        "serve": serve,
        "tools": tools,
        "per_step": (wall - serve - tools) / STEPS,
        "in_loop_per_step": (result["timing"]["wall_s"] - serve - tools) / STEPS,
    }


def main(runs: int = 5) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "home").mkdir()
        (work / "repo").mkdir()
        (work / "repo" / "mod.py").write_text("\n".join(f"def f{i}(): return {i}" for i in range(200)))
        results = [one_run(work) for _ in range(runs)]
    base = median(time_process([sys.executable, "-c", "pass"], 15))
    per_step = median([r["per_step"] for r in results])
    in_loop = median([r["in_loop_per_step"] for r in results])
    rows = [
        ["whole process (start-up amortised over 50 steps)", f"{per_step * 1000:.1f} ms", f"{per_step / base:.2f}x"],
        ["inside the loop (start-up excluded)", f"{in_loop * 1000:.1f} ms", f"{in_loop / base:.2f}x"],
        ["`python -c pass` (reference)", f"{base * 1000:.1f} ms", "1.00x"],
    ]
    wall, serve, tools = (median([r[k] for r in results]) for k in ("wall", "serve", "tools"))
    extra = f"\nMedians of {runs} runs: wall {wall:.2f} s, server {serve:.2f} s, tools {tools:.3f} s."
    return table(["harness overhead per step", "median", "ratio to python -c pass"], rows) + extra


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
