"""`kimi --help`, `kimi --version` and `kimi doctor` as whole processes, beside `python -c pass` and, where
bench/setup_peers.sh installed it, kimi-cli's `--version`. Targets: --help <= 0.15 s, --version <= 0.1 s,
doctor <= 3 s (issue 46: against the scripted server on loopback, so the endpoint check answers)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import kimi_bin, median, table, time_process

ROOT = Path(__file__).resolve().parent.parent
KIMI_CLI = ROOT / "bench" / ".peers" / "kimi-cli" / "bin" / "kimi"  # bench/setup_peers.sh


def _doctor_times(runs: int) -> list[float]:
    """`kimi doctor` against the scripted server (its /models answers), in a fresh git folder."""
    sys.path.insert(0, str(ROOT / "tests"))
    from scripted_server import ScriptedModelServer

    with ScriptedModelServer(model="kimi-k3.1-pro") as server, tempfile.TemporaryDirectory() as folder:
        subprocess.run(["git", "init", "-q", folder], check=True)
        env = {**os.environ, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": "sk-bench"}
        times = []
        for i in range(runs + 1):
            started = time.perf_counter()
            done = subprocess.run([kimi_bin(), "doctor"], cwd=folder, env=env, capture_output=True, text=True)
            if i:  # the first run warms the caches (and learns the window)
                times.append(time.perf_counter() - started)
            assert done.returncode == 0, done.stdout + done.stderr
    return times


def main(runs: int = 15) -> str:
    base = median(time_process([sys.executable, "-c", "pass"], runs))
    rows = [["`python -c pass`", f"{base * 1000:.0f} ms", "1.00x"]]
    for args in (["--help"], ["--version"]):
        t = median(time_process([kimi_bin(), *args], runs))
        rows.append([f"`kimi {' '.join(args)}`", f"{t * 1000:.0f} ms", f"{t / base:.2f}x"])
    if KIMI_CLI.exists():
        t = median(time_process([str(KIMI_CLI), "--version"], runs))
        rows.append(["kimi-cli 1.51 `kimi --version`", f"{t * 1000:.0f} ms", f"{t / base:.2f}x"])
    t = median(_doctor_times(max(3, runs // 3)))
    rows.append([f"`kimi doctor` (median of {max(3, runs // 3)})", f"{t * 1000:.0f} ms", f"{t / base:.2f}x"])
    return table(["command", f"median of {runs}", "ratio to python -c pass"], rows)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 15))
