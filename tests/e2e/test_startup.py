"""`kimi --help` stays light: the heavy libraries load only when a run needs them."""

from __future__ import annotations

import subprocess
import sys

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
