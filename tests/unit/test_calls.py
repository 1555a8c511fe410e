"""One turn's calls: reads run together, writes are barriers, identical calls share one answer, order holds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from kimi_cli.agent.calls import CallOutcome, CallRunner, plan_batches, plan_sharing
from kimi_cli.agent.guard import LoopGuard
from kimi_cli.tools.base import ToolContext, ToolFacts
from kimi_cli.tools.registry import PreparedCall, ToolRegistry
from kimi_cli.tools.subagent import AgentTool
from kimi_cli.tools.workspace import Workspace

from fakes import FakeProvider, Journal, Rendezvous, agent_for, calls, text, user

WRITES = ToolFacts(writes=True, paths=())


def prepared(registry: ToolRegistry, *items: tuple[str, dict[str, Any]]) -> list[PreparedCall]:
    return [registry.prepare(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(items)]


def test_reads_in_a_row_form_one_batch_and_a_write_stands_alone() -> None:
    registry = ToolRegistry([Journal("R", []), Journal("W", [], WRITES)])
    batch = prepared(registry, ("R", {"key": "1"}), ("R", {"key": "2"}), ("W", {}), ("R", {"key": "3"}))
    assert plan_batches(batch) == [[0, 1], [2], [3]]


def test_consecutive_subagent_calls_form_their_own_batch() -> None:
    async def spawn(task: str, kind: str, files: list[str], isolation: str | None = None) -> tuple[str, dict[str, int]]:
        return task, {}

    registry = ToolRegistry([Journal("R", []), AgentTool(spawn, {"explore": ToolFacts(reads=True)})])
    batch = prepared(registry, ("Agent", {"task": "a"}), ("Agent", {"task": "b"}), ("R", {}))
    assert [c.group for c in batch] == ["subagents", "subagents", "read"]
    assert plan_batches(batch) == [[0, 1], [2]]


def test_an_identical_read_shares_the_first_answer_unless_a_write_came_between() -> None:
    registry = ToolRegistry([Journal("R", []), Journal("W", [], WRITES)])
    batch = prepared(registry, ("R", {"key": "a"}), ("R", {"key": "a"}), ("W", {}), ("R", {"key": "a"}))
    assert plan_sharing(batch) == [0, 0, 2, 3]


def test_argument_order_does_not_make_a_call_different() -> None:
    registry = ToolRegistry([Journal("R", [])])
    one = registry.prepare("1", "R", '{"key": "a"}')
    two = registry.prepare("2", "R", '{ "key":"a" }')
    assert one.key == two.key


def run_turn(registry: ToolRegistry, batch: list[PreparedCall], tmp_path: Path) -> list[CallOutcome]:
    outcomes: list[CallOutcome] = []
    runner = CallRunner(registry, ToolContext(workspace=Workspace(tmp_path)), LoopGuard(), lambda e: None,
                        outcomes.append)  # fmt: skip
    asyncio.run(runner.run(batch))
    return outcomes


def test_reads_of_one_batch_run_at_the_same_time(tmp_path: Path) -> None:
    meeting = Rendezvous(expected=3)
    registry = ToolRegistry([meeting])
    outcomes = run_turn(registry, prepared(registry, *(("Rendezvous", {"key": k}) for k in "abc")), tmp_path)
    assert [o.result.output for o in outcomes] == ["met a", "met b", "met c"]


def test_a_write_waits_for_the_reads_before_it_and_the_reads_after_it_wait_for_the_write(tmp_path: Path) -> None:
    log: list[str] = []
    registry = ToolRegistry([Journal("R", log), Journal("W", log, WRITES)])
    batch = prepared(registry, ("R", {"key": "1"}), ("R", {"key": "2"}), ("W", {"key": "w"}), ("R", {"key": "3"}))
    run_turn(registry, batch, tmp_path)
    w_start, w_end = log.index("start W w"), log.index("end W w")
    assert log.index("end R 1") < w_start and log.index("end R 2") < w_start
    assert w_end < log.index("start R 3")
    assert log.index("start R 2") < log.index("end R 1")  # the two reads overlapped


def test_results_come_back_in_the_order_asked_and_a_shared_answer_is_not_run_again(tmp_path: Path) -> None:
    log: list[str] = []
    registry = ToolRegistry([Journal("R", log)])
    batch = prepared(registry, ("R", {"key": "x"}), ("R", {"key": "y"}), ("R", {"key": "x"}))
    outcomes = run_turn(registry, batch, tmp_path)
    assert [(o.call.id, o.result.output) for o in outcomes] == [("c0", "R x"), ("c1", "R y"), ("c2", "R x")]
    assert log.count("start R x") == 1


def test_subagents_run_at_most_their_tools_limit_at_once(tmp_path: Path) -> None:
    running, peak = [0], [0]
    release = asyncio.Event()

    async def spawn(task: str, kind: str, files: list[str], isolation: str | None = None) -> tuple[str, dict[str, int]]:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        if running[0] == AgentTool.max_concurrent:
            release.set()
        await asyncio.wait_for(release.wait(), 5)
        running[0] -= 1
        return f"report {task}", {}

    registry = ToolRegistry([AgentTool(spawn, {"explore": ToolFacts(reads=True)})])
    batch = prepared(registry, *(("Agent", {"task": str(i)}) for i in range(6)))
    outcomes = run_turn(registry, batch, tmp_path)
    assert peak[0] == AgentTool.max_concurrent
    assert [o.result.output for o in outcomes] == [f"report {i}" for i in range(6)]


def test_bad_calls_are_answered_with_the_reason_and_do_not_run(tmp_path: Path) -> None:
    log: list[str] = []
    provider = FakeProvider(
        calls(("Nope", {}), ("R", "{broken"), ("R", "[1, 2]"), ("R", {"key": 5})),
        text("fine"),
    )
    agent = agent_for(provider, [Journal("R", log)], tmp_path)
    asyncio.run(agent.run(user("go")))
    results = [m["content"] for m in provider.requests[1].messages if m["role"] == "tool"]
    assert results[0].startswith("error: unknown tool 'Nope'. Available tools: R")
    assert "not valid JSON" in results[1] and "must be a JSON object" in results[2]
    assert "invalid arguments for R: key" in results[3]
    assert log == []


def test_a_tool_that_crashes_becomes_an_error_result_and_the_run_goes_on(tmp_path: Path) -> None:
    class Broken(Journal):
        async def run(self, params: Any, ctx: ToolContext) -> Any:
            raise RuntimeError("boom")

    provider = FakeProvider(calls(("B", {})), text("recovered"))
    outcome = asyncio.run(agent_for(provider, [Broken("B", [])], tmp_path).run(user("go")))
    assert outcome.text == "recovered"
    assert provider.requests[1].messages[-1]["content"] == "error: B failed unexpectedly: RuntimeError: boom"
