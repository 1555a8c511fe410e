"""Overhead of one Shell(command="true") call per backend, against plain subprocess.run("true").

Targets: bwrap <= 15 ms extra per call; landlock <= 5 ms more than none; docker exec in a warm container
<= 60 ms extra. The bench process holds ~120 MB of ballast, about a session's RSS, because the landlock
backend forks (its preexec step rules out vfork) and a fork costs more in a bigger process.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, median, table, time_calls

sys.path.insert(0, str(ROOT / "tests"))


def main(runs: int = 30) -> str:
    from kimi_cli.sandbox.backends.bwrap import BwrapSandbox
    from kimi_cli.sandbox.backends.docker import DockerSandbox, docker_works
    from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox
    from kimi_cli.sandbox.backends.none import NoSandbox
    from kimi_cli.sandbox.policy import build_policy
    from kimi_cli.tools.base import ToolContext
    from kimi_cli.tools.shell import Shell
    from kimi_cli.tools.workspace import Workspace

    ballast = [bytes(4096) + i.to_bytes(4, "little") for i in range(30_000)]  # ~120 MB, like a session
    base = median(time_calls(lambda: subprocess.run(["true"], check=True), runs))
    rows = [["`subprocess.run(['true'])`", f"{base * 1000:.1f} ms", "—", "1.00x"]]
    with tempfile.TemporaryDirectory() as tmp:
        ws, ptmp = Path(tmp) / "ws", Path(tmp) / "t"
        ws.mkdir()
        ptmp.mkdir()
        policy = build_policy(ws, ptmp)
        backends: list[tuple[str, object]] = [
            ("none", NoSandbox(policy, 30_000)),
            ("bwrap", BwrapSandbox(policy, 30_000)),
            ("landlock", LandlockSandbox(policy, 30_000)),
        ]
        ok, why = docker_works()
        if ok:
            from docker_image import ensure_image

            backends.append(("docker (warm)", DockerSandbox(policy, 30_000, ensure_image(), "512m", 256, "bench")))
        ctx = ToolContext(workspace=Workspace(ws))
        params = Shell.Params(command="true")
        loop = asyncio.new_event_loop()
        try:
            for name, sandbox in backends:
                shell = Shell(sandbox)  # type: ignore[arg-type]
                t = median(time_calls(lambda s=shell: loop.run_until_complete(s.run(params, ctx)), runs))
                rows.append(
                    [f"Shell `true`, {name}", f"{t * 1000:.1f} ms", f"+{(t - base) * 1000:.1f} ms", f"{t / base:.2f}x"]
                )
                if isinstance(sandbox, DockerSandbox):
                    sandbox.close_sync()
        finally:
            loop.close()
        if not ok:
            rows.append(["Shell `true`, docker", "not measured", why, ""])
    del ballast
    return table(["call", f"median of {runs}", "extra per call", "ratio"], rows)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
