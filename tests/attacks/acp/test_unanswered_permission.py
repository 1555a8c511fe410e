"""An editor that never answers a permission request does not hold `kimi acp`, and a late yes runs nothing.

Tried in the pass after the issue 38 fixes and held; kept so that it stays so. The client asks nothing back
to kimi's `session/request_permission` for a command; `session/cancel` ends the prompt at once (cancelled),
the stale request answered "allow_once" afterwards runs nothing, the next prompt is answered, and stdin EOF
ends the agent with exit 0.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, tool_call, wait_until


class Editor:
    """`kimi acp` spoken to line by line; what it sends is collected by a reader thread."""

    def __init__(self, repo: Path, env: dict, server: ScriptedModelServer) -> None:
        agent_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
        self.proc = subprocess.Popen([*kimi_executable(), "acp"], cwd=repo, env=agent_env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def first(self, wanted: Callable[[dict[str, Any]], bool], what: str, timeout: float = 30) -> dict[str, Any]:
        return wait_until(lambda: next((m for m in list(self.lines) if wanted(m)), None), timeout, what)

    def answer(self, request_id: int) -> dict[str, Any]:
        return self.first(lambda m: m.get("id") == request_id and "method" not in m, f"the answer to {request_id}")


def test_a_permission_request_left_unanswered_is_cancelled_and_a_late_yes_runs_nothing(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch made.txt"}, "s1")]}, {"text": "ok"})
    server.add({"text": "second"})
    editor = Editor(repo, env, server)
    try:
        editor.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        editor.answer(1)
        editor.send({"id": 2, "method": "session/new", "params": {"cwd": str(repo), "mcpServers": []}})
        session = editor.answer(2)["result"]["sessionId"]
        editor.send({"id": 3, "method": "session/set_mode", "params": {"sessionId": session, "modeId": "ask"}})
        editor.answer(3)
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        editor.send({"id": 4, "method": "session/prompt", "params": prompt})
        asked = editor.first(lambda m: m.get("method") == "session/request_permission", "the permission request")
        started = time.monotonic()
        editor.send({"method": "session/cancel", "params": {"sessionId": session}})
        assert editor.answer(4)["result"]["stopReason"] == "cancelled"
        assert time.monotonic() - started < 10
        late = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        editor.send({"id": asked["id"], "result": late})  # the stale question answered yes, too late
        editor.send(
            {"id": 5, "method": "session/prompt", "params": {**prompt, "prompt": [{"type": "text", "text": "again"}]}}
        )
        assert editor.answer(5)["result"]["stopReason"] == "end_turn"  # the legitimate next prompt
        assert not (repo / "made.txt").exists()
        assert editor.proc.stdin is not None
        editor.proc.stdin.close()
        assert editor.proc.wait(timeout=20) == 0
    finally:
        if editor.proc.poll() is None:
            editor.proc.kill()
