"""`kimi --help` stays light: the heavy libraries load only when a run needs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripted_server import ScriptedModelServer

HEAVY = ("openai", "docker", "git", "httpx", "pydantic", "tree_sitter", "vllm", "lsprotocol", "kimi_cli.extensions.lsp")


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys; sys.argv = ['kimi', '--help']\n"
        "from kimi_cli.cli.main import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_version_prints_the_version() -> None:
    from kimi_cli import __version__

    out = subprocess.run([sys.executable, "-m", "kimi_cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == f"kimi {__version__}\n"  # alone: the report is `kimi doctor`


HTTP_STACK = ("httpx", "httpcore", "h11", "anyio")
NOT_FOR_A_PLAIN_RUN = (*HTTP_STACK, "typer")  # kimi_cli/cli/headless_args.py reads `-p`'s flags without Typer


def test_a_headless_run_reaches_the_model_without_the_httpx_stack(
    repo: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    """Issue 47: the default transport is the standard library's (kimi_cli/llm/http1.py); httpx, httpcore, h11 and
    anyio were ~0.2 s of a trivial run's imports. With a proxy variable set, httpx carries the request. Typer
    (and the pydantic coercion of its options) is not imported either: ~0.1 s."""
    from support import TEST_KEY, result_json

    base = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    code = (
        "import sys, runpy; sys.argv = ['kimi', '-p', 'hi', '--output-format', 'json']\n"
        "try:\n    runpy.run_module('kimi_cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {NOT_FOR_A_PLAIN_RUN!r} if m in sys.modules), file=sys.stderr)"
    )
    for extra, loaded in (({}, "[]"), ({"HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"}, "'httpx'")):
        server.add({"text": "answered"})
        proc = subprocess.run([sys.executable, "-c", code], cwd=repo, env={**base, **extra}, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert result_json(proc)["text"] == "answered", proc.stderr
        assert loaded in proc.stderr.strip().splitlines()[-1]
