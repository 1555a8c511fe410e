""".git/ and .kimi/ belong to kimi and the user: no file tool writes there for the model, on any path.

The finding (bwrap, as root and as a user): a StrReplaceFile that added `fsmonitor = touch X` under
`[core]` in `.git/config` was applied ("edited .git/config: 1 replacement(s)") and survived the run; the
user's own `git status` afterwards ran it. The file tools run on the host, where the sandbox's read-only
mounts do not reach, and only ACP's editor writes refused the two folders. Now one table
(kimi_cli/hostsafe/protected.py) serves the sandbox, the file tools and ACP: a write through either folder, at any
depth, in any letter case, as named or through a link, is refused with a message that says what to do.
Reading stays allowed; names that merely look alike (`.gitignore`, `my.git.txt`, `git/`) are not refused.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.hostsafe.protected import protected_part
from kimi_cli.session.undo.shadow import ShadowRepo

from scripted_server import ScriptedModelServer
from support import call_tool, git, plain_git, ran, result_json, run_kimi, tool_call, tool_results

LOCAL = [b for b in backends() if b != "docker"]


def prepared(repo: Path, marks: Path) -> Path:
    """A repository with links a command could have made earlier: to .git/config, and to .git itself."""
    (repo / "cfg").symlink_to(".git/config")
    (repo / "gitlink").symlink_to(".git")
    (repo / "sub").mkdir()
    git(repo / "sub", "init", "-q")
    (repo / "app.py").write_text("print('old')\n")
    return marks


def attacks(marks: Path) -> list[tuple[str, dict]]:
    fsmonitor = f"[core]\n\tfsmonitor = echo fsmonitor >> {marks}\n"
    hook = f"#!/bin/sh\necho hook >> {marks}\n"
    return [
        ("StrReplaceFile", {"path": ".git/config", "edit": {"old": "[core]", "new": fsmonitor.rstrip()}}),
        ("WriteFile", {"path": ".KIMI/config.toml", "content": "yolo = true\n"}),
        ("WriteFile", {"path": ".kimi/mcp.json", "content": "{}\n"}),
        ("WriteFile", {"path": "sub/.git/hooks/pre-commit", "content": hook}),
        ("WriteFile", {"path": "sub/.GIT/hooks/pre-commit", "content": hook}),
        ("StrReplaceFile", {"path": "cfg", "edit": {"old": "[core]", "new": fsmonitor.rstrip()}}),
        ("WriteFile", {"path": "gitlink/hooks/pre-commit", "content": hook}),
        ("WriteFile", {"path": "gitlink/config", "content": fsmonitor, "mode": "append"}),
        ("WriteFile", {"path": "sub/../.git/info/attributes", "content": "* filter=x\n"}),
    ]


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_file_tools_refuse_git_and_kimi_folders_and_the_users_git_runs_nothing(
    backend: str, repo: Path, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    marks = prepared(repo, tmp_path / "marks")
    config = (repo / ".git" / "config").read_bytes()
    calls = attacks(marks)
    server.add(*({"tool_calls": [tool_call(name, args, f"a{i}")]} for i, (name, args) in enumerate(calls)),
               {"text": "done"})  # fmt: skip
    proc = run_kimi(["-p", "go", "--sandbox", backend, "--output-format", "json"], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = tool_results(server, len(calls))
    assert len(results) == len(calls)
    for (name, args), text in zip(calls, results, strict=True):
        assert text.startswith("error: refused: ") and "Git tool" in text and "ask the user" in text, (name, args, text)
    assert (repo / ".git" / "config").read_bytes() == config
    assert not (repo / ".kimi").exists() and not (repo / ".KIMI").exists() and not (repo / "sub" / ".GIT").exists()
    assert not (repo / "sub" / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / ".git" / "info" / "attributes").exists()
    assert result_json(proc)["reason"] == "done"
    for folder in (repo, repo / "sub"):
        plain_git(folder, "status")
        plain_git(folder, "commit", "-q", "--allow-empty", "-m", "by the user")
    assert ran(marks) == []


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_ordinary_edits_and_look_alike_names_still_work(
    backend: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    fix = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", fix, "e")]},
        {"tool_calls": [tool_call("WriteFile", {"path": ".gitignore", "content": "*.pyc\n"}, "w1")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "my.git.txt", "content": "notes\n"}, "w2")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "git/hooks/readme.md", "content": "docs\n"}, "w3")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "docs/.kimirc", "content": "x\n"}, "w4")]},
        {"tool_calls": [tool_call("ReadFile", {"path": ".git/config"}, "r")]},
        {"text": "done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "fix", "--sandbox", backend], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = tool_results(server, 6)
    assert all("refused" not in r for r in results), results
    assert "[core]" in results[-1]  # reading .git stays allowed
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (repo / ".gitignore").read_text() == "*.pyc\n" and (repo / "git" / "hooks" / "readme.md").exists()
    assert (repo / "my.git.txt").exists() and (repo / "docs" / ".kimirc").exists()


def test_the_table_matches_any_depth_and_case_and_nothing_that_only_looks_alike() -> None:
    for rel in (".git", ".git/config", "a/b/.git/hooks/x", ".KIMI/config.toml", "x/.Kimi", "sub/.gIt/HEAD"):
        assert protected_part(rel) is not None, rel
    for rel in (".gitignore", "my.git.txt", "git/hooks", ".gitmodules", "kimi/.kimirc", ".github/workflows/x.yml",
                "a.git", ".git-blame-ignore-revs"):  # fmt: skip
        assert protected_part(rel) is None, rel


def test_acp_editor_writes_use_the_same_table(tmp_path: Path) -> None:
    from kimi_cli.frontends.acp.fs_guard import check_editor_write
    from kimi_cli.tools.errors import ToolError

    (tmp_path / "x").mkdir()
    check_editor_write(tmp_path, tmp_path / "x" / "my.git.txt")
    for rel in ("x/.GIT/config", ".Kimi/mcp.json"):
        with pytest.raises(ToolError, match="Git tool"):
            check_editor_write(tmp_path, tmp_path / rel)


def test_undo_restores_the_users_files_but_never_writes_in_kimi_folders(tmp_path: Path, repo: Path) -> None:
    """The user edits .kimi/config.toml during the session; undo brings the model's edit back, leaves that."""
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text("[shell]\ndefault_timeout = 60\n")
    shadow = ShadowRepo(repo, home=tmp_path / "home")
    before = shadow.snapshot()
    (repo / "calc.py").write_text("changed by the model\n")
    (repo / ".kimi" / "config.toml").write_text("[shell]\ndefault_timeout = 90\n")  # the user's own change
    shadow.restore(before)
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert "90" in (repo / ".kimi" / "config.toml").read_text()
    assert [p for p, _ in shadow.last_not_restored] == [".kimi/config.toml"]


def test_call_tool_in_process_refuses_too(repo: Path) -> None:
    """The same refusal without a sandbox at all (ACP and subagents run the same tool code)."""
    out, is_error = call_tool(repo, "WriteFile", {"path": ".git/hooks/post-checkout", "content": "x"})
    assert is_error and "refused: " in out and not (repo / ".git" / "hooks" / "post-checkout").exists()
    out, is_error = call_tool(repo, "WriteFile", {"path": "src/ok.py", "content": "x = 1\n"})
    assert not is_error and (repo / "src" / "ok.py").exists()
    subprocess.run(["git", "status"], cwd=repo, check=True, capture_output=True)
