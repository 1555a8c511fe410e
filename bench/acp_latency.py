"""Time to the first answer chunk: an editor through `kimi acp` against the same prompt through `kimi -p`.

ACP: from the `initialize` answer (the agent process is up: an editor starts it when its panel opens) through
session/new and session/prompt to the first agent_message_chunk; the process start before that is reported
apart (most of it is importing the `acp` package). Headless: from starting `kimi -p --output-format
stream-json` to its first text delta. Same scripted server (its own process), same empty repository.
Target: within 50 ms of each other.
Usage: python3 bench/acp_latency.py [RUNS]
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import kimi_bin, median, scripted_server, stop, table


async def acp_once(repo: Path, env: dict[str, str]) -> float:
    import acp

    first = asyncio.get_running_loop().create_future()

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if getattr(update, "session_update", "") == "agent_message_chunk" and not first.done():
                first.set_result(time.perf_counter())

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("no permission expected")

    spawned = time.perf_counter()
    async with acp.spawn_agent_process(lambda _a: Client(), kimi_bin(), "acp", env=env, cwd=str(repo)) as (conn, _p):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        started = time.perf_counter()
        STARTUP.append(started - spawned)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
        return float(await first) - started


STARTUP: list[float] = []


def headless_once(repo: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([kimi_bin(), "-p", "hi", "--output-format", "stream-json"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    found = 0.0
    for line in proc.stdout:
        if '"text_delta"' in line and not found:
            found = time.perf_counter() - started
    proc.wait()
    return found


def main(runs: int = 5) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        server, base = scripted_server(work, [{"text": "hello from kimi"}] * (4 * runs + 4))
        env = {**os.environ, "HOME": str(work / "home"), "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": base,
               "KIMI_API_KEY": "bench-key"}  # fmt: skip
        try:
            acp_times, cli_times = [], []
            for _ in range(runs):
                acp_times.append(asyncio.run(acp_once(repo, env)))
                cli_times.append(headless_once(repo, env))
        finally:
            stop(server)
    a, c = median(acp_times), median(cli_times)
    rows = [
        ["`kimi -p` (stream-json), from process start", f"{c * 1000:.0f} ms", "1.00x"],
        ["`kimi acp`, from the initialize answer", f"{a * 1000:.0f} ms", f"{a / c:.2f}x"],
        ["`kimi acp`, process start to the initialize answer", f"{median(STARTUP) * 1000:.0f} ms", ""],
    ]
    note = f"\nDifference of the first two: {(a - c) * 1000:+.0f} ms (target: within 50 ms)."
    return table(["first answer chunk", f"median of {runs}", "ratio"], rows) + note


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
