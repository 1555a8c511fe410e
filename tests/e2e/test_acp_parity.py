"""ACP parity with the terminal: the same approval policy (network included, deny rules, no `always` for a
line that is not one plain command), editor writes kept out of .git/ and .kimi/, and the client's MCP
servers (with their secrets) passed without a file left behind."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import acp

from acp_support import EditorClient, RecordingClient, run
from scripted_server import ScriptedModelServer
from support import TESTS_DIR, tool_call, tool_results, wait_until

SERVER = str(TESTS_DIR.joinpath("mcp_hostile_server.py"))


def user_config(home: Path, text: str) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write("\n" + text)


def simple_flow(repo: Path, mcp_servers: list[Any] | None = None) -> Any:
    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=mcp_servers or [])
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])

    return flow


def test_with_the_network_allowed_a_sandboxed_command_asks_like_in_the_terminal(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    user_config(home, "[sandbox]\nallow_network = true\n")
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch net.txt"}, "n1")]}, {"text": "ok"})
    client = RecordingClient("reject")
    assert run(repo, env, server, client, simple_flow(repo)).stop_reason == "end_turn"
    assert len(client.permissions) == 1 and "touch net.txt" in client.permissions[0].title
    assert not (repo / "net.txt").exists()


def test_without_the_network_a_sandboxed_command_runs_without_a_question(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch plain.txt"}, "p1")]}, {"text": "ok"})
    client = RecordingClient("reject")
    assert run(repo, env, server, client, simple_flow(repo)).stop_reason == "end_turn"
    assert client.permissions == [] and (repo / "plain.txt").exists()


def test_deny_rules_and_chained_commands_follow_the_terminals_rules(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    user_config(home, '[approval]\npolicy = "ask"\ndeny = ["rm"]\n')
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "env /bin/rm -f calc.py"}, "d1")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch a.txt && touch b.txt"}, "c1")]},
        {"text": "ok"},
    )
    client = RecordingClient("allow_once")
    original = client.request_permission
    seen: list[list[str]] = []

    async def request_permission(session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
        seen.append([o.option_id for o in options])
        return await original(session_id, tool_call, options, **kw)

    client.request_permission = request_permission  # type: ignore[method-assign]
    assert run(repo, env, server, client, simple_flow(repo)).stop_reason == "end_turn"
    assert (repo / "calc.py").exists()
    assert "denied by the rule `rm`" in tool_results(server, 1)[0]
    assert seen == [["allow_once", "reject"]]  # asked for the chain, with no `always`
    assert (repo / "a.txt").exists() and (repo / "b.txt").exists()


def test_editor_writes_into_git_and_kimi_are_refused_and_others_go_through_the_editor(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": ".git/config", "content": "[core]\n\tfsmonitor = ./x\n"}, "g1"),
                        tool_call("WriteFile", {"path": ".kimi/config.toml", "content": "yolo = true\n"}, "k1"),
                        tool_call("WriteFile", {"path": ".GIT/hooks/pre-commit", "content": "x"}, "g2"),
                        tool_call("WriteFile", {"path": "notes.txt", "content": "hello\n"}, "w1")]},
        {"text": "done"},
    )  # fmt: skip
    client = EditorClient(repo)
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    assert run(repo, env, server, client, simple_flow(repo), caps).stop_reason == "end_turn"
    results = tool_results(server, 1)
    # refused by the file tools (kimi_cli/hostsafe/protected.py) before the editor's own guard is reached
    assert all("refused" in r and (".git/" in r.casefold() or ".kimi/" in r) for r in results[:3]), results
    assert client.writes == [(str(repo / "notes.txt"), "hello\n")]
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert not (repo / ".kimi").exists()


def test_client_mcp_servers_start_and_leave_no_file_with_their_secrets(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    from acp.schema import EnvVariable, McpServerStdio

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    secret = "sk-acp-SECRET-123456789"
    servers = [McpServerStdio(name="hostile", command=sys.executable, args=[SERVER],
                              env=[EnvVariable(name="API_TOKEN", value=secret)])]  # fmt: skip
    # The first request waits for MCP servers up to [mcp] startup_timeout; one later than that has its tools
    # join the end of the tools block (or messages[].tools on K3 models) once it is ready.
    server.add({"tool_calls": [tool_call("mcp__hostile__osc", {}, "m1")]}, {"text": "ok"})
    client = RecordingClient()
    assert run(repo, {**env, "TMPDIR": str(tmp)}, server, client, simple_flow(repo, servers)).stop_reason == "end_turn"
    assert "mcp__hostile__osc" in server.offered_tools(-1)  # the client's server was configured and started
    leftovers = [p for p in [*tmp.rglob("*"), *Path("/tmp").glob("kimi-acp-mcp-*")] if p.is_file()]
    assert not any(secret in p.read_text(errors="replace") for p in leftovers if p.stat().st_size < 1_000_000)
    assert not list(Path("/tmp").glob("kimi-acp-mcp-*"))


def test_the_notification_hook_fires_when_the_editor_is_asked(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path, tmp_path: Path
) -> None:
    import json

    record = TESTS_DIR / "fixtures" / "hooks" / "record.py"
    user_config(home, f'[approval]\npolicy = "ask"\n\n[[hooks.Notification]]\ncommand = "{sys.executable} {record}"\n')
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch asked.txt"}, "n1")]}, {"text": "ok"})
    client = RecordingClient("reject")
    log = tmp_path / "hook.log"
    assert run(repo, {**env, "HOOK_LOG": str(log)}, server, client, simple_flow(repo)).stop_reason == "end_turn"
    assert len(client.permissions) == 1
    wait_until(lambda: log.exists() and log.read_text().strip(), 30, "the Notification hook to run")  # not waited for
    [event] = [json.loads(line) for line in log.read_text().splitlines()]
    assert event["hook_event_name"] == "Notification" and "touch asked.txt" in event["message"]
