"""The interactive UI streaming a long markdown answer at ~1,000 tokens/s, against --output-format text.

Reports CPU time of the whole kimi process (user + sys) and whether it kept up with the stream.
Target: UI CPU <= 2x text mode, and no quadratic growth (50 KB vs 200 KB).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, kimi_bin, table

sys.path.insert(0, str(ROOT / "tests"))
CHARS_PER_CHUNK = 16  # ~4 tokens
TOKENS_PER_SECOND = 1000


def markdown(size: int) -> str:
    parts, n = [], 0
    while sum(map(len, parts)) < size:
        n += 1
        parts.append(
            f"## Section {n}\n\nThis paragraph explains step {n} of the change in **bold** and `code`, "
            f"with a [link](https://example.com/{n}) and some more words to read.\n\n"
            f"- item one of {n}\n- item two of {n}\n\n```python\ndef step_{n}(x):\n    return x * {n}\n```\n\n"
        )
    return "".join(parts)[:size]


def run(mode: str, size: int) -> tuple[float, float, float]:
    """(cpu seconds, wall seconds, expected stream seconds) for one whole kimi process."""
    import pexpect

    from scripted_server import ScriptedModelServer

    text = markdown(size)
    delay = CHARS_PER_CHUNK / 4 / TOKENS_PER_SECOND
    server = ScriptedModelServer([{"text": text, "chunk_size": CHARS_PER_CHUNK, "delay": delay}]).start()
    expected = len(text) / CHARS_PER_CHUNK * delay
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        env = {
            **os.environ,
            "HOME": tmp,
            "KIMI_PROVIDER": "openai",
            "KIMI_BASE_URL": server.base_url,
            "KIMI_API_KEY": "bench",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }
        cpu_file = Path(tmp) / "cpu"
        timer = ["/usr/bin/time", "-f", "%U %S", "-o", str(cpu_file)]
        started = time.perf_counter()
        if mode == "text":
            subprocess.run(
                [*timer, kimi_bin(), "-p", "write it", "--no-pack"],
                cwd=repo,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
        else:
            child = pexpect.spawn(
                timer[0],
                [*timer[1:], kimi_bin(), "--no-pack"],
                cwd=str(repo),
                env=env,
                dimensions=(50, 120),
                encoding="utf-8",
                timeout=600,
                maxread=65536,
            )
            child.expect("❯")
            child.send("write it\r")
            child.expect(f"Section {text.count('## Section')}", timeout=600)
            child.expect("❯", timeout=600)
            child.sendline("/exit")
            child.expect(pexpect.EOF)
            child.close()
        wall = time.perf_counter() - started
        user, system = (float(x) for x in cpu_file.read_text().split()[-2:])
    server.stop()
    return user + system, wall, expected


def main() -> str:
    rows = []
    results: dict[tuple[str, int], tuple[float, float, float]] = {}
    for size in (50_000, 200_000):
        for mode in ("text", "ui"):
            results[(mode, size)] = run(mode, size)
    for size in (50_000, 200_000):
        t_cpu, _t_wall, expected = results[("text", size)]
        u_cpu, u_wall, _ = results[("ui", size)]
        rows.append(
            [
                f"{size // 1000} KB answer",
                f"{expected:.1f} s",
                f"{t_cpu:.2f} s",
                f"{u_cpu:.2f} s",
                f"{u_cpu / t_cpu:.2f}x",
                f"{u_wall:.1f} s",
            ]
        )
    growth = results[("ui", 200_000)][0] / results[("ui", 50_000)][0]
    note = (
        f"\nUI CPU grows {growth:.2f}x for 4x the text (linear would be ~4x plus start-up; quadratic ~16x). "
        "'kept up' means the UI's wall time stays near the stream's own length."
    )
    headers = ["stream", "stream length", "CPU, text mode", "CPU, interactive UI", "UI / text", "UI wall"]
    return table(headers, rows) + note


if __name__ == "__main__":
    print(main())
