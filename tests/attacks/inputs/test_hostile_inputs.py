"""Hostile inputs never hang or bloat kimi: huge files, ReDoS patterns, symlink loops, FIFOs, signals, modes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import (
    TEST_KEY,
    call_tool,
    kimi_executable,
    processes_with,
    run_for_peak_rss,
    run_kimi,
    tool_call,
    wait_until,
)

LOG_BYTES = 300_000_000


@pytest.fixture
def hostile(repo: Path) -> Path:
    """A repository with a 300 MB untracked log, a ReDoS bait line and a symlink loop beside the code."""
    subprocess.run(
        f"yes 'INFO 2026-11-30 request served in 12 ms by worker 7' | head -c {LOG_BYTES} > huge.log",
        shell=True, cwd=repo, check=True,
    )  # fmt: skip
    (repo / "bait.txt").write_text("a" * 50_000 + "b\n")
    (repo / "loop1").symlink_to(repo / "loop2")
    (repo / "loop2").symlink_to(repo / "loop1")
    return repo


def test_one_session_over_a_hostile_workspace_answers_every_step_under_400_mb(
    hostile: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "huge.log", "n_lines": 50}, "read")]},
        {"tool_calls": [tool_call("Grep", {"pattern": "worker 7$", "path": "huge.log", "max_results": 5}, "grep")]},
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "huge.log", "edit": {"old": "INFO", "new": "WARN"}})]},
        {"tool_calls": [tool_call("Grep", {"pattern": "(a+)+$", "path": "bait.txt"}, "redos")]},
        {"tool_calls": [tool_call("ReadFile", {"path": "loop1"}, "loop")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "big.txt", "content": "x" * 399 + "\n" * 1}, "w0")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "big.txt", "content": ("y" * 99 + "\n") * 4000}, "w1")]},
        {"text": "survived"},
    )
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    started = time.monotonic()
    code, peak_kib = run_for_peak_rss([*kimi_executable(), "-p", "go through the workspace"], hostile, full_env)
    assert code == 0
    assert peak_kib < 400 * 1024, f"peak RSS {peak_kib // 1024} MB"
    assert time.monotonic() - started < 60
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 7
    assert "INFO 2026-11-30" in results[0] and "read on with line_offset=51" in results[0]
    assert results[1].count("huge.log:") == 5 and "max_results=5" in results[1]
    assert "over the 20 MiB limit" in results[2]
    assert results[3] == "no matches for '(a+)+$'"  # the classic ReDoS bait: linear time in rg
    assert "cannot resolve" in results[4] or "loop" in results[4].lower()
    assert (hostile / "big.txt").stat().st_size == 400_000
    assert os.path.getsize(hostile / "huge.log") == LOG_BYTES  # never rewritten


def test_a_checkpoint_beside_a_300_mb_untracked_file_leaves_it_out_and_undo_says_so(
    hostile: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "new.py", "content": "x = 1\n"}, "w")]}, {"text": "ok"})
    assert run_kimi(["-p", "add a file"], hostile, env, server).returncode == 0
    listing = run_kimi(["undo", "--list"], hostile, env)
    assert "not covered (too large to snapshot): huge.log, 300 MB" in listing.stdout
    undo = run_kimi(["undo", "--yes"], hostile, env)
    assert undo.returncode == 0, undo.stderr
    assert not (hostile / "new.py").exists() and os.path.getsize(hostile / "huge.log") == LOG_BYTES


def spawn(repo: Path, env: dict, server: ScriptedModelServer) -> subprocess.Popen[str]:
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    return subprocess.Popen(
        [*kimi_executable(), "-p", "wait", "--output-format", "stream-json"],
        cwd=repo, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_tool_call(proc: subprocess.Popen[str], marker: str) -> None:
    """Until the tool call is announced and a process naming `marker` (the tool's child) runs."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "tool_call":
            wait_until(lambda: processes_with(marker), what=f"a process naming {marker}")
            return
    raise AssertionError("no tool call")


@pytest.mark.parametrize("tool", ["Grep"])  # ReadFile refuses a FIFO at once (fstat on a non-blocking open)
def test_sigterm_while_a_tool_is_stuck_exits_4_at_once(
    tool: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    # A FIFO nobody writes: Grep's rg child blocks in open().
    os.mkfifo(repo / "stuck.fifo")
    server.add({"tool_calls": [tool_call(tool, {"path": "stuck.fifo", **({"pattern": "x"} if tool == "Grep" else {})},
                                         "stuck")]})  # fmt: skip
    proc = spawn(repo, env, server)
    wait_for_tool_call(proc, "stuck.fifo")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)
    assert time.monotonic() - sent < 10  # generous, and still far below Grep's own 20 s timeout
    assert proc.returncode == 4
    logs = list((home / ".kimi" / "sessions").glob("*/*/context.jsonl"))
    records = [json.loads(line) for line in logs[0].read_text().splitlines()]
    tool_msgs = [r["message"] for r in records if r.get("kind") == "message" and r["message"]["role"] == "tool"]
    assert tool_msgs and tool_msgs[-1]["content"].startswith("interrupted")


def test_new_files_follow_the_umask_and_existing_files_keep_mode_and_links(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "private.txt").write_text("secret\n")
    (root / "private.txt").chmod(0o600)
    (root / "target.txt").write_text("old\n")
    (root / "link.txt").symlink_to("target.txt")
    old = os.umask(0o022)
    try:
        assert not call_tool(root, "WriteFile", {"path": "new.txt", "content": "hi\n"})[1]
        assert not call_tool(root, "WriteFile", {"path": "private.txt", "content": "still secret\n"})[1]
        assert not call_tool(root, "StrReplaceFile", {"path": "link.txt", "edit": {"old": "old", "new": "new"}})[1]
    finally:
        os.umask(old)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "private.txt").stat().st_mode) == 0o600
    assert (root / "link.txt").is_symlink() and (root / "target.txt").read_text() == "new\n"


def test_grep_runs_ripgrep_with_ignore_files_and_options(tmp_path: Path) -> None:
    from kimi_cli.tools.grep_tool import GrepParams, rg_argv

    params = GrepParams(pattern="a+", ignore_case=True, context=2, hidden=True, glob="*.py")
    assert rg_argv("rg", params, ".", kimiignore=True) == [
        "rg", "--line-number", "--with-filename", "--no-heading", "--color", "never", "--no-messages",
        "--no-require-git", "--no-config", "--ignore-case", "--context", "2", "--hidden",
        "--ignore-file", ".kimiignore", "--glob", "*.py", "--regexp", "a+", "--", ".",
    ]  # fmt: skip


def test_kimiignore_and_no_ignore(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "secret").mkdir(parents=True)
    (root / "secret" / "k.txt").write_text("needle\n")
    (root / "open.txt").write_text("needle\n")
    (root / ".kimiignore").write_text("secret/\n")
    out, _ = call_tool(root, "Grep", {"pattern": "needle"})
    assert out.splitlines() == ["open.txt:1:needle"]
    out, _ = call_tool(root, "Grep", {"pattern": "needle", "no_ignore": True})
    assert sorted(out.splitlines()) == ["open.txt:1:needle", "secret/k.txt:1:needle"]
