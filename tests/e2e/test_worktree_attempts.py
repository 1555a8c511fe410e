"""`kimi -p TASK --attempts N --check CMD`: N attempts at once, each in its own worktree, session and sandbox;
the passing one with the smallest change is merged, all N are reported, the main checkout is untouched before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import TEST_KEY, git, kimi_executable, processes_with, result_json, run_kimi, tool_call, wait_until

CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
FIXES = {1: "return a * b", 2: "return a + b", 3: "total = a\n    total += b\n    return total"}


def red_repo(repo: Path) -> Path:
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a red test")
    return repo


def script_attempts(server: ScriptedModelServer, fixes: dict[int, str], n: int = 3, delay: float = 0.0) -> None:
    for k, fix in fixes.items():
        edit = {"path": "calc.py", "edit": {"old": "return a - b", "new": fix}}
        server.add(
            {"match": f"attempt {k} of {n}", "tool_calls": [tool_call("StrReplaceFile", edit, f"e{k}")]},
            {"match": f"attempt {k} of {n}", "text": f"attempt {k} done", "hang": delay},
        )


def attempts_env(env: dict[str, str], server: ScriptedModelServer) -> dict[str, str]:
    return {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}


def test_best_of_three_merges_the_one_that_passes(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    red_repo(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    script_attempts(server, FIXES, delay=1.5)
    args = ["-p", "make test_add pass", "--attempts", "3", "--check", CHECK, "--output-format", "json",
            "--yolo", "--no-pack"]  # fmt: skip
    proc = subprocess.Popen([*kimi_executable(), *args], cwd=repo, env=attempts_env(env, server),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    # Every attempt has made its edit (its second request is in flight): the main checkout has none of them.
    wait_until(lambda: len(server.requests) >= 6 or proc.poll() is not None, timeout=90, what="three edits")
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD").strip() == head
    out, err = proc.communicate(timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert proc.returncode == 0, err[-2000:]
    attempts = result["attempts"]
    assert [a["index"] for a in attempts] == [1, 2, 3]
    assert [a["check"]["passed"] for a in attempts] == [False, True, True]
    assert [a["merged"] for a in attempts] == [False, True, False]  # the third passes too, with a bigger change
    assert attempts[1]["diff_lines"] < attempts[2]["diff_lines"]
    assert result["chosen"] == 2 and result["merged"] is True
    for a in attempts:
        assert a["steps"] == 2 and a["session_id"] and a["branch"].startswith("kimi/attempt-")
        assert a["check"]["command"] == CHECK and a["cost"] is not None
    assert "return a + b" in (repo / "calc.py").read_text()
    branches = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/kimi/").split()
    assert sorted(branches) == sorted(a["branch"] for a in attempts)  # all stay, until kimi worktree remove
    listed = run_kimi(["worktree", "list"], repo, env)
    assert listed.returncode == 0 and len(listed.stdout.strip().splitlines()) == 3


def test_no_attempt_passing_merges_nothing(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    red_repo(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    script_attempts(server, {1: "return a * b", 2: "return a - b - 0"}, n=2)
    args = ["-p", "fix it", "--attempts", "2", "--check", CHECK, "--output-format", "json", "--yolo", "--no-pack"]
    proc = run_kimi(args, repo, env, server, timeout=120)
    result = result_json(proc)
    assert proc.returncode == 1 and result["reason"] == "check_failed"
    assert [a["check"]["passed"] for a in result["attempts"]] == [False, False]
    assert result["merged"] is False and git(repo, "rev-parse", "HEAD").strip() == head


def test_attempts_need_a_check(repo: Path, env: dict) -> None:
    proc = run_kimi(["-p", "fix it", "--attempts", "2"], repo, env)
    assert proc.returncode == 2 and "--check" in proc.stderr


def test_sigterm_stops_every_attempt(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    red_repo(repo)
    marker = f"kimi-attempt-hang-{os.getpid()}-{time.monotonic_ns()}"
    for k in (1, 2):
        server.add({"match": f"attempt {k} of 2", "hang": 60, "text": "never"})
    args = ["-p", f"task {marker}", "--attempts", "2", "--check", "true", "--output-format", "json", "--no-pack"]
    proc = subprocess.Popen([*kimi_executable(), *args], cwd=repo, env=attempts_env(env, server),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    wait_until(lambda: len(server.requests) >= 2, timeout=60, what="both attempts asking the model")
    assert len(processes_with(marker)) >= 3  # the parent and its two attempts
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 4 and json.loads(out.strip().splitlines()[-1])["reason"] == "cancelled"
    wait_until(lambda: not processes_with(marker), timeout=20, what="no attempt left running")
