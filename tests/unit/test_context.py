"""The session prefix, change notes and compaction, on a real temporary git repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kimi_cli.agent.events import Compacted
from kimi_cli.agent.prefix import AGENTS_MD_HEADER, PrefixBuilder
from kimi_cli.context.compaction import compacted_history, summary_request, transcript
from kimi_cli.context.session_context import SESSION_PACK_INTRO, TASK_PACK_INTRO
from kimi_cli.errors import KimiError
from kimi_cli.llm.failures import ContextOverflow
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.str_replace import StrReplaceFile
from kimi_cli.tools.write_file import WriteFile

from fakes import FakeProvider, agent_for, calls, context_for, text, user


def test_the_prefix_is_prompt_then_agents_md_then_skills_then_pack_then_mode(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("Always run the tests.\n")
    builder = PrefixBuilder(repo, skills=lambda root: "Skills: review, release")
    content = builder.message(pack="PACK", mode="MODE")["content"]
    order = [content.index(s) for s in ("## What you already hold", AGENTS_MD_HEADER, "Skills: review", "PACK", "MODE")]
    assert order == sorted(order) and content.endswith("MODE")


def test_a_mode_only_appends_so_the_shared_prefix_stays_byte_identical(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("Be brief.\n")
    builder = PrefixBuilder(repo)
    plain = builder.message(pack="PACK")["content"]
    with_mode = builder.message(pack="PACK", mode="You are in plan mode.")["content"]
    assert with_mode.startswith(plain)
    shared = "\n\n".join(builder.shared())
    assert builder.message(pack="OTHER PACK", mode="subagent")["content"].startswith(shared)


def test_the_session_message_and_a_subagents_share_their_opening_sections(repo: Path) -> None:
    ctx = context_for(repo)
    session = ctx.system_message("fix add")["content"]
    sub = PrefixBuilder(repo).message(ctx.task_pack("fix add", 0.25), "report back")["content"]
    shared = "\n\n".join(PrefixBuilder(repo).shared())
    assert session.startswith(shared + "\n\n" + SESSION_PACK_INTRO)
    assert sub.startswith(shared + "\n\n" + TASK_PACK_INTRO) and sub.endswith("report back")


def test_a_mode_set_on_the_context_survives_into_the_message(repo: Path) -> None:
    ctx = context_for(repo, pack=False)
    ctx.mode = "Plan only."
    assert ctx.system_message("x")["content"].endswith("Plan only.")
    assert ctx.task_pack("x", 0.25) == ""


def test_an_own_edit_by_name_is_acknowledged_and_an_unnamed_change_becomes_a_note(repo: Path) -> None:
    ctx = context_for(repo)
    ctx.system_message("fix add")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert ctx.after_tools(["calc.py"], unknown_changes=False) == ""
    (repo / "README.md").write_text("# calc, changed by a command\n")
    note = ctx.after_tools([], unknown_changes=True)
    assert note.startswith("[kimi] Files changed") and "README.md" in note and "calc.py" not in note


def test_an_unnamed_change_after_only_named_edits_waits_for_a_call_that_could_cause_it(repo: Path) -> None:
    ctx = context_for(repo)
    ctx.system_message("fix add")
    (repo / "README.md").write_text("# calc, changed elsewhere\n")
    assert ctx.after_tools([str(repo / "calc.py")], unknown_changes=False) == ""
    assert "README.md" in ctx.after_tools([], unknown_changes=True)


def test_a_saved_baseline_reports_what_changed_while_kimi_was_away(repo: Path, tmp_path: Path) -> None:
    ctx = context_for(repo)
    ctx.system_message("fix add")
    session_dir = tmp_path / "session"
    session_dir.mkdir()
    ctx.save_baseline(session_dir)
    (repo / "new.py").write_text("x = 1\n")
    assert "added: new.py" in context_for(repo).resume(session_dir)
    assert context_for(repo).resume(tmp_path / "missing") == ""


def test_the_estimate_adds_what_came_after_the_last_reported_count(repo: Path) -> None:
    ctx = context_for(repo, pack=False, context_length=1000)
    messages = [{"role": "user", "content": "x" * 350}]
    assert ctx.estimate(messages, 0, 0) > 100
    assert ctx.estimate(messages, 500, 1) == 500
    assert ctx.should_compact(messages, 900, 1) and not ctx.should_compact(messages, 100, 1)


def test_the_first_reported_usage_calibrates_the_token_estimate_once(repo: Path) -> None:
    from kimi_cli.context.tokens import load_factor

    ctx = context_for(repo, model="kimi-test")
    messages = [{"role": "user", "content": "word " * 500}]
    raw = ctx.packer.counter.raw("\n".join(str(m["content"]) for m in messages) + "[]")  # type: ignore[union-attr]
    ctx.observe_usage(messages, [], int(raw * 1.5))
    assert load_factor("kimi-test") == pytest.approx(1.5, rel=0.05)
    ctx.observe_usage(messages, [], int(raw * 2.5))
    assert load_factor("kimi-test") == pytest.approx(1.5, rel=0.05)


def test_compaction_keeps_the_task_verbatim_later_asks_todos_and_the_files_written(repo: Path) -> None:
    history = [
        {"role": "system", "content": "old"},
        {"role": "user", "content": "Fix add() in calc.py."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "X", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "y" * 5000},
        {"role": "user", "content": "[kimi] Files changed since ..."},
        {"role": "user", "content": "Also add a test."},
    ]  # fmt: skip
    new = compacted_history({"role": "system", "content": "fresh"}, history, "I did things.",
                            [{"title": "tests", "status": "in_progress"}], ["calc.py"])  # fmt: skip
    assert [m["role"] for m in new] == ["system", "user"] and new[0]["content"] == "fresh"
    body = new[1]["content"]
    assert body.startswith("Fix add() in calc.py.") and "Also add a test." in body
    assert "I did things." in body and "[~] tests" in body and "Files touched so far: calc.py" in body
    assert "[kimi]" not in body
    text_seen = transcript(history)
    assert "[tool call X({})]" in text_seen and "[...]" in text_seen and "old" not in text_seen
    assert summary_request(history)[0]["role"] == "system"


def test_the_loop_compacts_near_the_window_and_tells_the_summariser_which_files_it_wrote(repo: Path) -> None:
    ctx = context_for(repo, context_length=10_000, compact_at=0.5)  # the system prompt alone is ~2k tokens
    system = ctx.system_message("fix add")
    big = "z" * 2_000
    provider = FakeProvider(
        calls(("WriteFile", {"path": "notes.txt", "content": big})),
        calls(("StrReplaceFile", {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}), prompt=6_000),
        text("summary of the work", prompt=0, completion=0),
        text("finished"),
    )
    emitted: list[object] = []
    agent = agent_for(provider, [ReadFile(), WriteFile(), StrReplaceFile()], repo, emitted=emitted, context=ctx,
                      messages=[system])  # fmt: skip
    outcome = asyncio.run(agent.run(user("fix add in calc.py")))
    assert outcome.text == "finished"
    assert any(isinstance(e, Compacted) for e in emitted)
    final = provider.requests[-1].messages
    assert [m["role"] for m in final] == ["system", "user"]
    assert "Files touched so far: notes.txt, calc.py" in final[1]["content"]
    assert "return a + b" in final[0]["content"]  # the repository is packed again from its current state


def test_an_overflow_from_the_server_compacts_and_asks_again_once(repo: Path) -> None:
    ctx = context_for(repo, pack=False)
    # the first request: nothing to summarise yet, so no summary request; the history is fitted and sent again
    provider = FakeProvider(ContextOverflow("too long"), text("answered after compaction"))
    agent = agent_for(provider, [], repo, context=ctx, messages=[ctx.system_message("t")])
    assert asyncio.run(agent.run(user("t"))).text == "answered after compaction"
    assert len(provider.requests) == 2 and provider.requests[1].messages[-1] == user("t")
    provider = FakeProvider(ContextOverflow("too long"), ContextOverflow("still"))
    agent = agent_for(provider, [], repo, context=ctx, messages=[ctx.system_message("t")])
    with pytest.raises(KimiError, match="still too long after compaction"):
        asyncio.run(agent.run(user("t")))
    with pytest.raises(ContextOverflow):
        asyncio.run(agent_for(FakeProvider(ContextOverflow("x")), [], repo).run(user("t")))
