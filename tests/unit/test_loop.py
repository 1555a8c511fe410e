"""The agent loop driven in-process by a scripted provider: steps, budgets, the guard, cancellation, usage."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, model_validator

from kimi_cli.agent.events import Notice, StepBegin, StepEnd, TextDelta, ToolCall, ToolOutput, UsageUpdate
from kimi_cli.agent.loop import IMAGES_NOTE, TOOL_OUTPUT_CAP
from kimi_cli.errors import ExitCode
from kimi_cli.llm.types import Completion, Usage
from kimi_cli.session.history import INTERRUPTED
from kimi_cli.tools.base import NOTHING, READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.write_file import WriteFile

from fakes import FakeProvider, Journal, MemoryRecorder, RecordingCheckpointer, agent_for, calls, text, user


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_an_answer_without_tool_calls_ends_the_run_with_its_text(tmp_path: Path) -> None:
    provider = FakeProvider(text("all done"))
    outcome = run(agent_for(provider, [], tmp_path).run(user("hello")))
    assert (outcome.reason, outcome.exit_code, outcome.text, outcome.steps) == ("done", ExitCode.OK, "all done", 1)


def test_a_tool_result_goes_back_to_the_model_under_its_call_id(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    provider = FakeProvider(calls(("ReadFile", {"path": "a.txt"})), text("read it"))
    outcome = run(agent_for(provider, [ReadFile()], tmp_path).run(user("read a.txt")))
    assert outcome.reason == "done"
    tool_message = provider.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "c0"
    assert "alpha" in tool_message["content"]


def test_events_arrive_in_step_order_and_deltas_stay_out_of_the_log(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    provider = FakeProvider(calls(("ReadFile", {"path": "a.txt"})), text("fine"))
    emitted: list[Any] = []
    recorder = MemoryRecorder()
    run(agent_for(provider, [ReadFile()], tmp_path, recorder=recorder, emitted=emitted).run(user("go")))
    kinds = [type(e) for e in emitted]
    assert kinds[:5] == [StepBegin, UsageUpdate, ToolCall, ToolOutput, StepEnd]
    assert TextDelta in kinds
    assert "text_delta" not in {e["type"] for e in recorder.events}
    assert recorder.steps_ended == [1, 2]


def test_the_step_limit_ends_the_run_with_the_budget_exit_code(tmp_path: Path) -> None:
    provider = FakeProvider(*(calls(("Probe", {"key": str(i)})) for i in range(3)))
    agent = agent_for(provider, [Journal("Probe", [])], tmp_path, max_steps=3)
    outcome = run(agent.run(user("loop")))
    assert (outcome.reason, outcome.exit_code, outcome.steps) == ("max_steps", ExitCode.BUDGET, 3)
    assert "--max-steps" in outcome.message


def test_the_token_budget_stops_the_run_after_the_step_that_crosses_it(tmp_path: Path) -> None:
    provider = FakeProvider(calls(("Probe", {}), prompt=600, completion=500), text("never asked"))
    outcome = run(agent_for(provider, [Journal("Probe", [])], tmp_path, max_tokens=1000).run(user("go")))
    assert (outcome.reason, outcome.exit_code) == ("token_budget", ExitCode.BUDGET)
    assert len(provider.requests) == 1


def test_the_same_call_with_the_same_result_stops_the_run_at_the_guards_limit(tmp_path: Path) -> None:
    provider = FakeProvider(*(calls(("Probe", {"key": "same"})) for _ in range(8)))
    outcome = run(agent_for(provider, [Journal("Probe", [], output="unchanged")], tmp_path).run(user("go")))
    assert outcome.reason == "loop_detected" and outcome.exit_code == ExitCode.ERROR
    assert "8 times" in outcome.message
    third = provider.requests[3].messages[-1]["content"]
    assert "returned the same result 3 times" in third


def test_a_call_after_the_guard_stops_is_answered_as_skipped(tmp_path: Path) -> None:
    answers = [calls(("Probe", {"key": "same"})) for _ in range(7)]
    answers.append(calls(("Probe", {"key": "same"}), ("Write", {"key": "after"})))
    log: list[str] = []
    tools = [Journal("Probe", log, output="unchanged"), Journal("Write", log, ToolFacts(writes=True, paths=()))]
    agent = agent_for(FakeProvider(*answers), tools, tmp_path)
    outcome = run(agent.run(user("go")))
    assert outcome.reason == "loop_detected"
    assert agent.messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "skipped: the run was stopped"}
    assert "start Write after" not in log


class CountedParams(BaseModel):
    path: str

    @model_validator(mode="after")
    def _count(self) -> CountedParams:
        Counted.validations += 1
        return self


class Counted(Tool[CountedParams]):
    name = "Counted"
    description = "test tool"
    Params = CountedParams
    facts = ToolFacts(writes=True)
    validations = 0

    def facts_for(self, params: CountedParams) -> ToolFacts:
        return self.facts.writing(params.path)

    async def run(self, params: CountedParams, ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


class NoteHooks:
    """ContextHooks that write down what after_tools was told (the real one is tested in test_context)."""

    context_length = 1_000_000

    def __init__(self) -> None:
        self.told: list[tuple[list[str], bool]] = []

    def after_tools(self, own_paths: list[str], unknown_changes: bool, visited: list[str]) -> str:
        self.told.append((own_paths, unknown_changes))
        return "[kimi] a note" if unknown_changes else ""

    def observe_usage(self, messages: Any, tools: Any, prompt_tokens: int) -> None:
        return None

    def estimate(self, messages: Any, prompt_tokens: int, sent_count: int) -> int:
        return 0

    def should_compact(self, messages: Any, prompt_tokens: int, sent_count: int) -> bool:
        return False

    def bind(self, provider: Any, tell: Any, tools: Any) -> None:
        return None

    async def compact(self, provider: Any, messages: Any, todos: Any, touched: list[str]) -> Any:
        raise AssertionError("not expected")


def test_a_calls_arguments_are_validated_once_on_their_way_through_the_loop(tmp_path: Path) -> None:
    Counted.validations = 0
    provider = FakeProvider(calls(("Counted", {"path": "x.txt"}), ("Counted", {"path": "y.txt"})), text("ok"))
    agent = agent_for(provider, [Counted()], tmp_path, checkpointer=RecordingCheckpointer(), context=NoteHooks())
    run(agent.run(user("go")))
    assert Counted.validations == 2


def test_change_notes_hear_the_named_paths_and_whether_a_call_could_change_unnamed_files(tmp_path: Path) -> None:
    hooks = NoteHooks()
    anything = ToolFacts(writes=True)  # paths unknown, as a command or a coder subagent
    provider = FakeProvider(
        calls(("Counted", {"path": "x.txt"})),
        calls(("Counted", {"path": "y.txt"}), ("Sub", {"key": "coder"})),
        text("ok"),
    )
    tools = [Counted(), Journal("Sub", [], anything)]
    agent = agent_for(provider, tools, tmp_path, context=hooks)
    run(agent.run(user("go")))
    assert hooks.told == [(["x.txt"], False), (["y.txt"], True)]
    assert provider.requests[2].messages[-1] == {"role": "user", "content": "[kimi] a note"}


def test_checkpoints_wrap_a_step_that_writes_and_skip_one_that_only_reads(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    checkpointer = RecordingCheckpointer()
    provider = FakeProvider(
        calls(("ReadFile", {"path": "a.txt"})),
        calls(("WriteFile", {"path": "b.txt", "content": "beta"}), ("ReadFile", {"path": "a.txt"})),
        text("done"),
    )
    agent = agent_for(provider, [ReadFile(), WriteFile()], tmp_path, checkpointer=checkpointer)
    run(agent.run(user("write b")))
    assert checkpointer.turns == [(1, "write b")]
    assert [(phase, step, tools) for phase, step, _, tools in checkpointer.snapshots] == [
        ("before", 2, ["WriteFile"]),
        ("after", 2, ["WriteFile"]),
    ]
    assert (tmp_path / "b.txt").read_text() == "beta"


def test_cancelling_a_step_answers_every_open_call_as_interrupted(tmp_path: Path) -> None:
    started = asyncio.Event()

    class Hang(Tool[Any]):
        name = "Hang"
        description = "test tool"
        Params = CountedParams
        facts = NOTHING

        async def run(self, params: Any, ctx: ToolContext) -> ToolResult:
            started.set()
            await asyncio.Event().wait()  # until cancelled
            return ToolResult("never")

    provider = FakeProvider(calls(("Hang", {"path": "a"}), ("Hang", {"path": "b"})))
    agent = agent_for(provider, [Hang()], tmp_path)

    async def main() -> None:
        task = asyncio.create_task(agent.run(user("hang")))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    answers = [m for m in agent.messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in answers] == [("c0", INTERRUPTED), ("c1", INTERRUPTED)]


def test_missing_usage_is_estimated_and_told_once(tmp_path: Path) -> None:
    unreported = calls(("Probe", {}))
    unreported.usage, unreported.usage_reported = Usage(), False
    final = text("a fairly long answer of some words")
    final.usage, final.usage_reported = Usage(), False
    emitted: list[Any] = []
    agent = agent_for(FakeProvider(unreported, final), [Journal("Probe", [])], tmp_path, emitted=emitted)
    run(agent.run(user("go")))
    notices = [e for e in emitted if isinstance(e, Notice) and "no token usage" in e.message]
    assert len(notices) == 1
    assert agent.usage.completion_tokens >= 2


def test_background_notes_are_told_before_the_next_request(tmp_path: Path) -> None:
    pending = ["task-1 finished (exit 0)"]

    def notes() -> list[str]:
        told, pending[:] = list(pending), []
        return told

    provider = FakeProvider(calls(("Probe", {})), text("ok"))
    run(agent_for(provider, [Journal("Probe", [])], tmp_path, notes=notes).run(user("go")))
    assert provider.requests[0].messages[-1] == {"role": "user", "content": "[kimi] task-1 finished (exit 0)"}
    assert sum("task-1" in str(m.get("content")) for m in provider.requests[1].messages) == 1  # told once


class Pictures(Tool[CountedParams]):
    name = "Pictures"
    description = "test tool"
    Params = CountedParams
    facts = READS

    async def run(self, params: CountedParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"image {params.path}", images=[f"data:image/png;base64,{params.path}"])


def test_images_from_tools_follow_the_results_as_one_user_message(tmp_path: Path) -> None:
    provider = FakeProvider(calls(("Pictures", {"path": "AAA"}), ("Pictures", {"path": "BBB"})), text("seen"))
    agent = agent_for(provider, [Pictures()], tmp_path)
    run(agent.run(user("look")))
    last = provider.requests[1].messages[-1]
    assert last["role"] == "user" and last["content"][0] == {"type": "text", "text": IMAGES_NOTE}
    urls = [p["image_url"]["url"] for p in last["content"][1:]]
    assert urls == ["data:image/png;base64,AAA", "data:image/png;base64,BBB"]


def test_a_huge_tool_output_is_capped_before_it_reaches_the_model(tmp_path: Path) -> None:
    provider = FakeProvider(calls(("Probe", {})), text("ok"))
    run(agent_for(provider, [Journal("Probe", [], output="x" * (TOOL_OUTPUT_CAP * 2))], tmp_path).run(user("go")))
    assert len(provider.requests[1].messages[-1]["content"]) < TOOL_OUTPUT_CAP * 1.1


def test_usage_a_tool_spent_adds_to_the_runs_usage(tmp_path: Path) -> None:
    class Spender(Journal):
        async def run(self, params: Any, ctx: ToolContext) -> ToolResult:
            return ToolResult("report", usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})

    provider = FakeProvider(calls(("Spender", {})), text("ok"))
    agent = agent_for(provider, [Spender("Spender", [])], tmp_path)
    run(agent.run(user("go")))
    assert agent.usage.prompt_tokens == 10 + 100 + 10 and agent.usage.completion_tokens == 5 + 20 + 5


class UrlWatcher(Journal):
    def observe_prompt(self, text: str, ctx: ToolContext) -> None:
        self.log.append(text)


def test_the_users_words_reach_tools_but_a_subagents_task_does_not(tmp_path: Path) -> None:
    log: list[str] = []
    run(agent_for(FakeProvider(text("ok")), [UrlWatcher("W", log)], tmp_path).run(user("see https://a.example")))
    assert log == ["see https://a.example"]
    log.clear()
    sub = agent_for(FakeProvider(text("ok")), [UrlWatcher("W", log)], tmp_path, user_prompts=False)
    run(sub.run(user("see https://b.example")))
    assert log == []


def test_the_answer_cap_is_the_configured_one_or_the_room_left_whichever_is_less(tmp_path: Path) -> None:
    class Window(NoteHooks):
        context_length = 10_000

        def estimate(self, messages: Any, prompt_tokens: int, sent_count: int) -> int:
            return 9_000

    provider = FakeProvider(text("ok"))
    run(agent_for(provider, [], tmp_path, context=Window(), max_output_tokens=4_000).run(user("go")))
    assert provider.requests[0].max_tokens == 1_000
    provider = FakeProvider(text("ok"))
    run(agent_for(provider, [], tmp_path, max_output_tokens=4_000).run(user("go")))
    assert provider.requests[0].max_tokens == 4_000


def test_reasoning_is_kept_on_the_assistant_message(tmp_path: Path) -> None:
    answer = calls(("Probe", {}))
    answer.reasoning = "thinking it over"
    provider = FakeProvider(answer, text("ok"))
    run(agent_for(provider, [Journal("Probe", [])], tmp_path).run(user("go")))
    assistant = provider.requests[1].messages[2]
    assert assistant["reasoning_content"] == "thinking it over" and "content" not in assistant


def test_a_completion_shape_the_api_accepts_back() -> None:
    assert Completion(text="hi").to_message() == {"role": "assistant", "content": "hi"}
    assert Completion(text="  ").to_message() == {"role": "assistant", "content": "  "}
