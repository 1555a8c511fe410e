"""Issue 30's features through ACP (a real ACP client against `kimi acp` and the scripted server): plan mode
as a session mode with the plan approved by a permission request, and custom commands as the session's
available commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp

from acp_support import RecordingClient, run
from scripted_server import ScriptedModelServer
from support import TESTS_DIR, tool_call, tool_results


class PlanClient(RecordingClient):
    """Approves the plan (and any other permission) with the option it is told to pick."""

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.permissions.append(tool_call)
        wanted = self.answer if any(o.option_id == self.answer for o in options) else options[0].option_id
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=wanted, outcome="selected"))


def test_plan_mode_is_a_session_mode_and_an_approved_plan_runs(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    fix = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", fix, "early")]},
        {"text": "PLAN: change a - b to a + b."},
        {"tool_calls": [tool_call("StrReplaceFile", fix, "s1")]},
        {"text": "Done."},
    )
    client = PlanClient("approve")
    modes: list[str] = []

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        modes.extend(m.id for m in session.modes.available_modes)
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix add")])

    response = run(repo, env, server, client, flow)
    assert response.stop_reason == "end_turn" and modes == ["ask", "auto", "plan", "yolo"]
    assert "refused: plan mode is on" in tool_results(server, 1)[-1]
    assert client.permissions[0].title == "Approve the plan?"
    switched = [u.current_mode_id for u in client.updates if u.session_update == "current_mode_update"]
    assert switched == ["auto"]
    assert "a + b" in (repo / "calc.py").read_text()
    users = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"]
    assert users[-1].startswith("I approve the plan") and "Plan mode is over" in users[-2]


def test_keep_planning_changes_nothing(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "PLAN: something."})
    client = PlanClient("keep_planning")

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("plan it")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"
    assert len(server.requests) == 1 and not [u for u in client.updates if u.session_update == "current_mode_update"]


def test_custom_commands_are_offered_and_expand(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / ".claude/commands").mkdir(parents=True)
    (repo / ".claude/commands/review.md").write_text(
        "---\ndescription: Review with a focus\nargument-hint: [focus]\n---\nReview with a focus on $ARGUMENTS."
    )
    server.add({"text": "Reviewed."})
    client = PlanClient()

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/review naming")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"
    offered = next(u for u in client.updates if u.session_update == "available_commands_update")
    init, review = offered.available_commands
    assert init.name == "init"
    assert review.name == "review" and "Review with a focus" in review.description
    assert review.input.root.hint == "[focus]"
    assert server.requests[0]["messages"][-1]["content"] == "Review with a focus on naming."
    assert "naming" in json.dumps(server.requests[0]["messages"])


def test_hooks_skills_and_init_through_acp(repo: Path, home: Path, env: dict, server: ScriptedModelServer) -> None:
    guard = TESTS_DIR / "fixtures" / "hooks" / "block_rm_rf.py"
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + f'\n[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "python3 {guard}"\n')
    (home / ".kimi/skills/pdf").mkdir(parents=True)
    (home / ".kimi/skills/pdf/SKILL.md").write_text("---\nname: pdf\ndescription: Read PDF files\n---\nbody")
    (repo / "build").mkdir()
    agents = "# calc\n\nTest: `python -m pytest`\n"
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "rm -rf build"}, "s1")]},
        {"text": "kept build"},
        {"tool_calls": [tool_call("WriteFile", {"path": "AGENTS.md", "content": agents}, "w1")]},
        {"text": "wrote it"},
    )
    client = PlanClient()

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("clean up")])
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/init")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"
    assert "rm -rf is not allowed here" in tool_results(server, 1)[-1] and (repo / "build").is_dir()
    assert "- pdf: Read PDF files" in server.requests[0]["messages"][0]["content"]
    assert server.requests[2]["messages"][-1]["content"].startswith("Write AGENTS.md")
    assert (repo / "AGENTS.md").read_text() == agents


def test_session_fork_through_acp_keeps_history_and_leaves_the_original_alone(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    from support import session_log

    server.add({"tool_calls": [tool_call("WriteFile", {"path": "one.txt", "content": "1\n"}, "w1")]}, {"text": "one"},
               {"text": "two in the fork"}, {"text": "two in the original"})  # fmt: skip
    client = RecordingClient()
    logs: dict[str, Any] = {}

    async def flow(conn: Any, proc: Any) -> Any:
        first = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=[acp.text_block("write one")])
        logs["before"] = session_log(home, repo, first.session_id)
        fork = await conn.fork_session(session_id=first.session_id, cwd=str(repo), mcp_servers=[])
        assert fork.session_id != first.session_id and fork.modes is not None
        logs["after_fork"] = session_log(home, repo, first.session_id)
        await conn.prompt(session_id=fork.session_id, prompt=[acp.text_block("second in fork")])
        logs["after_fork_prompt"] = session_log(home, repo, first.session_id)
        await conn.prompt(session_id=first.session_id, prompt=[acp.text_block("second in original")])
        return first.session_id, fork.session_id

    _, fork_id = run(repo, env, server, client, flow)
    forked_request, original_request = json.dumps(server.requests[2]), json.dumps(server.requests[3])
    assert "write one" in forked_request and "second in fork" in forked_request  # the same history, then its own
    assert "second in fork" not in original_request and "write one" in original_request
    assert logs["before"] == logs["after_fork"] == logs["after_fork_prompt"]  # the original is untouched
    assert b"second in fork" in session_log(home, repo, fork_id) and (repo / "one.txt").exists()
