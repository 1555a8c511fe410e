"""The test suite's own helpers: waiting without fixed sleeps, and skip-locally-fail-in-CI for missing tools."""

from __future__ import annotations

import asyncio
import threading

import pytest

from support import await_until, require, wait_until


def test_wait_until_returns_the_first_truthy_value() -> None:
    box: list[int] = []
    threading.Timer(0.05, box.append, args=(7,)).start()
    assert wait_until(lambda: box and box[0], timeout=10) == 7


def test_wait_until_fails_the_test_at_its_timeout_naming_what_it_waited_for() -> None:
    with pytest.raises(pytest.fail.Exception, match="waiting for the flag"):
        wait_until(lambda: False, timeout=0.05, what="the flag")


def test_await_until_lets_the_loop_run_what_it_waits_for() -> None:
    async def waiting() -> int:
        box: list[int] = []
        asyncio.get_running_loop().call_later(0.05, box.append, 3)  # runs only if the loop is free
        return await await_until(lambda: box and box[0], timeout=10)

    assert asyncio.run(waiting()) == 3
    with pytest.raises(pytest.fail.Exception, match="waiting for the reply"):
        asyncio.run(await_until(lambda: False, timeout=0.05, what="the reply"))


def test_a_missing_tool_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="node is not available: install it"):
        require("node", None, "install it")
    require("node", "/usr/bin/node", "install it")  # present: nothing happens


def test_a_missing_tool_fails_in_ci_unless_ci_runs_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("KIMI_CI_WITHOUT", "vllm")
    with pytest.raises(pytest.fail.Exception, match="CI=true: a missing tool is a failure"):
        require("docker", False, "start dockerd")
    with pytest.raises(pytest.skip.Exception):
        require("vLLM", False, "the engine extra")
