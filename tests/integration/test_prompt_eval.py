"""The prompt lab (bench/prompt_eval.py): its tasks are real bugs, its harness judges honestly, and it runs
end to end against the scripted server and, as a smoke test, against llama-server with a real small model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY

ROOT = ROOT_DIR
sys.path.insert(0, str(ROOT / "bench"))

import prompt_eval  # noqa: E402
from prompt_tasks import TASKS  # noqa: E402


def options(*argv: str) -> object:
    return prompt_eval.parser().parse_args(["--scripted", *argv])


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_each_task_fails_before_its_fix_and_passes_after_it(task: prompt_eval.Task, tmp_path: Path) -> None:
    prompt_eval.build_repo(task, tmp_path)
    assert not prompt_eval.judge(tmp_path, task)[0]
    path, old, new = task.fix
    target = tmp_path / path
    assert target.read_text().count(old) == 1
    target.write_text(target.read_text().replace(old, new))
    passed, output = prompt_eval.judge(tmp_path, task)
    assert passed, output


@pytest.mark.timeout(960)  # bench/prompt_eval.py's whole scripted set: a 900 s budget
def test_the_scripted_run_passes_every_task_with_steps_tokens_and_a_report(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "prompt_eval.py"), "--scripted", "--json", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["summary"][0]["passed"] == len(TASKS) == 10, proc.stderr
    assert all(o["steps"] == 4 and o["tokens"] > 0 for o in data["outcomes"])
    assert "| default | 10/10 | 100% |" in proc.stdout


def test_a_fix_that_weakens_the_test_is_a_failure(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.name == "integer-division")
    cheat = [
        {"tool_calls": [{"id": "w1", "name": "WriteFile",
                         "arguments": {"path": "tests/test_mean.py", "content": "def test_mean():\n    pass\n"}}]},
        {"text": "The tests pass now."},
    ]  # fmt: skip
    outcome = prompt_eval.run_task(task, None, None, tmp_path, options(), script=cheat)
    assert not outcome.passed and "test files changed: tests/test_mean.py" in outcome.note
    assert outcome.steps == 2 and outcome.exit_code == 0


def test_a_prompt_variant_replaces_the_instructions_the_endpoint_receives(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.name == "leap-year")
    variant = tmp_path / "terse.md"
    variant.write_text("You are Kimi. Fix the bug with the fewest steps.\n")
    with ScriptedModelServer(prompt_eval.scripted_entries(task)) as server:
        endpoint = prompt_eval.Endpoint(server.base_url, "kimi-test", TEST_KEY, "openai")
        outcome = prompt_eval.run_task(task, endpoint, variant.resolve(), tmp_path / "work", options())
    assert outcome.passed and outcome.variant == "terse", outcome.note
    system = server.requests[0]["messages"][0]["content"]
    assert system.startswith("You are Kimi. Fix the bug with the fewest steps.") and "## Environment" in system
    assert server.headers[0].get("authorization", server.headers[0].get("Authorization")) == f"Bearer {TEST_KEY}"


@pytest.mark.timeout(1380)  # llama-server's start (120 s) and a 1,200 s budget
@pytest.mark.interop
def test_the_prompt_lab_runs_against_llama_server(tmp_path: Path, llama_server: str) -> None:
    out = tmp_path / "eval.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "prompt_eval.py"), "--base-url", llama_server, "--model", "smollm2",
         "--tasks", "integer-division", "--max-steps", "1", "--max-output-tokens", "256", "--json", str(out)],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(out.read_text())["outcomes"][0]
    assert outcome["steps"] == 1 and outcome["tokens"] > 0, outcome  # the model answered; no pass rate asserted
    assert "| integer-division | default |" in proc.stdout
