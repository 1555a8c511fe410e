"""Saving a rule from the terminal (`s` at an approval), findings 4 and 5 of issue 40.

4. A committed `.kimi/config.toml` (or `.kimi` itself) that is a link anywhere: the save wrote through it,
   outside the workspace, and nothing looked wrong (the dangling link was ignored at start). Now the save
   refuses with a message, writes nothing anywhere, and the rule still applies for the session.
5. In a folder with no `.kimi/` yet, the saved `.kimi/config.toml` was deleted by the sandbox's guard after
   the next command, which was blamed for it (exit 1). Now the guard takes kimi's own write into its
   baseline: the rule survives and no command is blamed.

Beside them, the legitimate save: a fresh folder gets its `.kimi/config.toml`, and the next session runs the
command without asking.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_fixtures import backends, sandbox_flags
from terminal import Terminal, spawn

from scripted_server import ScriptedModelServer
from support import tool_call, tool_results


def ask_mode(home: Path) -> None:
    os.makedirs(home / ".kimi", exist_ok=True)
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('\n[approval]\npolicy = "ask"\n')


def approval(term: Terminal, number: int) -> str:
    term.wait_count("run this command?", number)
    return term.wait_for("Enter = no ›")


def save_touch(repo: Path, env: dict, home: Path, server: ScriptedModelServer, *flags: str) -> Terminal:
    """One session: the model runs `touch saved.txt` (answered `s`), then `ls` and `touch again.txt`."""
    ask_mode(home)
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "touch saved.txt"}, "s1")]},
        {"tool_calls": [tool_call("Shell", {"command": "ls -a"}, "s2")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch again.txt"}, "s3")]},
        {"text": "all done"},
    )
    term = spawn(repo, env, server, *flags)
    try:
        term.line("make it")
        approval(term, 1)
        term.send("s")
        approval(term, 2)  # ls is no touch: asked
        term.send("y")
        term.wait_for("all done")  # touch again.txt ran under the rule just kept
        assert term.exit() == 0
    finally:
        term.close()
    return term


@pytest.mark.parametrize("link", [".kimi/config.toml", ".kimi"])
def test_a_saved_rule_never_follows_a_link_out_of_the_workspace(
    link: str, repo: Path, env: dict, home: Path, tmp_path: Path, server: ScriptedModelServer
) -> None:
    outside = tmp_path / "outside"
    target = outside / "config.toml" if link.endswith(".toml") else outside
    if link.endswith(".toml"):
        (repo / ".kimi").mkdir()
        outside.mkdir()
    (repo / link).symlink_to(target)  # dangling: kimi ignores it at start
    term = save_touch(repo, env, home, server, "--sandbox", "none")
    shown = " ".join(term.transcript.split())
    assert "was not saved" in shown and "link" in shown
    assert not (outside / "config.toml").exists() and not (outside.exists() and any(outside.iterdir()))
    assert (repo / link).is_symlink()  # left as it was
    assert (repo / "again.txt").exists()  # the rule still applied for the session


def test_a_rule_saved_in_a_fresh_folder_is_kept_for_the_next_session(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    save_touch(repo, env, home, server, "--sandbox", "none")
    assert 'allow = ["touch"]' in (repo / ".kimi" / "config.toml").read_text()


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])
def test_the_sandbox_guard_keeps_the_rule_kimi_saved_and_blames_no_command(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    assert not (repo / ".kimi").exists()
    save_touch(repo, env, home, server, *sandbox_flags(backend, home))
    assert 'allow = ["touch"]' in (repo / ".kimi" / "config.toml").read_text()
    results = tool_results(server, 3)
    assert ".kimi" in results[1]  # ls -a shows the saved folder: it is there after the command
    assert all("changed" not in r and "put back" not in r for r in results), results
    assert (repo / "saved.txt").exists() and (repo / "again.txt").exists()
