"""Session start with 3 stdio MCP servers against none: the servers start while the repository is packed.

Whole `kimi -p` processes, timed to the first model request (seen by the scripted server). Target: with
3 servers, no slower than without by more than one server's own start. A server's own start is measured
both ways: what one server adds to a session (the MCP SDK's import, ~0.65 s, included), and what
`kimi mcp test` reports (spawn to ready, the import excluded). Since issue 41 the first request waits for
the servers up to [mcp] startup_timeout (5 s) and carries their tools: what they cost it is the slowest
server's start, less the time the pack overlapped it.
Usage: python3 bench/mcp_start.py [RUNS]   (needs .ci/node's @modelcontextprotocol/server-everything)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, first_request, kimi_bin, median, table

SERVER = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-server-everything"


def main(runs: int = 5) -> str:
    if not SERVER.exists():
        return f"not measured: {SERVER} is missing (.ci/run installs it)"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "HOME": str(work / "home")}
        plain, with_mcp, with_one = work / "plain", work / "mcp", work / "one"
        for repo in (plain, with_mcp, with_one):
            repo.mkdir()
            subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
            for i in range(300):
                (repo / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 20)
        (with_mcp / ".kimi").mkdir()
        servers = {f"s{i}": {"command": str(SERVER)} for i in range(3)}
        (with_mcp / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
        (with_one / ".kimi").mkdir()
        (with_one / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"s0": {"command": str(SERVER)}}}))
        for repo in (with_mcp, with_one):  # a project's own servers start only in a trusted folder
            subprocess.run([kimi_bin(), "trust", str(repo)], env=env, check=True, capture_output=True)
        times: dict[Path, list[float]] = {plain: [], with_one: [], with_mcp: []}
        for _ in range(runs):  # in turn, so all three see the same machine
            for repo in times:
                times[repo].append(first_request(work, repo, env))
        base, one, three = (median(times[r]) for r in (plain, with_one, with_mcp))
        alone = []
        for _ in range(runs):
            out = subprocess.run([kimi_bin(), "mcp", "test", "s0"], cwd=with_mcp, env=env, capture_output=True,
                                 text=True, check=True).stdout  # fmt: skip
            alone.append(float(re.search(r"ready in ([\d.]+) s", out).group(1)))  # type: ignore[union-attr]
    slowest = median(alone)
    rows = [
        ["no MCP server", f"{base * 1000:.0f} ms", "1.00x"],
        ["1 stdio server (server-everything)", f"{one * 1000:.0f} ms", f"{one / base:.2f}x"],
        ["3 stdio servers", f"{three * 1000:.0f} ms", f"{three / base:.2f}x"],
        ["one server, spawn to ready (`kimi mcp test`)", f"{slowest * 1000:.0f} ms", ""],
    ]
    note = (
        f"\nExtra with 3 servers: {(three - base) * 1000:+.0f} ms; with 1: {(one - base) * 1000:+.0f} ms "
        f"(target: the first no more than the second)."
    )
    return table(["`kimi -p` start to the first request", f"median of {runs}", "ratio"], rows) + note


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
