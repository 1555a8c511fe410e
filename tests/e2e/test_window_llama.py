"""Every request fits the window, against a real llama-server with a small one (issue 41, window discipline).

llama-server runs SmolLM2-135M with `-c 4096`, then `-c 8192`; the workspace holds ~25k o200k tokens of
Python, and a 3-step task reads two large files (each read fills much of a 4k window) and then answers.
The model's choices are scripted through tests/llama_relay.py; every request still reaches llama-server,
which counts it, checks it against its window and evaluates it, and the last answer is SmolLM2's own, written
within the budget kimi sent (at most the relay's REAL_ANSWER_TOKENS of it). Measured on every request:
llama-server's prompt count plus kimi's answer budget never exceeds the window, and the server's log has no
"exceeds the available context size".
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import time
from pathlib import Path

import pytest
from llama_relay import Relay, llama_server

from support import ROOT_DIR, git, run_kimi

pytestmark = [pytest.mark.interop, pytest.mark.timeout(2400)]

WORKSPACE_TOKENS = 25_000
# The run's CPU time, kimi's and llama-server's together, within what two cores give in 90 s: the issue's
# bound, checked as CPU time because the wall time on a shared machine measures the other tenants.
CPU_SECONDS = 2 * 90
TASK = "Read kimi_cli/context/packer.py and kimi_cli/context/select.py, then say in one sentence what they do."
STEPS = [
    {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "kimi_cli/context/packer.py"}}]},
    {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "kimi_cli/context/select.py"}}]},
    {"real": True},  # SmolLM2 writes the answer itself, within kimi's budget
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """~25k o200k tokens of real Python (kimi's own context and llm packages), committed."""
    from kimi_cli.context.tokens import TokenCounter

    counter = TokenCounter(cache_path=tmp_path / "tokens.sqlite", factor=1.0)
    root = tmp_path / "ws"
    total = 0
    for source in sorted((ROOT_DIR / "kimi_cli" / "context").glob("*.py")) + sorted(
        (ROOT_DIR / "kimi_cli" / "llm").glob("*.py")
    ):
        target = root / source.relative_to(ROOT_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        total += counter.raw(source.read_text())
        if total >= WORKSPACE_TOKENS and (root / "kimi_cli/context/select.py").exists():
            break
    assert total >= WORKSPACE_TOKENS, total
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "workspace")
    return root


def run_task(relay: Relay, workspace: Path, env: dict[str, str]) -> tuple[object, dict[str, float], list[dict]]:
    started, llama_cpu = time.monotonic(), relay.llama.cpu_seconds()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = run_kimi(
        ["-p", TASK, "--output-format", "stream-json", "--max-steps", "8"], workspace,
        {**env, "KIMI_BASE_URL": relay.base_url, "KIMI_PROVIDER": "openai", "KIMI_API_KEY": "EMPTY"}, timeout=1800,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    times = {
        "wall": time.monotonic() - started,
        "kimi_cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        "llama_cpu": relay.llama.cpu_seconds() - llama_cpu,
    }
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc, times, events


def check_every_request_fits(relay: Relay, n_ctx: int) -> list[str]:
    sizes = []
    for sent in relay.sent:
        assert sent.status == 200, f"llama-server refused a request: {sent}"
        assert sent.budget and sent.field, f"a request without an answer budget: {sent}"
        assert sent.prompt_tokens is not None
        assert sent.prompt_tokens + sent.budget <= n_ctx, f"prompt + budget over the {n_ctx} window: {sent}"
        kind = "summary" if sent.summary else "step"
        sizes.append(f"{kind}: {sent.prompt_tokens} prompt + {sent.budget} budget ({sent.field})")
    assert not relay.llama.overflow_lines(), relay.llama.overflow_lines()
    return sizes


def report(name: str, sizes: list[str], times: dict[str, float]) -> None:
    line = (f"{name}: {times['wall']:.1f} s wall, CPU kimi {times['kimi_cpu']:.1f} s + llama-server "
            f"{times['llama_cpu']:.1f} s; " + "; ".join(sizes))  # fmt: skip
    print(line)
    out = os.environ.get("KIMI_WINDOW_REPORT")  # bench/RESULTS.md takes these lines
    if out:
        with open(out, "a") as handle:
            handle.write(line + "\n")


def test_a_4k_window_and_a_25k_workspace_never_see_a_request_over_the_window(
    workspace: Path, env: dict[str, str]
) -> None:
    with llama_server(4096) as llama, Relay(llama, [dict(s) for s in STEPS]) as relay:
        proc, times, events = run_task(relay, workspace, env)
        sizes = check_every_request_fits(relay, 4096)
    report("-c 4096", sizes, times)
    assert times["kimi_cpu"] + times["llama_cpu"] <= CPU_SECONDS, times
    assert proc.returncode == 0, proc.stderr[-3000:]  # type: ignore[attr-defined]
    final = events[-1]
    assert final["type"] == "result" and final["reason"] == "done" and final["steps"] == 3
    assert any(s.summary for s in relay.sent), "the two reads should have needed a compaction"
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("pack" in n and "4,096" in n for n in notices), notices  # the 60% pack budget was clamped


def test_an_8k_window_learned_before_the_run_fits_too(workspace: Path, env: dict[str, str]) -> None:
    with llama_server(8192) as llama, Relay(llama, [dict(s) for s in STEPS]) as relay:
        version = run_kimi(["doctor"], workspace, {**env, "KIMI_BASE_URL": relay.base_url,
                                                      "KIMI_PROVIDER": "openai"})  # fmt: skip
        assert "context 8,192 tokens" in version.stdout, version.stdout  # learned, and cached for the run
        proc, times, events = run_task(relay, workspace, env)
        sizes = check_every_request_fits(relay, 8192)
    report("-c 8192", sizes, times)
    # Not held to CPU_SECONDS here (the bound is a benchmark's: bench/RESULTS.md, "Windows against llama-server"):
    # the pack fills what the 8k window leaves (the server counts it), so the run is mostly llama-server's prompt
    # evaluation. The portable build took 268 s of CPU for it; built for the CPU (.ci/run), 86.9 s wall and
    # 1.3 + 167.4 s of CPU on 2026-12-02, inside the 2 x 90 s. The report line above records each run.
    assert proc.returncode == 0, proc.stderr[-3000:]  # type: ignore[attr-defined]
    assert events[-1]["reason"] == "done" and events[-1]["steps"] == 3


def test_a_stale_larger_window_is_corrected_by_the_servers_refusal_once(
    workspace: Path, env: dict[str, str], home: Path
) -> None:
    """kimi believes 8,192 (an earlier server on this address said so); the server now runs 4,096. The first
    request that is too long is refused once; kimi takes the window from the refusal and fits the rest."""
    with llama_server(4096) as llama, Relay(llama, [dict(s) for s in STEPS]) as relay:
        cache = home / ".kimi" / "endpoints.json"
        cache.write_text(json.dumps({f"{relay.base_url} kimi-k3.1-pro": {
            "context_length": 8192, "source": "the server's /props", "checked": time.time()}}))  # fmt: skip
        proc, times, events = run_task(relay, workspace, env)
        refused = [s for s in relay.sent if s.status != 200]
        assert len(refused) <= 1, relay.sent
        assert len(llama.overflow_lines()) == len(refused)
        for sent in relay.sent[relay.sent.index(refused[0]) + 1 :] if refused else relay.sent:
            assert sent.status == 200 and sent.prompt_tokens is not None and sent.budget
            assert sent.prompt_tokens + sent.budget <= 4096, sent
    report("-c 4096, 8192 believed", [f"{len(refused)} refused"], times)
    assert proc.returncode == 0, proc.stderr[-3000:]  # type: ignore[attr-defined]
    assert events[-1]["reason"] == "done"
    if refused:
        notices = [e["message"] for e in events if e["type"] == "notice"]
        assert any("window is 4,096 tokens, not 8,192" in n for n in notices), notices
        assert json.loads(cache.read_text())[f"{relay.base_url} kimi-k3.1-pro"]["context_length"] == 4096
