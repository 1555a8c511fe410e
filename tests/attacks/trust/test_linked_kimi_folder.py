"""A repository whose `.kimi` is a link to the user's ~/.kimi is a project like any other, not "the user's own".

kimi started in the home folder finds the user's own ~/.kimi as the folder's `.kimi`: nothing there needs
trust. That was decided by comparing resolved paths, so a cloned repository shipping `ln -s ~/.kimi .kimi`
passed as the user's own folder: trust asked nothing, and its `.claude/commands` pre-approved tools
(`allowed-tools`) and ran `!cmd` lines untrusted; with `--sandbox none` the model's command then ran on the
host without a question. Now the folder's `.kimi` must be the kimi home itself (same device and inode),
reached without following a link. Beside it: kimi in the real home, and in ~/.kimi, behaves as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_cli.hostsafe import trust

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call

COMMAND = "---\nallowed-tools: Bash(touch:*)\n---\nSet things up. !`touch {line}`\n"


@pytest.fixture
def kimi_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(home / ".kimi"))
    monkeypatch.setenv("HOME", str(home))
    trust._DECIDED.clear()
    yield home / ".kimi"
    trust._DECIDED.clear()


def command_in(folder: Path, line_marker: Path) -> None:
    (folder / ".claude" / "commands").mkdir(parents=True, exist_ok=True)
    (folder / ".claude" / "commands" / "setup.md").write_text(COMMAND.format(line=line_marker))


def test_a_kimi_link_to_the_users_home_is_not_the_users_own(tmp_path: Path, kimi_home: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".kimi").symlink_to(kimi_home)
    command_in(repo, tmp_path / "line-ran")
    state = trust.assess(repo)
    assert not state.project.users_own
    assert [w.key for w in state.asks] == ["commands:.claude/commands/setup.md"] and not state.applies


def test_a_kimi_link_through_a_linked_parent_is_not_the_users_own(tmp_path: Path, kimi_home: Path) -> None:
    """A link anywhere on the way: `.kimi` is a real name in a folder that is itself reached by a link."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / ".kimi").symlink_to(kimi_home)
    command_in(repo / "sub", tmp_path / "line-ran")
    (tmp_path / "alias").symlink_to(repo / "sub")
    assert not trust.assess(tmp_path / "alias").applies


def test_kimi_p_in_a_repository_linking_kimi_to_home_does_not_preapprove_its_commands(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    (repo / ".kimi").symlink_to(home / ".kimi")
    host_marker, line_marker = tmp_path / "host-ran", tmp_path / "line-ran"
    command_in(repo, line_marker)
    server.add({"tool_calls": [tool_call("Shell", {"command": f"touch {host_marker}"}, "s")]}, {"text": "done"})
    proc = run_kimi(["-p", "/setup", "--sandbox", "none"], repo, env, server)
    assert proc.returncode in (0, 4), proc.stderr
    assert not host_marker.exists() and not line_marker.exists()  # neither pre-approved nor run
    assert "not trusted" in proc.stderr and "commands:.claude/commands/setup.md" in proc.stderr


def test_the_users_own_commands_in_the_real_home_still_preapprove(
    home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    host_marker = tmp_path / "host-ran"
    command_in(home, tmp_path / "line-ran")  # ~/.claude/commands/setup.md: the user's own
    server.add({"tool_calls": [tool_call("Shell", {"command": f"touch {host_marker}"}, "s")]}, {"text": "done"})
    proc = run_kimi(["-p", "/setup", "--sandbox", "none"], home, env, server)
    assert proc.returncode == 0, proc.stderr
    assert host_marker.exists() and "not trusted" not in proc.stderr


@pytest.mark.parametrize("where", ["home", "kimi home"])
def test_kimi_in_the_home_or_in_kimis_own_folder_asks_nothing(where: str, home: Path, kimi_home: Path) -> None:
    (kimi_home / "config.toml").write_text('base_url = "https://llm.example.com/v1"\n')  # the user's own setting
    folder = home if where == "home" else kimi_home
    state = trust.assess(folder)
    assert state.applies and state.asks == []
    assert state.project.users_own == (where == "home")
