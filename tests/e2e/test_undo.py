"""Checkpoints and `kimi undo`: exact bytes back, the conversation cut at the same step, user edits guarded."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

BLOB = bytes(range(256)) * 4


def five_edit_steps() -> list[dict]:
    return [
        {"tool_calls": [tool_call("WriteFile", {"path": "a.txt", "content": "step one\n"}, "w1")]},
        {
            "tool_calls": [
                tool_call("StrReplaceFile", {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}, "s2")
            ]
        },
        {"tool_calls": [tool_call("WriteFile", {"path": "b.txt", "content": "step three\n"}, "w3")]},
        {"tool_calls": [tool_call("Shell", {"command": "rm README.md blob.bin"}, "sh4")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "a.txt", "content": "step five\n"}, "w5")]},
        {"text": "five edits done"},
    ]


def setup_repo(repo: Path) -> dict[str, bytes]:
    (repo / "blob.bin").write_bytes(BLOB)
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "cache.txt").write_text("ignored\n")
    return {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}


def test_undo_3_restores_exact_bytes_and_continue_sees_the_cut(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    initial = setup_repo(repo)
    server.add(*five_edit_steps())
    proc = run_kimi(["-p", "make five edits", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "README.md").exists() and (repo / "b.txt").exists()
    (repo / "build" / "cache.txt").write_text("ignored, changed later\n")

    undo = run_kimi(["undo", "3"], repo, env)
    assert undo.returncode == 0, undo.stderr
    assert "before step 3" in undo.stdout
    assert (repo / "a.txt").read_text() == "step one\n"
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert not (repo / "b.txt").exists()
    assert (repo / "README.md").read_bytes() == initial["README.md"]
    assert (repo / "blob.bin").read_bytes() == BLOB
    assert (repo / "build" / "cache.txt").read_text() == "ignored, changed later\n"  # ignored: untouched

    server.add({"text": "continued"})
    cont = run_kimi(["-p", "what now?", "--continue", "--output-format", "json"], repo, env, server)
    assert cont.returncode == 0, cont.stderr
    messages = server.requests[-1]["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user", "user"]
    assert messages[4]["tool_calls"][0]["id"] == "s2"
    # the files moved under the conversation (the undo itself): the resumed run says so before the prompt
    note = messages[-2]["content"]
    assert "added: README.md" in note and "added: blob.bin" in note and "deleted: b.txt" in note
    assert messages[-1]["content"] == "what now?"


def test_undo_after_a_user_edit_refuses_without_yes(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(*five_edit_steps()[:1], {"text": "done"})
    assert run_kimi(["-p", "edit", "--output-format", "json"], repo, env, server).returncode == 0
    (repo / "calc.py").write_text("my own work\n")
    refused = run_kimi(["undo", "1"], repo, env)
    assert refused.returncode == 4
    assert "calc.py" in refused.stdout and "--yes" in refused.stderr
    assert (repo / "calc.py").read_text() == "my own work\n" and (repo / "a.txt").exists()
    forced = run_kimi(["undo", "1", "--yes"], repo, env)
    assert forced.returncode == 0, forced.stderr
    assert not (repo / "a.txt").exists()
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


def test_undo_more_steps_than_exist_is_explained(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(*five_edit_steps()[:1], {"text": "done"})
    run_kimi(["-p", "edit"], repo, env, server)
    proc = run_kimi(["undo", "4"], repo, env)
    assert proc.returncode == 1 and "there are 2 undo points (see --list); 4 is out of range" in proc.stderr


def test_checkpoints_never_touch_the_users_git(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    before_index = (repo / ".git" / "index").read_bytes()
    before_refs = sorted(p.name for p in (repo / ".git" / "refs" / "heads").iterdir())
    server.add(*five_edit_steps()[:2], {"text": "done"})
    assert run_kimi(["-p", "edit"], repo, env, server).returncode == 0
    assert (repo / ".git" / "index").read_bytes() == before_index
    assert sorted(p.name for p in (repo / ".git" / "refs" / "heads").iterdir()) == before_refs


def test_branch_flag_switches_before_the_first_edit(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    from support import git

    server.add(*five_edit_steps()[:1], {"text": "done"})
    proc = run_kimi(["-p", "edit", "--branch", "kimi/fix-1", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert git(repo, "branch", "--show-current").strip() == "kimi/fix-1"
    session = result_json(proc)["session_id"]
    meta_files = list((Path(env["HOME"]) / ".kimi" / "sessions").glob(f"*/{session}/meta.json"))
    meta = json.loads(meta_files[0].read_text())
    assert meta["git"]["branch"] == "main" and meta["git"]["dirty"] is False
