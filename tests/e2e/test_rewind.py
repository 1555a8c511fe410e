"""`/undo` names what it takes back and asks before cutting prompts that changed nothing; `/rewind` lists the
conversation's prompts with their turn and files and puts back the code, the conversation or both (issue 46,
item 6), in a real terminal at 60 and 120 columns against the scripted server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminal import Terminal, spawn

from scripted_server import ScriptedModelServer
from support import tool_call


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def write(server: ScriptedModelServer, name: str, said: str) -> None:
    """One prompt's answers: a WriteFile of NAME, then SAID."""
    call = tool_call("WriteFile", {"path": name, "content": f"{name}\n"}, f"w-{name}")
    server.add({"tool_calls": [call]}, {"text": said})


def prompt(term: Terminal, text: str, answer: str) -> None:
    term.line(text)
    term.wait_for(answer)
    term.wait_for("❯")


def sent(server: ScriptedModelServer) -> str:
    """The user prompts of the last request, as one string."""
    return json.dumps([m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"])


@pytest.mark.parametrize("cols", [60, 120])
def test_undo_names_the_turn_and_asks_before_skipping_prompts_that_changed_nothing(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    write(server, "made.txt", "wrote made")
    server.add({"text": "just talked"}, {"text": "after undo"})
    term = spawn(repo, env, server, cols=cols)
    try:
        prompt(term, "first prompt writes", "wrote made")
        prompt(term, "second prompt talks", "just talked")
        term.line("/undo")
        term.wait_for("undo past them?")
        term.wait_for("delete made.txt")  # what it takes back, named
        term.wait_for_output("turn 1, the prompt")
        term.wait_for_output("changed no file")
        term.wait_for_output("turn 2")
        term.send("n")  # one key: no Enter
        term.wait_for("undo cancelled")
        assert (repo / "made.txt").exists()
        term.line("/undo")
        term.wait_for("undo past them?")
        term.send("y")
        term.wait_for("restored the files")
        assert not (repo / "made.txt").exists()
        prompt(term, "third prompt", "after undo")
        assert term.exit() == 0
    finally:
        term.close()
    users = sent(server)
    assert "third prompt" in users and "first prompt" not in users and "second prompt" not in users


def test_undo_with_nothing_to_skip_does_not_ask(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    write(server, "one.txt", "wrote one")
    term = spawn(repo, env, server, cols=120)
    try:
        prompt(term, "write one", "wrote one")
        term.line("/undo")
        term.wait_for("restored the files")
        assert "undo past them?" not in term.transcript and "turn 1" in term.transcript
        assert term.exit() == 0
    finally:
        term.close()
    assert not (repo / "one.txt").exists()


UP = "\x1b[A"


def rewind_to(term: Terminal, ups: int, key: str, done: str) -> None:
    """/rewind, the mark moved up `ups` lines from the latest prompt, Enter, then the one-key answer."""
    term.line("/rewind")
    term.wait_for("before which prompt?")
    for _ in range(ups):
        term.send(UP)
    term.send("\r")
    term.wait_for("b both, c code only")
    term.send(key)
    term.wait_for(done)


def three_prompts(term: Terminal) -> None:
    prompt(term, "make a", "wrote a")
    prompt(term, "make b", "wrote b")
    prompt(term, "only talk", "talked")


def script(server: ScriptedModelServer, last: str) -> None:
    write(server, "a.txt", "wrote a")
    write(server, "b.txt", "wrote b")
    server.add({"text": "talked"}, {"text": last})


@pytest.mark.parametrize("cols", [60, 120])
def test_rewind_lists_prompts_with_turn_and_files_and_puts_back_both(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    script(server, "after both")
    term = spawn(repo, env, server, cols=cols)
    try:
        three_prompts(term)
        term.line("/rewind")
        term.wait_for("before which prompt?")
        term.wait_for("no file changes")  # the picker: each prompt with its turn and files
        listing = term.display
        assert "a.txt (A)" in listing and "b.txt (A)" in listing and "no file changes" in listing, listing
        for turn in ("1  ", "2  ", "3  "):
            assert turn in listing
        term.send(UP)  # from turn 3 (marked) to turn 2
        term.send("\r")
        term.wait_for("b both, c code only")
        term.send("b")
        term.wait_for("the conversation now ends before turn 2")
        assert (repo / "a.txt").exists() and not (repo / "b.txt").exists()
        prompt(term, "go on", "after both")
        assert term.exit() == 0
    finally:
        term.close()
    users = sent(server)
    assert "make a" in users and "make b" not in users and "only talk" not in users


def test_rewind_code_only_keeps_the_conversation(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    script(server, "after code")
    term = spawn(repo, env, server, cols=120)
    try:
        three_prompts(term)
        rewind_to(term, 2, "c", "the conversation is kept")
        assert not (repo / "a.txt").exists() and not (repo / "b.txt").exists()
        prompt(term, "go on", "after code")
        assert term.exit() == 0
    finally:
        term.close()
    users = sent(server)
    assert "make a" in users and "make b" in users and "only talk" in users and "go on" in users


def test_rewind_conversation_only_keeps_the_files(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    script(server, "after talk")
    term = spawn(repo, env, server, cols=120)
    try:
        three_prompts(term)
        rewind_to(term, 1, "v", "the files are as they are")
        assert (repo / "a.txt").exists() and (repo / "b.txt").exists()
        prompt(term, "go on", "after talk")
        term.line("/rewind")  # the cut prompts are gone from the list
        term.wait_for("before which prompt?")
        term.wait_for(r'2  \S+  "go on"', regex=True)  # the picker: the new prompt is turn 2
        # the picker's rows: after the last answer, above its question (the status line below may name "/rewind")
        listed = term.display.split("after talk")[-1].split("before which prompt?")[0]
        assert '"make a"' in listed and '"make b"' not in listed and '"only talk"' not in listed, listed
        term.send("\x03")  # Ctrl-C (or Esc): none
        term.wait_for_output("→ none")
        assert term.exit() == 0
    finally:
        term.close()
    users = sent(server)
    assert "make a" in users and "make b" not in users and "only talk" not in users and "go on" in users
