"""Per-call cost of the file tools through the no-follow reader (kimi_cli/hostsafe/fs.py), in-process.

- the disk path alone: resolve + open + fstat + read, the old way (path strings) and through safe_fs
  (openat2, and the per-folder O_NOFOLLOW walk older kernels get); min of 5 x 20,000;
- ReadFile, WriteFile (fsync stubbed: it dominates and varies with the disk) and StrReplaceFile as whole
  tool calls through the registry; min over 5 rounds of 300;
- Grep with rg under its Landlock domain and checked line by line, with kimi at ~10 MB and ~300 MB RSS.
Usage: python3 bench/file_tools.py
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

from common import ROOT

sys.path.insert(0, str(ROOT))


def disk_path(root: Path) -> dict[str, float]:
    from kimi_cli.hostsafe import fs as safe_fs
    from kimi_cli.tools.workspace import Workspace

    workspace = Workspace(root)

    def old() -> None:
        path = (root / "src/pkg/mod.py").resolve()
        if not path.exists() or path.is_dir():
            raise SystemExit("missing")
        with path.open("rb") as fh:
            os.fstat(fh.fileno())
            fh.read(8192)

    def new() -> None:
        path = (root / "src/pkg/mod.py").resolve()
        fd, _st = safe_fs.open_regular(root, workspace.rel(path))
        with os.fdopen(fd, "rb") as fh:
            fh.read(8192)

    def walk() -> None:
        saved = safe_fs._openat2_ok
        safe_fs._openat2_ok = False
        try:
            new()
        finally:
            safe_fs._openat2_ok = saved

    out = {}
    for name, fn in (("path strings (before)", old), ("safe_fs, openat2", new), ("safe_fs, O_NOFOLLOW walk", walk)):
        out[name] = min(timeit.repeat(fn, number=20_000, repeat=5)) / 20_000 * 1e6
    return out


async def tool_calls(root: Path) -> dict[str, float]:
    from kimi_cli.agent.toolbox import default_tools
    from kimi_cli.tools.base import ToolContext
    from kimi_cli.tools.workspace import Workspace

    registry = default_tools()
    ctx = ToolContext(workspace=Workspace(root))

    async def best(name: str, args: dict[str, object], n: int = 300) -> float:
        rounds = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(n):
                result = await registry.call(name, json.dumps(args), ctx)
                assert not result.is_error, result.output
            rounds.append((time.perf_counter() - started) / n)
        return min(rounds) * 1e6

    return {
        "ReadFile (100 lines)": await best("ReadFile", {"path": "src/pkg/mod.py", "n_lines": 100}),
        "WriteFile (2 KB, fsync stubbed)": await best("WriteFile", {"path": "src/pkg/out.txt", "content": "x" * 2000}),
        "StrReplaceFile (fsync stubbed)": await best(
            "StrReplaceFile", {"path": "src/pkg/mod.py", "edit": {"old": "line 7\n", "new": "line 7\n"}}
        ),
    }


async def grep(root: Path) -> dict[str, float]:
    from kimi_cli.tools.base import ToolContext
    from kimi_cli.tools.grep_tool import Grep, GrepParams
    from kimi_cli.tools.workspace import Workspace

    ctx = ToolContext(workspace=Workspace(root))

    async def median_ms(tool: Grep) -> float:
        times = []
        for _ in range(30):
            started = time.perf_counter()
            await tool.run(GrepParams(pattern="return"), ctx)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    out = {}
    for rss in (10, 300):
        ballast = bytearray(rss * 1024 * 1024)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        out[f"Grep under Landlock, {rss} MB RSS (ms)"] = await median_ms(Grep(confine=True))
        out[f"Grep checked (no Landlock), {rss} MB RSS (ms)"] = await median_ms(Grep(confine=False))
        del ballast
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "src" / "pkg").mkdir(parents=True)
        (root / "src" / "pkg" / "mod.py").write_text("".join(f"line {i}\n" for i in range(400)))
        for i in range(50):
            (root / f"f{i}.py").write_text("def f():\n    return 1\n" * 20)
        results = disk_path(root)
        real_fsync = os.fsync
        os.fsync = lambda fd: None  # type: ignore[assignment]
        try:
            results.update(asyncio.run(tool_calls(root)))
        finally:
            os.fsync = real_fsync
        results.update(asyncio.run(grep(root)))
    for name, value in results.items():
        unit = "" if "(ms)" in name else " us"
        print(f"{name:<48} {value:8.1f}{unit}")


if __name__ == "__main__":
    main()
