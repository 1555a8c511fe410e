"""Questions asked outside the session's input line take one key with no Enter (issue 46, item 3); Enter takes
the default the question shows. `kimi undo`'s question about your edits, in a pty."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from scripted_server import ScriptedModelServer
from support import kimi_executable, run_kimi, tool_call


def edited_after_the_agent(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    new = "def add(a, b):\n    return a + b\n"
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "calc.py", "content": new}, "w")]}, {"text": "ok"})
    assert run_kimi(["-p", "fix add"], repo, env, server).returncode == 0
    (repo / "calc.py").write_text(new + "# mine\n")  # the user's edit, after the agent's last step


@pytest.mark.parametrize(("key", "restored"), [("y", True), ("\r", False)])
def test_kimi_undo_asks_with_one_key(
    key: str, restored: bool, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    edited_after_the_agent(repo, env, server)
    exe = kimi_executable()
    child = pexpect.spawn(exe[0], [*exe[1:], "undo"], cwd=str(repo), env={**env, "TERM": "dumb"}, encoding="utf-8",
                          timeout=30, dimensions=(40, 100))  # fmt: skip
    child.expect(r"overwrite them\? y/N \(Enter = no\) › ")
    child.send(key)  # y alone, or Enter alone: the default, no
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == (0 if restored else 4)
    assert ((repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n") == restored
