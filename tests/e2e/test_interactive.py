"""The interactive session in a real terminal (pty + a VT emulator that answers cursor queries) against the
scripted server: interrupts in every phase, single-key approvals, type-ahead, at 60 and 120 columns."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from terminal import Terminal, spawn

from scripted_server import ScriptedModelServer
from support import tool_call, tool_results, wait_until

ESC, CTRL_C = "\x1b", "\x03"


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def ask_mode(home: Path) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('\n[approval]\npolicy = "ask"\n')


def approval(term: Terminal, number: int) -> str:
    """Until the `number`th approval of the session is asked (its panel printed, its keys on screen)."""
    term.wait_count("run this command?", number)
    return term.wait_for("Enter = no ›")


def sleepers() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"sleep\x00600" in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def test_a_task_streams_its_answer_with_reasoning_on_its_own_lines(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    answer = "The **answer** is here.\n\n```python\nprint(42)\n```\n\nAll done."
    server.add({"reasoning": "hmm, think\nabout it", "text": answer})
    term = spawn(repo, env, server)
    try:
        term.line("/reasoning")
        term.line("what is it?")
        term.wait_for("All done")
        screen = term.settle()
        lines = screen.splitlines()
        # The reasoning ends on its own line: the answer starts on a fresh one (issue: they ran together).
        assert any(line.strip() == "about it" for line in lines)
        assert not any("about it" in line and "answer" in line for line in lines)
        assert "print(42)" in screen
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests[0]["messages"][-1]["content"] == "what is it?"
    assert "resume with: kimi --continue" in term.transcript


@pytest.mark.parametrize("cols", [60, 120])
def test_approvals_are_single_keys_with_the_default_shown_and_wrap_by_words(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "touch one.txt"}, "c1")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch two.txt"}, "c2")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch three.txt"}, "c3")]},
        {"tool_calls": [tool_call("Shell", {"command": "rm -rf build"}, "c4")]},
        {"text": "finished"},
    )
    term = spawn(repo, env, server, "--sandbox", "none", cols=cols)
    try:
        term.line("make files")
        term.wait_for("cancel the whole turn")
        screen = approval(term, 1)
        assert "y/a/s/n · Enter = no ›" in screen  # the keys, and what Enter means
        sentence = "always, and save the rule in .kimi/config.toml for later sessions"
        assert sentence in " ".join(screen.split())  # wrapped by words: the lines joined give the sentence back
        for line in screen.splitlines():
            assert len(line) <= cols
        term.send("y")  # no Enter: one key answers
        approval(term, 2)
        term.send("a")  # always `touch`: the third command runs without a question
        approval(term, 3)
        assert "rm -rf build" in term.display
        term.send("n")
        term.wait_for("why not?")
        term.line("keep the build folder")
        term.wait_for("finished")
        assert term.exit() == 0
    finally:
        term.close()
    assert all((repo / n).exists() for n in ("one.txt", "two.txt", "three.txt"))
    assert term.transcript.count("run this command?") == 3
    assert "the user said no: keep the build folder" in tool_results(server, 4)[-1]


def _start_phase(term: Terminal, server: ScriptedModelServer, phase: str) -> None:
    """A turn in ask mode after one approval, then stopped in `phase`."""
    first = {"tool_calls": [tool_call("Shell", {"command": "touch first.txt"}, "a1")]}
    if phase == "command":
        server.add(first, {"tool_calls": [tool_call("Shell", {"command": "sleep 600", "timeout": 600}, "a2")]})
    elif phase == "approval":
        server.add(first, {"tool_calls": [tool_call("Shell", {"command": "touch second.txt"}, "a2")]})
    elif phase == "stream":
        server.add(first, {"text": "a paragraph of words\n\n" * 200, "chunk_size": 11, "delay": 0.05})
    else:  # thinking
        server.add(first, {"reasoning": "hmm " * 400, "text": "late", "chunk_size": 5, "delay": 0.05})
    server.add({"text": "the next turn works"})
    term.line("work")
    approval(term, 1)
    term.send("y")  # one approval answered: the old UI lost Ctrl-C from here on
    if phase == "command":
        approval(term, 2)
        term.send("y")  # a second answer (ask mode asks for every command), then Ctrl-C/Esc while it runs
        term.wait_for("running Shell")
        wait_until(sleepers, timeout=15, what="the command to start")
    elif phase == "approval":
        approval(term, 2)
    elif phase == "stream":
        term.wait_for("a paragraph of words")
    else:
        term.wait_for("thinking (")


@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
@pytest.mark.parametrize("phase", ["command", "approval", "stream", "thinking"])
def test_esc_and_ctrl_c_interrupt_a_turn_in_ask_mode_after_an_approval(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, key: str, phase: str
) -> None:
    ask_mode(home)
    term = spawn(repo, env, server)
    try:
        _start_phase(term, server, phase)
        sent = len(server.requests)
        term.send(key)
        term.wait_for("interrupted")
        if phase == "command":
            wait_until(lambda: sleepers() == [], what="the interrupted command to be gone")
        assert len(server.requests) == sent  # the turn stopped: nothing more was asked of the model
        assert not (repo / "second.txt").exists()
        term.line("again")
        term.wait_for("the next turn works")  # and the session goes on
        assert term.exit() == 0
    finally:
        term.close()
    assert "Unknown child process" not in term.transcript and "Traceback" not in term.transcript


def test_ctrl_c_twice_at_an_empty_prompt_exits(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    term = spawn(repo, env, server)
    try:
        term.send("some draft")
        term.send(CTRL_C)  # first: clears the line
        term.settle()
        assert "some draft" not in term.display
        term.send(CTRL_C)
        term.wait_for("Ctrl-C again to exit")
        term.send(CTRL_C)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.parametrize("cols", [60, 120])
def test_typing_during_a_turn_is_queued_shown_and_sent_when_it_ends(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add({"text": "slow answer " * 30, "chunk_size": 4, "delay": 0.05}, {"text": "answer two"})
    term = spawn(repo, env, server, cols=cols)
    try:
        term.line("one")
        term.wait_for("esc to interrupt")
        term.line("typed ahead")
        term.wait_for("queued: typed ahead")
        term.wait_for(r"sent\s+when\s+the\s+turn\s+ends", regex=True)  # the hint may come a frame later
        assert len(server.requests) == 1
        term.wait_for("answer two", timeout=60)
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests[1]["messages"][-1]["content"] == "typed ahead"


def test_a_queued_message_can_be_edited_and_esc_sends_it_at_once(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "long " * 300, "chunk_size": 4, "delay": 0.05}, {"text": "answer to the edit"})
    term = spawn(repo, env, server)
    try:
        term.line("one")
        term.wait_for("esc to interrupt")
        term.line("draft")
        term.wait_for("queued: draft")
        term.send("\x1b[A")  # ↑ on the empty line: the queued message comes back for editing
        term.wait_for("❯ draft")
        term.line(" edited")
        term.wait_for("queued: draft edited")
        term.send(ESC)  # interrupt, and send the queue now
        term.wait_for("answer to the edit")
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests[1]["messages"][-1]["content"] == "draft edited"


def test_after_ctrl_c_a_queued_message_comes_back_to_the_input_line_unsent(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "long " * 300, "chunk_size": 4, "delay": 0.05})
    term = spawn(repo, env, server)
    try:
        term.line("one")
        term.wait_for("esc to interrupt")
        term.line("second thoughts")
        term.wait_for("queued: second thoughts")
        term.send(CTRL_C)
        term.wait_for("back on the input line")
        term.wait_for("❯ second thoughts")
        assert len(server.requests) == 1
        term.send("\x15")  # Ctrl-U: drop it
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 1


def test_a_saved_rule_applies_in_the_next_session(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch saved.txt"}, "s1")]}, {"text": "first done"})
    term = spawn(repo, env, server, "--sandbox", "none")
    try:
        term.line("make it")
        approval(term, 1)
        term.send("s")  # always, and saved in .kimi/config.toml
        term.wait_for("first done")
        assert term.exit() == 0
    finally:
        term.close()
    assert 'allow = ["touch"]' in (repo / ".kimi" / "config.toml").read_text()
    (repo / "saved.txt").unlink()
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch saved.txt"}, "s2")]}, {"text": "second done"})
    again = spawn(repo, env, server, "--sandbox", "none")
    try:
        again.line("make it again")
        again.wait_for("second done")
        assert again.exit() == 0
    finally:
        again.close()
    assert "run this command?" not in again.transcript  # a new session ran it without asking
    assert (repo / "saved.txt").exists()


def test_bad_input_never_shows_a_traceback(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    term = spawn(repo, env, server)
    try:
        term.line("/hepl")
        term.wait_for("Did you mean /help")
        term.line("/image missing.png")
        term.wait_for("image not found")
        term.line("/image")
        term.wait_for("usage: /image PATH")
        term.line("look at @nothere.png")
        term.wait_for_output("nothere.png")
        term.settle()
        assert term.exit() == 0
    finally:
        term.close()
    assert "Traceback" not in term.transcript
    assert f"not a file: {repo}" not in term.transcript
    assert server.requests == []


def test_server_down_gives_a_message_and_the_prompt_again(repo: Path, env: dict) -> None:
    term = spawn(repo, env, None, base_url="http://127.0.0.1:9/v1")
    try:
        term.line("hello")
        term.wait_for("refused the connection", timeout=60)
        term.line("/help")
        term.wait_for("/resume")
        assert term.exit() == 0
    finally:
        term.close()


def test_sigterm_ends_the_interactive_session_with_exit_4(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    import signal

    term = spawn(repo, env, server)
    term.child.kill(signal.SIGTERM)
    assert term.wait_exit(timeout=10) == 4


@pytest.mark.parametrize("cols", [60, 120])
def test_the_status_line_prices_the_pack_first_and_shows_the_turn_at_any_width(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, cols: int
) -> None:
    ask_mode(home)
    server.add({"tool_calls": [tool_call("Shell", {"command": "sleep 600", "timeout": 600}, "z1")]}, {"text": "ok"})
    term = spawn(repo, env, server, cols=cols, extra_env={"KIMI_MODEL": "kimi-k3.1-pro"})
    try:
        idle = term.wait_for(r"pack [\d.]+k tokens ≈", regex=True)
        status = term.status_line()
        assert re.search(r"pack [\d.]+k tokens ≈\$0\.\d{3} \(\$0\.\d{3} cached\)", status), status
        assert "ctx 0/" not in idle
        term.line("wait")
        approval(term, 1)
        term.send("y")
        wait_until(sleepers, timeout=15, what="the command to start")
        term.wait_for(r"Shell \d+:\d\d .*esc to interrupt", regex=True)
        status = term.status_line()
        assert re.search(r"(running )?Shell \d+:\d\d · ↑[\d.]+k ↓\d+ · \$0\.\d{3} · esc to interrupt", status), status
        assert len(status) <= cols
        term.send(CTRL_C)
        term.wait_for("interrupted")
        wait_until(lambda: sleepers() == [], what="the interrupted command to be gone")
        assert term.exit() == 0
    finally:
        term.close()
