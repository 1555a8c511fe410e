"""What the sandbox's guard adds to each command: its checks before and after a command that does nothing.

In an empty folder and in a clone of this repository (a .git, ~800 folders), for the guard as bwrap and
Docker make it (the workspace's .git mounted read-only: HEAD and refs not walked) and as landlock makes it.
Run against an older tree with PYTHONPATH pointing at it (laid out like the package) to compare.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT, median, table, time_calls


def guards(ws: Path) -> dict[str, Any]:
    from kimi_cli.sandbox.policy import build_policy

    policy = build_policy(ws, Path(tempfile.mkdtemp()))
    try:
        from kimi_cli.sandbox.guard.command import CommandGuard
    except ImportError:  # before command_guard.py: bwrap guarded a missing .kimi, landlock the whole .git
        from kimi_cli.sandbox.guard import restore as git_guard

        kimi = ws / ".kimi"
        few = [*([] if kimi.exists() else [kimi]), *git_guard.submodule_pointers(ws)]
        return {"bwrap": git_guard.GitGuard(ws, few), "landlock": git_guard.GitGuard(ws, *git_guard.guarded_paths(ws))}
    return {"bwrap": CommandGuard(ws, policy.read_only), "landlock": CommandGuard(ws, ())}


def main(runs: int = 300) -> str:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        empty, repo = Path(tmp) / "empty", Path(tmp) / "repo"
        empty.mkdir()
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo)], check=True)
        for label, ws in (("empty folder", empty), ("clone of this repository", repo)):
            for name, guard in guards(ws).items():
                times = time_calls(lambda g=guard: (g.before(), g.after()), runs)
                rows.append([label, name, f"{min(times) * 1000:.2f} ms", f"{median(times) * 1000:.2f} ms"])
    return table(["workspace", "guard as", "fastest", f"median of {runs}"], rows)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
