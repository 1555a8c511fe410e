"""Shared fixtures: an isolated HOME, a scripted model server on loopback, temp git repos, the sandbox rigs
and llama-server. The helpers tests call (run_kimi, tool_call, git, wait_until, ...) live in support.py;
tests/ is on sys.path through pyproject's `pythonpath`, so support modules import by their names."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import net_rig, rig  # noqa: F401  (the sandbox tests' rigs)

from kimi_cli.extensions import hand_down_to_trust

from llama_support import llama_server  # noqa: F401  (module-scoped: one llama-server per test module)
from scripted_server import ScriptedModelServer

# The helpers, re-exported for a test that still imports them from conftest (import them from support).
from support import (  # noqa: F401
    TEST_KEY,
    call_tool,
    free_port,
    git,
    in_ci,
    kimi_executable,
    processes_with,
    require,
    result_json,
    run_for_peak_rss,
    run_kimi,
    tool_call,
    tool_results,
    trust_folder,
    wait_until,
)

hand_down_to_trust()  # as kimi_cli.entry does at start: folder trust reads with every extension's reader


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".kimi").mkdir(parents=True)
    # No language servers unless a test turns them on (tests/attacks/lsp writes its own config): a session that
    # reads a .py file would otherwise start basedpyright in every e2e test of the suite.
    settings = "[retry]\nbase_delay = 0.01\nmax_delay = 0.05\n[lsp]\nenabled = false\n"
    (home / ".kimi" / "config.toml").write_text(settings)
    return home


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")}
    keep.update({"HOME": str(home), "NO_COLOR": "1", "GIT_CONFIG_NOSYSTEM": "1"})
    return keep


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    srv = ScriptedModelServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def png_bytes() -> bytes:
    """A real 2x2 PNG, made with zlib so no imaging library is needed."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
