"""The pick among attempts (the passing one with the smallest change) and the flags an attempt's child run keeps."""

from __future__ import annotations

from pathlib import Path

from kimi_cli.frontends.headless.attempts import child_argv
from kimi_cli.worktrees.attempts import Attempt, AttemptRun, CheckResult, choose
from kimi_cli.worktrees.trees import Worktree


def attempt(index: int, passed: bool | None, lines: int) -> Attempt:
    check = None if passed is None else CheckResult("pytest", 0 if passed else 1)
    tree = Worktree(f"a-{index}", Path(f"/w/a-{index}"), f"kimi/a-{index}")
    return Attempt(index, tree, AttemptRun("done", 0, check), diff_lines=lines)


def test_the_passing_attempt_with_the_smallest_change_is_chosen() -> None:
    picked = choose([attempt(1, False, 1), attempt(2, True, 9), attempt(3, True, 4), attempt(4, None, 0)])
    assert picked is not None and picked.index == 3


def test_a_tie_goes_to_the_earlier_attempt_and_none_passing_chooses_none() -> None:
    picked = choose([attempt(1, True, 4), attempt(2, True, 4)])
    assert picked is not None and picked.index == 1
    assert choose([attempt(1, False, 1), attempt(2, None, 0)]) is None


def test_a_check_that_timed_out_does_not_pass() -> None:
    assert not CheckResult("pytest", None).passed and CheckResult("pytest", 0).passed


def test_an_attempt_keeps_the_model_and_sandbox_flags_and_not_those_each_attempt_sets() -> None:
    argv = ["-p", "task", "--attempts", "3", "--check=pytest -q", "--model", "k3", "--sandbox", "bwrap",
            "--output-format", "json", "-w", "/repo", "--continue", "--max-tokens", "900", "--yolo"]  # fmt: skip
    assert child_argv(argv) == ["--model", "k3", "--sandbox", "bwrap", "--yolo"]
