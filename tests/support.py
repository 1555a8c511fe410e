"""Helpers every test may use: waiting for something to happen, and what to do when a needed tool is missing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")

TESTS_DIR = Path(__file__).resolve().parent  # tests/: fixtures, scripted servers, node scripts
ROOT_DIR = TESTS_DIR.parent  # the checkout


def wait_until(predicate: Callable[[], T], timeout: float = 15.0, what: str = "", interval: float = 0.02) -> T:
    """Poll `predicate` until it returns something truthy, and return that; fail the test at `timeout`.
    The one way tests wait for something to happen: never a fixed sleep followed by an assertion."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or getattr(predicate, '__name__', 'it')}")
        time.sleep(interval)


def in_ci() -> bool:
    """CI=true (set by .ci/run, and by GitHub Actions and most CI services)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(tool: str, available: object, how: str) -> None:
    """A test that needs `tool` (node, llama-server, vLLM, docker, ...): when it is missing, skip with the reason
    on a developer's machine, and fail in CI, where .ci/run installs it, unless .ci/run lists it in
    KIMI_CI_WITHOUT (tools CI deliberately runs without, such as the 9 GB vLLM)."""
    if available:
        return
    message = f"{tool} is not available: {how}"
    waived = {t.strip().lower() for t in os.environ.get("KIMI_CI_WITHOUT", "").split(",") if t.strip()}
    if in_ci() and tool.lower() not in waived:
        pytest.fail(f"{message} (CI=true: a missing tool is a failure)")
    pytest.skip(message)
