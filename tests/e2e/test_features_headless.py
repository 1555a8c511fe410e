"""Plan mode, fork and init headless (`kimi -p`), against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from kimi_cli.util.paths import sessions_dir

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call, tool_results


def session_log(home: Path, repo: Path, session_id: str) -> bytes:
    import os

    old = os.environ.get("KIMI_HOME")
    os.environ["KIMI_HOME"] = str(home / ".kimi")
    try:
        return (sessions_dir(repo) / session_id / "context.jsonl").read_bytes()
    finally:
        if old is None:
            os.environ.pop("KIMI_HOME")
        else:
            os.environ["KIMI_HOME"] = old


def test_plan_prints_the_plan_and_exits_0_then_approving_it_executes(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "sed -i s/-/+/ calc.py"}, "s1"),
                        tool_call("Grep", {"pattern": "def add"}, "g1")]},
        {"text": "PLAN: change `a - b` to `a + b` in calc.py."},
    )  # fmt: skip
    proc = run_kimi(["-p", "fix add", "--plan", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    result = result_json(proc)
    assert result["text"] == "PLAN: change `a - b` to `a + b` in calc.py." and result["mode"] == "plan"
    refused, grep = tool_results(server, 1)
    assert "refused: plan mode is on" in refused and "calc.py" in grep
    assert "a - b" in (repo / "calc.py").read_text()
    fix = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add({"tool_calls": [tool_call("StrReplaceFile", fix, "e1")]}, {"text": "done"})
    proc = run_kimi(["-c", "-p", "The plan is approved: carry it out."], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "a + b" in (repo / "calc.py").read_text()
    users = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"]
    assert users[-2].startswith("[kimi] Plan mode is over") and "PLAN: change" in json.dumps(server.requests[2])


def test_fork_copies_history_and_undo_points_and_leaves_the_original_alone(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "one.txt", "content": "1\n"}, "w1")]}, {"text": "one"})
    first = result_json(run_kimi(["-p", "write one", "--output-format", "json"], repo, env, server))
    original = session_log(home, repo, first["session_id"])
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "two.txt", "content": "2\n"}, "w2")]}, {"text": "two"})
    proc = run_kimi(["--fork", first["session_id"], "-p", "write two", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    forked = result_json(proc)
    assert forked["session_id"] != first["session_id"] and "forked session" in proc.stderr
    assert "write one" in json.dumps(server.requests[2]["messages"])  # same history
    assert session_log(home, repo, first["session_id"]) == original  # the original is untouched
    listing = run_kimi(["undo", "--list", "--session", forked["session_id"]], repo, env)
    assert "write one" in listing.stdout and "write two" in listing.stdout  # its undo points and its own
    assert listing.stdout.count("prompt") == 2
    undo = run_kimi(["undo", "4", "--session", forked["session_id"]], repo, env)
    assert undo.returncode == 0, undo.stderr
    assert not (repo / "one.txt").exists() and not (repo / "two.txt").exists()
    assert session_log(home, repo, first["session_id"]) == original
    meta = json.loads((sessions_dir_for(home, repo) / forked["session_id"] / "meta.json").read_text())
    assert meta["forked_from"] == first["session_id"]


def sessions_dir_for(home: Path, repo: Path) -> Path:
    import os

    os.environ["KIMI_HOME"] = str(home / ".kimi")
    try:
        return sessions_dir(repo)
    finally:
        os.environ.pop("KIMI_HOME")


def test_kimi_init_writes_agents_md_shows_the_diff_and_undo_takes_it_back(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / "AGENTS.md").write_text("# calc\n")
    agents = "# calc\n\n- Test: `python -m pytest -q`\n"
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "AGENTS.md", "content": agents}, "w")]}, {"text": "ok"})
    proc = run_kimi(["init"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "+- Test: `python -m pytest -q`" in proc.stdout and "--- a/AGENTS.md" in proc.stdout
    task = server.requests[0]["messages"][-1]["content"]
    assert task.startswith("Write AGENTS.md") and "<current AGENTS.md>\n# calc" in task
    assert run_kimi(["undo"], repo, env).returncode == 0
    assert (repo / "AGENTS.md").read_text() == "# calc\n"
