"""Run every benchmark and write bench/RESULTS.md. Usage: python3 bench/run.py [--quick]"""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import acp_latency  # noqa: E402
import big_untracked  # noqa: E402
import checkpoint  # noqa: E402
import lsp_diagnostics  # noqa: E402
import mcp_start  # noqa: E402
import pack  # noqa: E402
import shell_overhead  # noqa: E402
import startup  # noqa: E402
import step_gap  # noqa: E402
import step_overhead  # noqa: E402
import subagents  # noqa: E402
import ui  # noqa: E402

SECTIONS = [
    (
        "Start-up: `kimi --help` / `kimi --version` / `kimi doctor` (issue 2: <= 0.15 s; issue 46: --version <= 0.1 s "
        "beside kimi-cli, doctor <= 3 s)",
        "bash bench/setup_peers.sh && python3 bench/startup.py 15",
        lambda q: startup.main(5 if q else 15),
    ),
    (
        "Harness overhead per step, 50-step scripted session (issue 2; target <= 20 ms)",
        "python3 bench/step_overhead.py 5",
        lambda q: step_overhead.main(2 if q else 5),
    ),
    (
        "Step gap at 0.1, 2 and 8 MB requests, side by side with kimi-cli 1.51 (issue 11; targets <= 15 ms at "
        "2 MB, <= 20 ms at 8 MB; start-up to first request <= 0.35 s)",
        "bash bench/setup_peers.sh && python3 bench/step_gap.py 3",
        lambda q: step_gap.main(1 if q else 3),
    ),
    (
        "Four subagents at once (issue 16; target: 4 subagents <= 1.5x the time of 1)",
        "python3 bench/subagents.py 3",
        lambda q: subagents.main(1 if q else 3),
    ),
    (
        "`kimi acp` against `kimi -p`: time to the first answer chunk (issue 15; target within 50 ms)",
        "python3 bench/acp_latency.py 5",
        lambda q: acp_latency.main(2 if q else 5),
    ),
    (
        "Session start with MCP servers (issue 14; target: 3 servers cost no more than one server's own start)",
        "python3 bench/mcp_start.py 5",
        lambda q: mcp_start.main(2 if q else 5),
    ),
    (
        "Language servers: from an edit to its diagnostics (issue 42; targets: an error within 3 s of the edit, "
        "a later edit within 0.5 s)",
        "python3 bench/lsp_diagnostics.py 3",
        lambda q: lsp_diagnostics.main(1 if q else 3),
    ),
    (
        "Shell tool overhead per call (issue 3; targets: bwrap <= +15 ms, docker warm <= +60 ms)",
        "python3 bench/shell_overhead.py 30",
        lambda q: shell_overhead.main(10 if q else 30),
    ),
    (
        "Checkpoints on a 5,000-file repository (issue 4; targets: incremental <= 50 ms, undo <= 200 ms)",
        "python3 bench/checkpoint.py 7",
        lambda q: checkpoint.main(3 if q else 7),
    ),
    (
        "A file-changing step beside a 300 MB untracked log (issue 20; targets <= +50 ms, peak RSS <= 250 MB)",
        "python3 bench/big_untracked.py 5",
        lambda q: big_untracked.main(2 if q else 5),
    ),
    (
        "Packing the repository, against repomix, gitingest, code2prompt, files-to-prompt, aider (issue 5)",
        "bash bench/setup_peers.sh && python3 bench/pack.py 3",
        lambda q: pack.main(1 if q else 3),
    ),
    (
        "Interactive UI streaming a long markdown answer at ~1,000 tokens/s (issue 6; target UI <= 2x text)",
        "python3 bench/ui.py",
        lambda q: ui.main(),
    ),
]


NOTES_HEADING = "## How to read these"


def reading_notes(results: Path) -> str:
    """The hand-written "How to read these" section of RESULTS.md, carried over when it is regenerated."""
    try:
        text = results.read_text()
    except OSError:
        return ""
    start = text.find(NOTES_HEADING)
    if start < 0:
        return ""
    end = text.find("\n## ", start + len(NOTES_HEADING))
    return text[start : end if end >= 0 else len(text)].strip()


def main() -> None:
    quick = "--quick" in sys.argv
    cpu = subprocess.run(
        ["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True
    ).stdout.strip()
    parts = [
        "# Benchmark results",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {cpu or 'unknown CPU'}, "
        f"Python {platform.python_version()}. Whole processes, medians; machines are noisy, so compare ratios.",
        "Regenerate everything with `python3 bench/run.py` (after `pip install -e '.[dev]'`).",
    ]
    for title, command, fn in SECTIONS:
        print(f"running: {title}", file=sys.stderr)
        parts += ["", f"## {title}", "", f"Reproduce: `{command}`", "", fn(quick)]
    notes = reading_notes(HERE / "RESULTS.md")
    if notes:
        parts += ["", notes]
    (HERE / "RESULTS.md").write_text("\n".join(parts) + "\n")
    print((HERE / "RESULTS.md").read_text())


if __name__ == "__main__":
    main()
