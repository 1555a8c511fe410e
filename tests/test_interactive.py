"""The interactive session in a real pty (pexpect) against the scripted server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pexpect
import pytest

from conftest import TEST_KEY, kimi_executable, tool_call, wait_until
from scripted_server import ScriptedModelServer

PROMPT = "❯"


def spawn(repo: Path, env: dict, server: ScriptedModelServer | None, *args: str, base_url: str | None = None):
    full = {
        **env,
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "KIMI_PROVIDER": "openai",
        "KIMI_API_KEY": TEST_KEY,
        "KIMI_BASE_URL": base_url or (server.base_url if server else ""),
    }
    exe = kimi_executable()
    child = pexpect.spawn(
        exe[0], [*exe[1:], *args], cwd=str(repo), env=full, dimensions=(50, 140), encoding="utf-8", timeout=30
    )
    child.expect(PROMPT)
    return child


def finish(child) -> int:
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_a_task_streams_its_answer_and_exit_returns_0(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"reasoning": "hmm", "text": "The **answer** is here.\n\n```python\nprint(42)\n```\n\nAll done."})
    child = spawn(repo, env, server)
    child.send("what is it?\r")
    child.expect("print\\(42\\)")
    child.expect("All done")
    child.expect(PROMPT)
    assert finish(child) == 0
    assert server.requests[0]["messages"][-1]["content"] == "what is it?"


def test_approvals_yes_always_and_no_with_reason(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "touch one.txt"}, "c1")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch two.txt"}, "c2")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch three.txt"}, "c3")]},
        {"tool_calls": [tool_call("Shell", {"command": "rm -rf build"}, "c4")]},
        {"text": "finished"},
    )
    child = spawn(repo, env, server, "--sandbox", "none")
    child.send("make files\r")
    child.expect("run this command")
    child.expect("no ›")
    child.send("y\r")
    child.expect("run this command")
    child.expect("no ›")
    child.send("a\r")  # always `touch`: the third command runs without asking
    child.expect("run this command")
    child.expect("rm -rf build")
    child.expect("no ›")
    child.send("n\r")
    child.expect("why not")
    child.send("keep the build folder\r")
    child.expect("finished")
    child.expect(PROMPT)
    assert finish(child) == 0
    assert all((repo / n).exists() for n in ("one.txt", "two.txt", "three.txt"))
    refusal = server.requests[4]["messages"][-1]["content"]
    assert "the user said no: keep the build folder" in refusal


def _sleepers() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"sleep\x00600" in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def test_ctrl_c_cancels_a_running_command_and_returns_to_the_prompt(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "sleep 600", "timeout": 600}, "z1")]}, {"text": "ok"})
    child = spawn(repo, env, server)
    child.send("wait a long time\r")
    child.expect("running Shell")
    wait_until(_sleepers, timeout=10, what="the command to start")
    started = time.monotonic()
    child.sendintr()
    child.expect("cancelled")
    child.expect(PROMPT)
    assert time.monotonic() - started < 30  # generous: the command itself would run 600 s
    wait_until(lambda: _sleepers() == [], what="the cancelled command to be gone")
    assert finish(child) == 0


def test_undo_restores_files(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "made.txt", "content": "x\n"}, "w1")]}, {"text": "wrote it"}
    )
    child = spawn(repo, env, server)
    child.send("write a file\r")
    child.expect("wrote it")
    child.expect(PROMPT)
    assert (repo / "made.txt").exists()
    child.send("/undo\r")
    child.expect("restored the files")
    child.expect(PROMPT)
    assert not (repo / "made.txt").exists()
    assert finish(child) == 0


def test_image_command_attaches_to_the_next_message(
    repo: Path, env: dict, server: ScriptedModelServer, png_bytes: bytes
) -> None:
    (repo / "shot.png").write_bytes(png_bytes)
    server.add({"text": "nice picture"})
    child = spawn(repo, env, server)
    child.send("/image shot.png\r")
    child.expect("attached")
    child.send("what is this?\r")
    child.expect("nice picture")
    child.expect(PROMPT)
    assert finish(child) == 0
    content = server.requests[0]["messages"][-1]["content"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_bad_input_never_shows_a_traceback(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    child = spawn(repo, env, server)
    child.send("/hepl\r")
    child.expect("Did you mean /help")
    child.send("/image missing.png\r")
    child.expect("image not found")
    child.send("look at @nothere.png\r")
    child.expect("image not found")
    child.expect(PROMPT)
    assert finish(child) == 0
    assert "Traceback" not in (child.before or "")
    assert server.requests == []


def test_server_down_gives_a_message_and_the_prompt_again(repo: Path, env: dict) -> None:
    child = spawn(repo, env, None, base_url="http://127.0.0.1:9/v1")
    child.send("hello\r")
    child.expect("unavailable")
    child.expect(PROMPT)
    assert finish(child) == 0


def test_continue_shows_a_recap(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "first answer about calc"})
    child = spawn(repo, env, server)
    child.send("tell me about calc\r")
    child.expect("first answer")
    child.expect(PROMPT)
    finish(child)
    again = spawn(repo, env, server, "--continue")
    assert "resumed session" in again.before
    assert "tell me about calc" in again.before
    assert finish(again) == 0


@pytest.fixture(autouse=True)
def _no_user_history(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def test_pasting_an_image_path_attaches_it(
    repo: Path, env: dict, server: ScriptedModelServer, png_bytes: bytes
) -> None:
    (repo / "pasted.png").write_bytes(png_bytes)
    server.add({"text": "got the picture"})
    child = spawn(repo, env, server)
    child.send(f"'{repo / 'pasted.png'}'\r")
    child.expect("attached pasted.png")
    child.send("and this?\r")
    child.expect("got the picture")
    child.expect(PROMPT)
    assert finish(child) == 0
    assert server.requests[0]["messages"][-1]["content"][1]["type"] == "image_url"


def test_sigterm_ends_the_interactive_session_with_exit_4(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    import signal

    child = spawn(repo, env, server)
    started = time.monotonic()
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF, timeout=10)
    child.close()
    assert time.monotonic() - started < 10
    assert child.exitstatus == 4
