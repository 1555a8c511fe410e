"""Hooks in process: the real runner spawns real hook commands; the loop and the gate run as in a session,
with a scripted provider. Each event's field names and exit-code meanings are Claude Code's."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kimi_cli.agent.gate import SessionGate
from kimi_cli.approval.modes.state import ModeState
from kimi_cli.extensions.hooks.config import Hook, matcher_matches
from kimi_cli.extensions.hooks.runner import HookRunner
from kimi_cli.extensions.hooks.session import HookSession
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.todo import SetTodoList
from kimi_cli.tools.write_file import WriteFile

from fakes import FakeProvider, MemoryRecorder, agent_for, calls, text, user
from support import TESTS_DIR

RECORD = TESTS_DIR / "fixtures" / "hooks" / "record.py"


def hook(event: str, args: str, matcher: str | None = None, timeout: float = 20, on_failure: str = "continue") -> Hook:
    return Hook(event, f"{sys.executable} {RECORD} {args}", matcher, timeout, on_failure, "user", 0)


def session_for(root: Path, hooks: list[Hook], log: Path, told: list[str] | None = None, mode: str = "auto"):
    runner = HookRunner(root, hooks, extra_env={"HOOK_LOG": str(log)})
    fake_session = SimpleNamespace(id="s-1", path=root / ".session")
    sink = told if told is not None else []
    return HookSession(runner, lambda: fake_session, lambda: mode, sink.append)


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_matchers_take_names_globs_regexes_and_claude_codes_tool_names() -> None:
    assert matcher_matches(None, "Shell") and matcher_matches("*", "Shell") and matcher_matches("", "Grep")
    assert matcher_matches("Shell", "Shell") and not matcher_matches("Shell", "ShellX")
    assert matcher_matches("mcp__github__*", "mcp__github__create_issue")
    assert not matcher_matches("mcp__github__*", "mcp__gitlab__create_issue")
    assert matcher_matches("mcp__memory__.*", "mcp__memory__store")
    assert matcher_matches("Edit|Write", "WriteFile") and matcher_matches("Edit|Write", "StrReplaceFile")
    assert matcher_matches("Bash", "Shell") and not matcher_matches("Bash", "ReadFile")
    assert not matcher_matches("Write", "ReadFile")


def test_pre_tool_use_gets_claude_codes_fields_and_exit_2_blocks_with_stderr_to_the_model(
    repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    hooks = session_for(repo, [hook("PreToolUse", "exit 2 'no writes today'", "Write")], log)
    provider = FakeProvider(calls(("WriteFile", {"path": "x.txt", "content": "x"})), text("ok"))
    agent = agent_for(provider, [WriteFile(), ReadFile()], repo, gate=SessionGate(hooks=hooks))
    asyncio.run(agent.run(user("write x")))
    assert not (repo / "x.txt").exists()
    result = provider.requests[1].messages[-1]
    assert result["role"] == "tool" and "no writes today" in result["content"]
    (event,) = events(log)
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "WriteFile"
    assert event["tool_input"] == {"path": "x.txt", "content": "x"} and event["tool_use_id"] == "c0"
    assert event["session_id"] == "s-1" and event["cwd"] == str(repo.resolve())
    assert event["permission_mode"] == "default" and event["transcript_path"].endswith("context.jsonl")


def test_updated_input_runs_the_changed_call_revalidated(repo: Path, tmp_path: Path) -> None:
    answer = {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"path": "safe.txt", "content": "y"}}
    }
    hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(answer)}'")], tmp_path / "log")
    provider = FakeProvider(calls(("WriteFile", {"path": "x.txt", "content": "x"})), text("ok"))
    asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks)).run(user("w")))
    assert (repo / "safe.txt").read_text() == "y" and not (repo / "x.txt").exists()
    bad = {"hookSpecificOutput": {"updatedInput": {"path": 7}}}
    hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(bad)}'")], tmp_path / "log")
    provider = FakeProvider(calls(("WriteFile", {"path": "z.txt", "content": "z"})), text("ok"))
    asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks)).run(user("w")))
    assert "not valid" in provider.requests[1].messages[-1]["content"] and not (repo / "z.txt").exists()


def test_deny_blocks_and_ask_without_anyone_to_ask_blocks(repo: Path, tmp_path: Path) -> None:
    for decision in ("deny", "ask"):
        answer = {"hookSpecificOutput": {"permissionDecision": decision, "permissionDecisionReason": "because"}}
        hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(answer)}'")], tmp_path / "log")
        provider = FakeProvider(calls(("WriteFile", {"path": f"{decision}.txt", "content": "x"})), text("ok"))
        asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks)).run(user("w")))
        assert not (repo / f"{decision}.txt").exists()
        assert "blocked" in provider.requests[1].messages[-1]["content"]


def test_ask_asks_the_user_and_a_yes_runs_the_call(repo: Path, tmp_path: Path) -> None:
    asked: list[str] = []

    async def confirm(question: str, rule: str) -> str:
        asked.append(question)
        return "yes"

    answer = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "a big file"}}
    hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(answer)}'")], tmp_path / "log")
    provider = FakeProvider(calls(("WriteFile", {"path": "a.txt", "content": "x"})), text("ok"))
    asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks, confirm=confirm)).run(user("w")))
    assert (repo / "a.txt").exists() and "a big file" in asked[0]


def test_a_crashing_hook_is_reported_and_the_call_runs_unless_on_failure_blocks(repo: Path, tmp_path: Path) -> None:
    told: list[str] = []
    hooks = session_for(repo, [hook("PreToolUse", "exit 1 'guard crashed'")], tmp_path / "log", told)
    provider = FakeProvider(calls(("WriteFile", {"path": "a.txt", "content": "x"})), text("ok"))
    asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks)).run(user("w")))
    assert (repo / "a.txt").exists() and "guard crashed" in told[0]
    hooks = session_for(repo, [hook("PreToolUse", "exit 1 'guard crashed'", on_failure="block")], tmp_path / "log")
    provider = FakeProvider(calls(("WriteFile", {"path": "b.txt", "content": "x"})), text("ok"))
    asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks)).run(user("w")))
    assert not (repo / "b.txt").exists() and "on_failure = block" in provider.requests[1].messages[-1]["content"]


def test_matching_hooks_run_in_parallel(repo: Path, tmp_path: Path) -> None:
    """Each hook waits (at most 8 s) for the other's file: run one after the other, the first would time out."""
    a, b = tmp_path / "a", tmp_path / "b"
    wait = "import pathlib,sys,time; pathlib.Path(sys.argv[1]).touch(); t=time.time()\n" \
           "while not pathlib.Path(sys.argv[2]).exists() and time.time()-t<8: time.sleep(0.02)\n" \
           "sys.exit(0 if pathlib.Path(sys.argv[2]).exists() else 1)"  # fmt: skip
    script = tmp_path / "meet.py"
    script.write_text(wait)
    both = [Hook("UserPromptSubmit", f"{sys.executable} {script} {x} {y}", None, 20, "continue", "user", i)
            for i, (x, y) in enumerate(((a, b), (b, a)))]  # fmt: skip
    told: list[str] = []
    hooks = session_for(repo, both, tmp_path / "log", told)
    verdict = asyncio.run(hooks.prompt("hi"))
    assert verdict.ran == 2 and not told and not verdict.messages


def test_a_hook_past_its_timeout_is_killed_and_reported(repo: Path, tmp_path: Path) -> None:
    told: list[str] = []
    hooks = session_for(repo, [hook("PreToolUse", "sleep 60", timeout=0.5)], tmp_path / "log", told)
    provider = FakeProvider(calls(("WriteFile", {"path": "t.txt", "content": "x"})), text("ok"))
    asyncio.run(agent_for(provider, [WriteFile()], repo, gate=SessionGate(hooks=hooks)).run(user("w")))
    assert (repo / "t.txt").exists()  # a timed-out hook does not block by default
    assert any("timed out after 0.5 s" in t for t in told)


def test_user_prompt_submit_adds_context_or_blocks_the_prompt(repo: Path, tmp_path: Path) -> None:
    hooks = session_for(repo, [hook("UserPromptSubmit", "print 'the ticket is KIMI-42'")], tmp_path / "log")
    provider = FakeProvider(text("ok"))
    asyncio.run(agent_for(provider, [ReadFile()], repo, gate=SessionGate(hooks=hooks)).run(user("fix it")))
    sent = [m["content"] for m in provider.requests[0].messages]
    assert sent[-2] == "fix it" and "KIMI-42" in sent[-1]
    hooks = session_for(repo, [hook("UserPromptSubmit", "exit 2 'no secrets in prompts'")], tmp_path / "log")
    provider, recorder = FakeProvider(), MemoryRecorder()
    agent = agent_for(provider, [ReadFile()], repo, recorder, gate=SessionGate(hooks=hooks))
    outcome = asyncio.run(agent.run(user("my password is hunter2")))
    assert outcome.reason == "blocked" and "no secrets" in outcome.message
    assert not provider.requests and not recorder.messages  # nothing sent, nothing logged


def test_session_start_context_comes_first_and_once(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    hooks = session_for(repo, [hook("SessionStart", "print 'branch: feature-x'")], log)
    provider = FakeProvider(text("one"), text("two"))
    agent = agent_for(provider, [ReadFile()], repo, gate=SessionGate(hooks=hooks, start_source="resume"))
    asyncio.run(agent.run(user("first")))
    asyncio.run(agent.run(user("second")))
    first = [m["content"] for m in provider.requests[0].messages]
    assert "feature-x" in first[1] and first[2] == "first"
    assert [e["source"] for e in events(log)] == ["resume"]


def test_stop_hook_that_blocks_keeps_the_model_going_with_its_reason(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    answer = json.dumps({"decision": "block", "reason": "run the tests first"})
    hooks = session_for(repo, [hook("Stop", f"json '{answer}'")], log)
    provider = FakeProvider(text("done?"), text("now done"), *[text("again")] * 10)
    agent = agent_for(provider, [ReadFile()], repo, gate=SessionGate(hooks=hooks))
    outcome = asyncio.run(agent.run(user("go")))
    assert provider.requests[1].messages[-1]["content"] == "[hook] run the tests first"
    assert outcome.reason == "done"
    flags = [e["stop_hook_active"] for e in events(log)]
    assert flags[0] is False and all(flags[1:]) and len(flags) <= 9  # capped: never forever


def test_post_tool_use_gets_the_response_and_its_context_reaches_the_model(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: ok"}})
    hooks = session_for(repo, [hook("PostToolUse", f"json '{answer}'", "Read")], log)
    provider = FakeProvider(calls(("ReadFile", {"path": "calc.py"})), text("ok"))
    asyncio.run(agent_for(provider, [ReadFile()], repo, gate=SessionGate(hooks=hooks)).run(user("read")))
    result = provider.requests[1].messages[-1]["content"]
    assert "def add" in result and "[hook context] lint: ok" in result
    (event,) = events(log)
    assert "def add" in event["tool_response"]["output"] and event["tool_response"]["is_error"] is False


def test_plan_mode_refuses_writes_by_their_facts_and_runs_reads(repo: Path) -> None:
    mode = ModeState("plan", "auto")
    provider = FakeProvider(
        calls(("ReadFile", {"path": "calc.py"}), ("WriteFile", {"path": "x.txt", "content": "x"}),
              ("SetTodoList", {"todos": [{"title": "fix add"}]})),
        text("1. change - to + in calc.py"),
    )  # fmt: skip
    agent = agent_for(provider, [ReadFile(), WriteFile(), SetTodoList()], repo, gate=SessionGate(mode))
    outcome = asyncio.run(agent.run(user("plan the fix")))
    assert outcome.text.startswith("1.") and not (repo / "x.txt").exists()
    first = provider.requests[0].messages
    assert "Plan mode is on" in first[-2]["content"] and "ReadFile" in first[-2]["content"]
    results = [m["content"] for m in provider.requests[1].messages if m["role"] == "tool"]
    assert "def add" in results[0] and "refused: plan mode is on" in results[1] and "todo list" in results[2]
    assert provider.requests[0].tools == ["ReadFile", "WriteFile", "SetTodoList"]  # the tools block is unchanged
    mode.leave_plan()
    provider.answers.append(text("done"))
    asyncio.run(agent.run(user("go")))
    assert "Plan mode is over" in provider.requests[2].messages[-2]["content"]


def test_updated_input_may_not_turn_a_read_into_a_write(repo: Path, tmp_path: Path) -> None:
    from kimi_cli.tools.git_tool import Git

    answer = {"hookSpecificOutput": {"updatedInput": {"command": "restore", "paths": ["calc.py"]}}}
    (repo / "calc.py").write_text("changed\n")
    hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(answer)}'")], tmp_path / "log")
    provider = FakeProvider(calls(("Git", {"command": "status"})), text("ok"))
    asyncio.run(agent_for(provider, [Git()], repo, gate=SessionGate(hooks=hooks)).run(user("status")))
    assert "may do more than the one asked for" in provider.requests[1].messages[-1]["content"]
    assert (repo / "calc.py").read_text() == "changed\n"  # the restore never ran
    answer = {"hookSpecificOutput": {"updatedInput": {"command": "log", "max_count": 1}}}
    hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(answer)}'")], tmp_path / "log")
    provider = FakeProvider(calls(("Git", {"command": "status"})), text("ok"))
    asyncio.run(agent_for(provider, [Git()], repo, gate=SessionGate(hooks=hooks)).run(user("status")))
    assert "initial" in provider.requests[1].messages[-1]["content"]  # a read into another read runs


def test_session_start_fires_again_after_compaction_and_its_context_follows_the_summary(
    repo: Path, tmp_path: Path
) -> None:
    from kimi_cli.tools.str_replace import StrReplaceFile

    from fakes import context_for

    log = tmp_path / "log.jsonl"
    hooks = session_for(repo, [hook("SessionStart", "print 'remember: run make lint'")], log)
    ctx = context_for(repo, context_length=10_000, compact_at=0.5)
    provider = FakeProvider(
        calls(("WriteFile", {"path": "notes.txt", "content": "z" * 2_000})),
        calls(("StrReplaceFile", {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}), prompt=6_000),
        text("summary of the work", prompt=0, completion=0),
        text("finished"),
    )
    agent = agent_for(provider, [ReadFile(), WriteFile(), StrReplaceFile()], repo, context=ctx,
                      messages=[ctx.system_message("fix add")], gate=SessionGate(hooks=hooks))  # fmt: skip
    assert asyncio.run(agent.run(user("fix add in calc.py"))).text == "finished"
    assert [e["source"] for e in events(log) if e["hook_event_name"] == "SessionStart"] == ["startup", "compact"]
    final = provider.requests[-1].messages
    assert [m["role"] for m in final] == ["system", "user", "user"]
    assert final[2]["content"] == "[hook context] remember: run make lint"


def test_claude_code_shapes_round_trip_for_the_tools_it_shares_with_kimi(tmp_path: Path) -> None:
    """What a Claude Code hook is shown, and an updatedInput it sends back unchanged, is the call kimi made."""
    from kimi_cli.extensions.hooks.claude import claude_event, hooks_in, kimi_input

    calls_made = [
        ("Shell", {"command": "pytest -q", "timeout": 30, "background": True}, "Bash"),
        ("WriteFile", {"path": "src/a.py", "content": "x = 1\n"}, "Write"),
        ("ReadFile", {"path": "src/a.py", "line_offset": 3, "n_lines": 20}, "Read"),
        ("StrReplaceFile", {"path": "a.py", "edit": {"old": "a", "new": "b", "replace_all": False}}, "Edit"),
        ("StrReplaceFile", {"path": "a.py", "edits": [{"old": "a", "new": "b", "replace_all": True}]}, "MultiEdit"),
        ("Grep", {"pattern": "def "}, "Grep"),
        ("mcp__srv__tool", {"q": 1}, "mcp__srv__tool"),
    ]
    for name, args, claude_name in calls_made:
        shown = claude_event({"hook_event_name": "PreToolUse", "tool_name": name, "tool_input": args}, tmp_path)
        assert shown["tool_name"] == claude_name
        if "path" in args:
            assert shown["tool_input"]["file_path"] == str(tmp_path / args["path"])
        assert kimi_input(name, shown["tool_input"], tmp_path) == args, name
    other = {"hook_event_name": "Stop", "stop_hook_active": False}
    assert claude_event(other, tmp_path) == other
    table = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard", "timeout": 5},
                                                          {"type": "prompt", "prompt": "x"}]}, "junk"],
             "NotAnEvent": [{"hooks": [{"type": "command", "command": "x"}]}],
             "Stop": [{"hooks": [{"command": "on-stop"}, {"type": "command", "command": ""}]}]}  # fmt: skip
    found = hooks_in(table, "user")
    assert [(h.event, h.matcher, h.command, h.timeout, h.dialect) for h in found] == [
        ("PreToolUse", "Bash", "guard", 5.0, "claude"),
        ("Stop", None, "on-stop", 60.0, "claude"),
    ]


def test_a_hook_gets_no_api_key_and_no_path_entry_a_sandboxed_command_could_write(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from kimi_cli.hostsafe.programs import sandbox_writable

    root = tmp_path / "ws"
    (root / ".venv" / "bin").mkdir(parents=True)
    sandbox_writable(root)
    monkeypatch.setenv("KIMI_API_KEY", "sk-kimi-SECRET")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-SECRET")
    monkeypatch.setenv("MY_TOKEN", "kept")
    monkeypatch.setenv("PATH", f"{root / '.venv' / 'bin'}:/usr/bin:/bin")
    out = tmp_path / "env.txt"
    command = f'echo "${{KIMI_API_KEY:-none}} ${{OPENAI_API_KEY:-none}} $MY_TOKEN $PATH" > {out}'
    runner = HookRunner(root, [Hook("Stop", command, None, 20, "continue", "user", 0)])
    [run] = asyncio.run(runner.run(runner.hooks, {"hook_event_name": "Stop"}))
    assert run.exit_code == 0, run.problem()
    assert out.read_text().split() == ["none", "none", "kept", "/usr/bin:/bin"]


def _shell_agent(repo: Path, tmp_path: Path, provider: FakeProvider, deny: list[str], hook_answer: dict) -> Any:
    """The real gate, hook runner, registry and Shell tool (no sandbox: the rules are the last line), with the
    session's approval engine asking nobody."""
    from kimi_cli.approval.engine import Approver
    from kimi_cli.approval.rules import Rules
    from kimi_cli.sandbox.backends.none import NoSandbox
    from kimi_cli.sandbox.policy import build_policy
    from kimi_cli.tools.shell import Shell

    private = tmp_path / "private-tmp"
    private.mkdir(exist_ok=True)
    approver = Approver.unattended(Rules.parse(deny=deny), yolo=False)
    shell = Shell(NoSandbox(build_policy(repo, private), 30_000), approver=approver)
    hooks = session_for(repo, [hook("PreToolUse", f"json '{json.dumps(hook_answer)}'")], tmp_path / "log")
    return agent_for(provider, [shell], repo, gate=SessionGate(hooks=hooks))


ALLOW_ANSWER = {"hookSpecificOutput": {"permissionDecision": "allow", "permissionDecisionReason": "looks fine"}}


def test_a_hooks_allow_never_overrides_a_deny_rule(repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("x")
    provider = FakeProvider(calls(("Shell", {"command": f"rm -f {victim}"})), text("ok"))
    asyncio.run(_shell_agent(repo, tmp_path, provider, ["rm"], ALLOW_ANSWER).run(user("clean")))
    assert victim.exists()
    assert "denied by the rule `rm`" in provider.requests[1].messages[-1]["content"]


def test_a_hooks_allow_spares_the_question_for_its_own_call_only(repo: Path, tmp_path: Path) -> None:
    # --sandbox none headless: a command nobody approved is refused; the hook's allow is what runs it
    provider = FakeProvider(calls(("Shell", {"command": "touch allowed.txt"})), text("ok"))
    asyncio.run(_shell_agent(repo, tmp_path, provider, ["rm"], ALLOW_ANSWER).run(user("make it")))
    assert (repo / "allowed.txt").exists()
    provider = FakeProvider(calls(("Shell", {"command": "touch unasked.txt"})), text("ok"))
    asyncio.run(_shell_agent(repo, tmp_path, provider, ["rm"], {}).run(user("make it")))  # the hook says nothing
    assert not (repo / "unasked.txt").exists()
    assert "needs approval" in provider.requests[1].messages[-1]["content"]
