"""Allow and deny rules through a whole `kimi -p --sandbox none` run, where they are the last line of defence:
the shapes bash reads differently from a naive reader (a heredoc end line split by a backslash-newline, a
substitution split the same way) and the options of allowed programs that write or run (`git log --output`,
sed's `e`). Each shape is first shown to be real in bash; beside each, the legitimate command still runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results


def rules(home: Path, allow: list[str], deny: list[str]) -> None:
    """The user's own rules (the user's config needs no trust)."""
    config = home / ".kimi" / "config.toml"
    quoted = lambda items: ", ".join(f'"{i}"' for i in items)  # noqa: E731
    config.write_text(config.read_text() + f"\n[approval]\nallow = [{quoted(allow)}]\ndeny = [{quoted(deny)}]\n")


def run_one(command: str, repo: Path, env: dict, server: ScriptedModelServer) -> str:
    server.add({"tool_calls": [tool_call("Shell", {"command": command}, "c1")]}, {"text": "done"})
    proc = run_kimi(["-p", "go", "--sandbox", "none"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    return tool_results(server, 1)[0]


def heredoc_end_split(victim: Path) -> str:
    return f"cat <<EOF\nhello\nEO\\\nF\nrm -f {victim}\n"


def hidden_substitution(marker: Path) -> str:
    return f"cat <<EOF\n$\\\n(touch {marker})\nEOF\n"


def test_the_shapes_are_real_in_bash(tmp_path: Path) -> None:
    victim, marker = tmp_path / "victim", tmp_path / "marker"
    victim.write_text("the user's file")
    subprocess.run(["bash", "-c", heredoc_end_split(victim)], capture_output=True, timeout=10)
    subprocess.run(["bash", "-c", hidden_substitution(marker)], capture_output=True, timeout=10)
    assert not victim.exists() and marker.exists()


@pytest.mark.parametrize(("allow", "deny"), [(["cat"], ["rm", "touch"]), (["cat"], []), ([], ["rm", "touch"])])
def test_a_heredoc_end_line_split_by_a_backslash_newline_is_read_as_bash_reads_it(
    allow: list[str], deny: list[str], repo: Path, env: dict, home: Path, tmp_path: Path, server: ScriptedModelServer
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("the user's file")
    rules(home, allow, deny)
    result = run_one(heredoc_end_split(victim), repo, env, server)
    assert victim.exists(), result
    assert "not run" in result


@pytest.mark.parametrize(("allow", "deny"), [(["cat"], ["rm", "touch"]), (["cat"], [])])
def test_a_substitution_split_by_a_backslash_newline_in_a_heredoc_is_seen(
    allow: list[str], deny: list[str], repo: Path, env: dict, home: Path, tmp_path: Path, server: ScriptedModelServer
) -> None:
    marker = tmp_path / "marker"
    rules(home, allow, deny)
    result = run_one(hidden_substitution(marker), repo, env, server)
    assert not marker.exists() and "not run" in result


def test_cat_under_an_allow_rule_still_runs(repo: Path, env: dict, home: Path, server: ScriptedModelServer) -> None:
    rules(home, ["cat"], ["rm", "touch"])
    assert "# calc" in run_one("cat README.md", repo, env, server)
    server.requests.clear()
    assert "hello" in run_one("cat <<EOF\nhello\nEOF\n", repo, env, server)


def test_git_log_output_and_sed_e_are_not_approved_by_their_prefix_rules(
    repo: Path, env: dict, home: Path, tmp_path: Path, server: ScriptedModelServer
) -> None:
    outside, marker = tmp_path / "outside-file", tmp_path / "sed-ran"
    rules(home, ["git log", "sed"], [])
    result = run_one(f"git log --output={outside} --format=attacker-text -1", repo, env, server)
    assert not outside.exists() and "`git log --output" in result and "writes files" in result
    server.requests.clear()
    result = run_one(f"sed -n '1e touch {marker}' README.md", repo, env, server)
    assert not marker.exists() and "runs a program" in result


def test_git_log_and_sed_under_their_rules_still_run(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    rules(home, ["git log", "sed"], [])
    assert "initial" in run_one("git log -1 --format=%s", repo, env, server)
    server.requests.clear()
    assert "# calc" in run_one("sed -n 1p README.md", repo, env, server)
