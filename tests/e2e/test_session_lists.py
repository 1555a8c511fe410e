"""Sessions as a user meets them: whole-session counts in `kimi sessions`, nothing listed for a session opened
and left, resume by id prefix or from a picker, a recap of the last exchanges, cost carried over."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

from terminal import Terminal

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

USAGE = {"prompt_tokens": 100_000, "completion_tokens": 1_000, "cached_tokens": 50_000}
K31 = {"KIMI_MODEL": "kimi-k3.1-pro"}


def spawn(repo: Path, env: dict, server: ScriptedModelServer, *args: str, cols: int = 120) -> Terminal:
    term = Terminal.start(repo, env, server, *args, cols=cols, extra_env=K31)
    term.wait_for("❯")
    return term


def two_step_run(repo: Path, env: dict, server: ScriptedModelServer, prompt: str, *extra: str) -> dict:
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")], "usage": USAGE},
               {"text": f"answer to {prompt}", "usage": USAGE})  # fmt: skip
    proc = run_kimi(["-p", prompt, "--output-format", "json", *extra], repo, {**env, **K31}, server)
    assert proc.returncode == 0, proc.stderr
    return result_json(proc)


def test_sessions_lists_whole_session_steps_and_tokens(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    first = two_step_run(repo, env, server, "first task")
    two_step_run(repo, env, server, "second task", "--continue")
    listing = run_kimi(["sessions"], repo, env).stdout.splitlines()
    assert len(listing) == 1 and listing[0].startswith(first["session_id"])
    assert " 4 steps " in listing[0]  # both runs, not the last one's 2
    assert "404k tokens" in listing[0] and "done" in listing[0]


def test_a_session_opened_and_left_is_not_listed(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    term = spawn(repo, env, server)
    assert term.exit() == 0
    assert "resume with" not in term.transcript  # nothing to resume
    assert run_kimi(["sessions"], repo, env).stdout.strip() == "no sessions in this workspace yet"


def test_a_killed_session_is_listed_as_interrupted_not_running(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "slow words\n\n" * 200, "chunk_size": 6, "delay": 0.05})
    term = spawn(repo, env, server)
    term.line("say a lot")
    term.wait_for("slow words")
    term.child.kill(signal.SIGKILL)  # mid-turn: no chance to say it ended
    term.wait_exit()
    listing = run_kimi(["sessions"], repo, env).stdout
    assert "interrupted" in listing and "running" not in listing


def test_continue_recaps_the_last_exchanges_and_carries_the_cost(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    for prompt in ("alpha question", "beta question", "gamma question"):
        server.add({"text": f"answer about {prompt.split()[0]}", "usage": USAGE})
        extra = ["--continue"] if prompt != "alpha question" else []
        assert run_kimi(["-p", prompt, *extra], repo, {**env, **K31}, server).returncode == 0
    term = spawn(repo, env, server, "--continue")
    try:
        screen = term.settle()
        assert re.search(r"resumed session \S+ · 3 steps · 303k tokens · \$0\.\d{3}", screen), screen
        assert "you: beta question" in screen and "kimi: answer about beta" in screen
        assert "you: gamma question" in screen and "kimi: answer about gamma" in screen
        assert "alpha" not in screen  # the last two exchanges, from the start of an exchange
        status = term.status_line()
        cost = float(re.search(r"\$(\d+\.\d+)", status).group(1))  # type: ignore[union-attr]
        assert cost > 0.3, status  # three runs of 100k input tokens at K3.1 rates, not $0.000
        server.add({"text": "fourth", "usage": USAGE})
        term.line("one more")
        term.wait_for("fourth")
        assert term.exit() == 0
    finally:
        term.close()
    assert "resume with: kimi --continue" in term.transcript
    meta = json.loads(next((Path(env["HOME"]) / ".kimi" / "sessions").glob("*/*/meta.json")).read_text())
    assert meta["usage"]["prompt_tokens"] == 400_000 and meta["steps"] == 4


def test_resume_with_an_id_prefix_and_from_a_picker(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "first answer"})
    one = result_json(run_kimi(["-p", "the first", "--output-format", "json"], repo, env, server))["session_id"]
    server.add({"text": "second answer"})
    two = result_json(run_kimi(["-p", "the second", "--output-format", "json"], repo, env, server))["session_id"]
    term = spawn(repo, env, server)
    try:
        term.line(f"/resume {one[:-2]}")  # a prefix that only one session has
        term.wait_for(f"resumed session {one}")
        term.wait_for("you: the first")
        term.line("/resume")  # no id: the picker lists the others (tests/e2e/test_pickers.py for its keys)
        term.wait_for("resume which?")
        term.wait_for(two)
        term.send("\r")  # the only other one, marked
        term.wait_for(f"resumed session {two}")
        assert term.exit() == 0
    finally:
        term.close()
    picked = Terminal.start(repo, env, server, "-r", cols=100)
    try:
        picked.wait_for("resume which?")
        picked.send("\r")  # the newest, marked first
        picked.wait_for("resumed session")
        assert picked.exit() == 0
    finally:
        picked.close()
    assert f"resume with: kimi --resume {one}" in term.transcript or "resume with: kimi" in term.transcript


def test_failed_runs_are_hidden_unless_all_and_columns_stay_aligned(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    two_step_run(repo, env, server, "good task")
    server.add({"error": 400, "body": '{"error": {"message": "bad request"}}'})
    failed = run_kimi(["-p", "doomed task", "--output-format", "json"], repo, env, server)
    assert failed.returncode != 0
    failed_id = result_json(failed)["session_id"]
    listing = run_kimi(["sessions"], repo, env)
    assert failed_id not in listing.stdout and "good task" in listing.stdout
    assert "1 failed run not listed (--all lists them)" in listing.stderr
    shown = run_kimi(["sessions", "--all"], repo, env).stdout.splitlines()
    assert len(shown) == 2
    row = next(line for line in shown if failed_id in line)
    assert "✗ error" in row and "doomed task" in row
    # Every column starts where it starts on the other row, whatever the status says.
    good = next(line for line in shown if failed_id not in line)
    assert row.index(" step") == good.index(" step") and row.index(" tokens") == good.index(" tokens")
    assert row.index("doomed task") == good.index("good task")
    assert run_kimi(["export", failed_id, "--format", "md"], repo, env).returncode == 0  # still reachable by id


def test_prune_removes_sessions_idle_longer_than_the_limit(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    old = two_step_run(repo, env, server, "old task")["session_id"]
    new = two_step_run(repo, env, server, "new task")["session_id"]
    meta_path = next((Path(env["HOME"]) / ".kimi" / "sessions").glob(f"*/{old}/meta.json"))
    meta = json.loads(meta_path.read_text())
    meta["updated"] -= 40 * 86_400  # last touched 40 days ago
    meta_path.write_text(json.dumps(meta))
    pruned = run_kimi(["sessions", "--prune", "--older-than", "30"], repo, env)
    assert pruned.returncode == 0, pruned.stderr
    assert f"removed {old}" in pruned.stdout and "pruned 1 session older than 30 days" in pruned.stderr
    assert not meta_path.parent.exists()
    listing = run_kimi(["sessions"], repo, env).stdout
    assert new in listing and old not in listing
