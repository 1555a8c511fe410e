"""The export's reader on logs the real session store writes: notes after tools, approvals on their call, a
compaction's and a repair's replay of the history (not new turns), an undo's cut, subagent usage, a step
with no end, a torn line; and the redactor it uses on the shapes of secrets and on what is no secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_cli.agent.events import (
    ApprovalDecided,
    Compacted,
    StepBegin,
    StepEnd,
    ToolCall,
    ToolOutput,
    TurnEnd,
    UsageUpdate,
)
from kimi_cli.session.export.markdown import render_markdown
from kimi_cli.session.export.reader import load
from kimi_cli.session.store import Session
from kimi_cli.util.redact import redact


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Session.create(workspace, "a task", "kimi-k3.1-pro")


def step(session: Session, number: int, call_id: str, command: str, output: str) -> None:
    session.append_event(StepBegin(number).to_dict())
    session.append_event(
        UsageUpdate(number, {"prompt_tokens": 100, "cached_tokens": 40, "completion_tokens": 5}, {}).to_dict()
    )
    arguments = f'{{"command": "{command}"}}'
    calls = [{"id": call_id, "type": "function", "function": {"name": "Shell", "arguments": arguments}}]
    session.append_message({"role": "assistant", "content": f"step {number}", "tool_calls": calls})
    session.append_event(ToolCall(call_id, "Shell", f'{{"command": "{command}"}}').to_dict())
    session.append_event(ToolOutput(call_id, "Shell", output, False, 3.0, {"kind": "shell", "exit_code": 0}).to_dict())
    session.append_message({"role": "tool", "tool_call_id": call_id, "content": output})
    session.append_message({"role": "user", "content": "[kimi] files changed: a.txt"})
    session.append_event(StepEnd(number, 10.0, 3.0).to_dict())


def test_the_reader_follows_turns_steps_notes_approvals_and_replays(session: Session) -> None:
    session.append_message({"role": "system", "content": "the system prompt"})
    session.append({"kind": "turn", "message_index": 1, "prompt": "first prompt", "time": 1.0})
    session.append_message({"role": "user", "content": "first prompt"})
    step(session, 1, "c1", "make", "built")
    session.append_event(ApprovalDecided("c1", "shell", "make", "allowed", "yes").to_dict())
    session.replace_history([{"role": "system", "content": "s"}, {"role": "user", "content": "SUMMARY old"}],
                            "compaction")  # fmt: skip
    session.append_event(Compacted(900, 12, 2).to_dict())
    step(session, 2, "c2", "make test", "ok")
    session.append({"kind": "subagent", "run": "sub-1", "event": UsageUpdate(1, {"prompt_tokens": 1000}, {}).to_dict()})
    session.append_event(TurnEnd("done", 0, 2).to_dict())
    session.append({"kind": "truncate", "keep": 0, "reason": "repair"})  # a resume re-logs the whole history
    session.append_message({"role": "user", "content": "first prompt"})
    session.append_message({"role": "assistant", "content": "step 1"})
    session.append({"kind": "turn", "message_index": 9, "prompt": "second prompt", "time": 2.0})
    session.append_message({"role": "user", "content": "[resume note] you were here"})
    session.append_message({"role": "user", "content": "second prompt"})
    session.append_event(StepBegin(1).to_dict())  # the second run's loop counts from 1 again
    session.append({"kind": "truncate", "keep": 3, "reason": "undo"})
    session.close()

    export = load(session.path)
    assert [t.prompt for t in export.turns] == ["first prompt", "second prompt"]
    assert [s.number for s in export.steps] == [1, 2, 3]
    first, second, third = export.steps
    assert first.calls[0].approvals[0].answer == "yes" and first.calls[0].exit_code == 0
    assert first.notes == ["[kimi] files changed: a.txt"]
    assert second.compaction is not None and second.compaction.tokens_before == 900
    assert second.subagent_usage.uncached == 1000 and export.subagent_runs == 1
    assert export.turns[0].end is not None and export.turns[0].end.reason == "done"
    assert export.turns[1].notes == ["[resume note] you were here"]
    assert not third.finished and "undo" in third.notices[0]
    assert export.totals()["compactions"] == 1
    markdown = render_markdown(export)
    assert markdown.count("### Step ") == 3 and "the user said yes" in markdown


def test_a_torn_line_is_counted_and_skipped(session: Session) -> None:
    session.append({"kind": "turn", "message_index": 1, "prompt": "go", "time": 1.0})
    session.append_message({"role": "user", "content": "go"})
    session.close()
    with (session.path / "context.jsonl").open("ab") as fh:
        fh.write(b'{"kind": "event", "event": {"type": "step_beg')
    export = load(session.path)
    assert export.skipped_lines == 1 and export.turns[0].prompt == "go" and export.steps == []


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789"),
        ("curl -H 'Authorization: Bearer abc123def456ghi789'", "abc123def456"),
        ('{"password": "correct-horse-battery"}', "correct-horse"),
        ("AWS key AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
        ("https://bob:pa55word@example.com/x?token=t0k3n", "pa55word"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXk"),
    ],
)
def test_the_redactor_hides_secrets_by_their_shape(text: str, hidden: str) -> None:
    assert hidden not in redact(text)


@pytest.mark.parametrize(
    "text",
    ["primary_key: integer_value", "token = get_token()", "sort(key=lambda item: item)", "x = self.token_value",
     "the token expires; bearer authentication is used", "API_KEY: ${API_KEY}", "monkey = bananas_bananas"],
)  # fmt: skip
def test_the_redactor_keeps_what_is_no_secret(text: str) -> None:
    assert redact(text) == text


def test_a_line_or_a_meta_nested_past_the_stack_is_skipped_not_a_crash(session: Session) -> None:
    """One reader of session files (kimi_cli.session.store): a line of 100,000 nested arrays, written by
    anything that can write the folder, raised RecursionError out of `kimi sessions`, resume and export."""
    from kimi_cli.errors import ConfigError
    from kimi_cli.session.store import list_sessions, read_records

    deep = b"[" * 100_000 + b"]" * 100_000
    workspace = Path(session.meta["workspace"])
    session.append({"kind": "turn", "message_index": 1, "prompt": "go", "time": 1.0})
    session.close()
    log = session.path / "context.jsonl"
    with log.open("ab") as fh:
        fh.write(deep + b"\n" + b'{"kind": "turn", "message_index": 2, "prompt": "again", "time": 2.0}\n')
    assert [r["prompt"] for r in read_records(log) if r.get("kind") == "turn"] == ["go", "again"]
    export = load(session.path)
    assert export.skipped_lines == 1 and [t.prompt for t in export.turns] == ["go", "again"]
    assert [i.id for i in list_sessions(workspace)] == [session.path.name]
    (session.path / "meta.json").write_bytes(deep)
    assert [t.prompt for t in load(session.path).turns] == ["go", "again"]  # the log without its meta
    with pytest.raises(ConfigError, match="not a JSON object"):
        Session.open(workspace, session.path.name)
    assert list_sessions(workspace) == []
