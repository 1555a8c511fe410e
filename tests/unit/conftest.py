"""The unit layer: in-process tests of the core (loop, calls, subagents, compaction, the model client's parts).

Every test here is marked `unit` (`pytest -m unit`), runs without starting kimi, and keeps HOME and the
caches inside its own temporary folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


UNIT_TIMEOUT = 60  # seconds: a unit test takes well under one; the limit only catches a hang


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.unit)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT))


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, KIMI_HOME and the cache point into the test's folder: nothing is read from or left in ~."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KIMI_HOME", str(home / ".kimi"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small committed git repository: calc.py (with a bug) and README.md."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "initial"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, env=env, capture_output=True)
    return root
