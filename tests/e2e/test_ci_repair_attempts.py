"""`kimi ci-repair --attempts N`: N whole repairs at once, each in its own worktree and through the same checks
(scratch files, "fixed" = green and committed); one is kept on the run's branch, the others are removed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import git, run_kimi, tool_call

TEST_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"


def red(repo: Path) -> str:
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a test")
    return git(repo, "rev-parse", "HEAD").strip()


def script(server: ScriptedModelServer, k: int, n: int, new: str, *extra: dict) -> None:
    edit = {"path": "calc.py", "edit": {"old": "return a - b", "new": new}}
    server.add(
        {"match": f"attempt {k} of {n}", "tool_calls": [tool_call("StrReplaceFile", edit, f"e{k}"), *extra]},
        {"match": f"attempt {k} of {n}", "text": f"attempt {k}: changed add"},
    )


@pytest.mark.timeout(300)
def test_two_attempts_the_first_fails_the_second_is_kept_and_the_first_removed(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    head = red(repo)
    script(server, 1, 2, "return a * b")  # still red
    scratch = tool_call("WriteFile", {"path": "repro_debug.py", "content": "print(2 + 3)\n"}, "w2")
    script(server, 2, 2, "return a + b", scratch)
    report = tmp_path / "report.md"
    args = ["ci-repair", "--test", TEST_CMD, "--attempts", "2", "--max-attempts", "1", "--no-pack",
            "--report", str(report), "--output-format", "json"]  # fmt: skip
    proc = run_kimi(args, repo, env, server, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    branch = f"kimi/ci-repair-{head[:8]}"
    assert result["status"] == "fixed" and result["branch"] == branch
    # the second attempt went through the single run's checks: its scratch file is left out of its commit
    assert result["files_changed"] == ["calc.py"] and result["left_out"] == ["repro_debug.py"]
    rows = result["worktree_attempts"]
    assert [(r["index"], r["status"], r["exit_code"], r["kept"]) for r in rows] == [
        (1, "not-fixed", 3, False),
        (2, "fixed", 0, True),
    ]
    assert all(r["session_id"] and r["usage"].get("prompt_tokens") for r in rows)
    assert rows[0]["tests_after"]["exit_code"] == 1 and rows[1]["tests_after"]["exit_code"] == 0
    assert result["usage"]["prompt_tokens"] == sum(r["usage"]["prompt_tokens"] for r in rows)
    # one commit, on the kept branch, holding only the fix; the main checkout is on it
    assert git(repo, "rev-list", "--count", f"{head}..{branch}").strip() == "1"
    assert git(repo, "show", "--name-only", "--format=", branch).split() == ["calc.py"]
    assert result["commit"] == git(repo, "rev-parse", branch).strip() == git(repo, "rev-parse", "HEAD").strip()
    assert "return a + b" in (repo / "calc.py").read_text()
    # the other attempt's branch and every worktree are gone
    assert git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/kimi/").split() == [branch]
    assert len(git(repo, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1
    assert not any((repo.parent / f"{repo.name}.worktrees").glob("*"))
    text = report.read_text()
    assert "## kimi ci-repair: fixed" in text and "### Attempts" in text
    assert "| 1 | not-fixed | 3 |" in text and "| 2 | fixed | 0 |" in text
    assert "attempt 1 of 2: not-fixed (exit 3)" in proc.stderr


@pytest.mark.timeout(300)
def test_no_attempt_fixing_keeps_the_best_as_not_fixed(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    head = red(repo)
    script(server, 1, 2, "return a * b")
    script(server, 2, 2, "return a - b - 0")
    args = ["ci-repair", "--test", TEST_CMD, "--attempts", "2", "--max-attempts", "1", "--no-pack",
            "--output-format", "json"]  # fmt: skip
    proc = run_kimi(args, repo, env, server, timeout=280)
    assert proc.returncode == 3, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "not-fixed" and [r["kept"] for r in result["worktree_attempts"]] == [True, False]
    branch = f"kimi/ci-repair-{head[:8]}"
    assert git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/kimi/").split() == [branch]
    assert len(git(repo, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1


def test_attempts_out_of_range_is_a_usage_error(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    red(repo)
    proc = run_kimi(["ci-repair", "--test", "true", "--attempts", "9"], repo, env, server)
    assert proc.returncode == 2 and "--attempts must be between 1 and 8" in proc.stderr
    assert server.requests == []


@pytest.mark.timeout(200)
def test_sigterm_stops_every_attempt_and_still_writes_the_result(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    import signal
    import subprocess

    from support import TEST_KEY, kimi_executable, processes_with, wait_until

    red(repo)
    for k in (1, 2):
        server.add({"match": f"attempt {k} of 2", "text": "thinking", "hang": 60})
    report = tmp_path / "report.md"
    args = ["ci-repair", "--test", TEST_CMD, "--attempts", "2", "--no-pack", "--report", str(report),
            "--output-format", "json"]  # fmt: skip
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen([*kimi_executable(), *args], cwd=repo, env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    wait_until(lambda: len(server.requests) >= 2 or proc.poll() is not None, timeout=120, what="both attempts ask")
    assert len(processes_with("--attempt-of")) == 2  # one child ci-repair per attempt
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err[-3000:]
    assert processes_with("--attempt-of") == []  # none left running
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "error" and result["exit_code"] == 4 and "cancelled" in result["error"]
    assert "## kimi ci-repair: error" in report.read_text()
    assert git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/kimi/").split() == []
    assert len(git(repo, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1
