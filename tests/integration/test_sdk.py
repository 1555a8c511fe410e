"""kimi_cli.sdk in process against the scripted model server: its events are `kimi -p --output-format
stream-json`'s (apart from times and ids), an approval callback's "no" reaches the model, resume and fork
continue a session, and the sync wrapper runs the same."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.sdk import ApprovalRequest, Kimi, KimiSync, Result
from kimi_cli.sdk.events import Init, ToolResult

from scripted_server import ScriptedModelServer
from support import TEST_KEY, run_kimi, tool_call

VARIES = {"session_id", "timing", "duration_ms", "model_ms", "tools_ms", "cwd", "wall_s", "run_s"}


@pytest.fixture
def sdk_env(env: dict[str, str], server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key in ("HOME", "NO_COLOR", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("KIMI_HOME", raising=False)
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    for key in ("KIMI_PROVIDER", "KIMI_BASE_URL", "KIMI_API_KEY"):
        monkeypatch.setenv(key, full[key])
    return full


def _normal(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _normal(v) for k, v in obj.items() if k not in VARIES}
    if isinstance(obj, list):
        return [_normal(v) for v in obj]
    return obj


def _script() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [tool_call("WriteFile", {"path": "notes.txt", "content": "hello\n"}, "w1")],
         "usage": {"prompt_tokens": 900, "completion_tokens": 10, "cached_tokens": 0}},
        {"text": "wrote notes.txt", "usage": {"prompt_tokens": 950, "completion_tokens": 5, "cached_tokens": 900}},
    ]  # fmt: skip


def test_sdk_events_equal_stream_json_for_the_same_scripted_run(
    repo: Path, tmp_path: Path, sdk_env: dict[str, str], server: ScriptedModelServer
) -> None:
    twin = tmp_path / "twin" / "repo"  # the same workspace, for the CLI's run
    shutil.copytree(repo, twin, symlinks=True)
    server.add(*_script())
    # the environment the SDK's run starts from: the run may add to os.environ (it names the trusted git
    # for gitpython), and the CLI's run must start from the same one for the notices to match
    before = dict(os.environ)

    async def sdk_run() -> list[dict[str, Any]]:
        async with Kimi(cwd=repo) as k:
            return [e.model_dump(exclude_unset=True) async for e in k.run("write notes")]

    events = asyncio.run(sdk_run())
    assert (repo / "notes.txt").read_text() == "hello\n"
    server.add(*_script())
    # the CLI gets this process's environment: the notice of withheld variables names them
    proc = run_kimi(["-p", "write notes", "--output-format", "stream-json"], twin, before)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [e["type"] for e in events] == [e["type"] for e in lines]
    assert _normal(events) == _normal(lines)
    assert events[0]["type"] == "init" and events[-1]["type"] == "result"
    assert events[-1]["text"] == "wrote notes.txt" and events[-1]["cost"] is not None


def test_an_approval_callbacks_no_reaches_the_model(
    repo: Path, sdk_env: dict[str, str], server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "touch ran.txt"}, "s1")]},
        {"text": "could not"},
    )
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> str:
        asked.append(request)
        return "no:use the Python script instead"

    async def main() -> Result:
        async with Kimi(cwd=repo, sandbox="none", approve=approve) as k:
            events = [e async for e in k.run("make ran.txt")]
            assert isinstance(events[0], Init) and events[0].sandbox == "none"
            refused = [e for e in events if isinstance(e, ToolResult)]
            assert refused and refused[0].is_error
            return await asyncio.sleep(0, k.result)  # type: ignore[arg-type]

    result = asyncio.run(main())
    assert asked and asked[0].kind == "shell" and "touch ran.txt" in asked[0].question
    assert not (repo / "ran.txt").exists()
    sent = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert any("use the Python script instead" in str(c) for c in sent), sent
    assert result.text == "could not"


def test_an_approval_callbacks_yes_runs_the_command(
    repo: Path, sdk_env: dict[str, str], server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch ran.txt"}, "s1")]}, {"text": "made"})
    k = KimiSync(repo, sandbox="none", approve=lambda request: True)
    result = k.ask("make ran.txt")
    assert result.reason == "done" and (repo / "ran.txt").exists()


def test_resume_continues_the_session_and_fork_copies_it(
    repo: Path, sdk_env: dict[str, str], server: ScriptedModelServer
) -> None:
    server.add({"text": "noted: the word is heron"}, {"text": "heron"}, {"text": "heron again"}, {"text": "still"})

    async def main() -> tuple[str, str, str]:
        async with Kimi(cwd=repo) as k:
            first = await k.ask("remember the word heron")
            assert first.session_id
            second = await k.ask("what was the word?", resume=first.session_id)
            third = await k.ask("and again?", fork=first.session_id)
            await k.ask("once more?", resume=first.session_id)  # the original, without the fork's turn
            return first.session_id, str(second.session_id), str(third.session_id)

    first, second, third = asyncio.run(main())
    assert second == first and third != first
    for request in (1, 2):  # the earlier turn was in what the model was sent
        said = json.dumps(server.requests[request]["messages"])
        assert "remember the word heron" in said and "noted: the word is heron" in said
    assert "what was the word?" in json.dumps(server.requests[2]["messages"])
    original = json.dumps(server.requests[3]["messages"])
    assert "what was the word?" in original and "and again?" not in original


def test_a_program_that_imports_the_sdk_reads_a_folder_with_every_extension(
    repo: Path, sdk_env: dict[str, str], server: ScriptedModelServer
) -> None:
    """A fresh interpreter, as a user's program is (this suite's conftest installs folder trust's readers for
    the in-process tests): the SDK installs them itself, and a folder's own settings are read, not refused."""
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "config.toml").write_text("[context]\ncompact_at = 0.7\n")
    server.add({"text": "read it"})
    program = "from kimi_cli.sdk import KimiSync\nprint(KimiSync('.', sandbox='none').ask('hi').text)\n"
    proc = subprocess.run([sys.executable, "-c", program], cwd=repo, env=sdk_env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "read it"
