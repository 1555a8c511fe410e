"""The confined reader (kimi_cli.hostsafe.confined_reader): ripgrep run from threads inside a Landlock domain
that may read the workspace and nothing of the user's outside it, whatever path a command swapped in."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from kimi_cli.hostsafe import confined_reader
from kimi_cli.hostsafe.confined_reader import MAX_RUNNERS, confined_runner
from kimi_cli.kernel.restrict import landlock_abi
from kimi_cli.tools.ripgrep import find_rg

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "code.py").write_text("needle = 1\n")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key").write_text("needle in the secret\n")
    return tmp_path / "ws"


def rg_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_rg(), *args], capture_output=True, text=True, timeout=30)


def test_rg_reads_the_workspace_and_nothing_outside_it(ws: Path) -> None:
    runner = confined_runner(ws, find_rg())
    assert runner is not None
    inside = runner.call(rg_run, "needle", str(ws))
    assert inside.returncode == 0 and "code.py" in inside.stdout
    (ws / "swapped").symlink_to(ws.parent / "secret")  # a command's link out, followed by rg
    outside = runner.call(rg_run, "--follow", "needle", str(ws / "swapped"), str(ws.parent / "secret" / "key"))
    assert "needle in the secret" not in outside.stdout and outside.returncode != 0
    assert rg_run("needle", str(ws.parent / "secret")).returncode == 0  # unconfined, the same read works


def test_a_coroutine_runs_on_the_confined_thread(ws: Path) -> None:
    runner = confined_runner(ws, find_rg())
    assert runner is not None

    async def read(path: Path) -> bool:
        try:
            path.read_text()
        except PermissionError:
            return False
        return True

    assert asyncio.run(runner.run(lambda: read(ws / "code.py")))
    assert not asyncio.run(runner.run(lambda: read(ws.parent / "secret" / "key")))


def test_runners_are_kept_per_workspace_and_the_oldest_is_closed(tmp_path: Path) -> None:
    rg = find_rg()
    folders = [tmp_path / f"w{i}" for i in range(MAX_RUNNERS + 1)]
    for folder in folders:
        folder.mkdir()
    first = confined_runner(folders[0], rg)
    assert first is not None and confined_runner(folders[0], rg) is first
    for folder in folders[1:]:
        confined_runner(folder, rg)
    assert (str(folders[0]), str(Path(rg).resolve())) not in confined_reader._runners
    assert len(confined_reader._runners) <= MAX_RUNNERS


def test_a_reader_the_domain_cannot_run_gives_no_runner(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "rg"
    shim.parent.mkdir()
    # A wrapper (as a pyenv shim is): the real rg it runs lies in a folder the domain does not grant.
    shim.write_text(f'#!/bin/sh\nexec {find_rg()} "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "ws").mkdir()
    assert confined_runner(tmp_path / "ws", str(shim)) is None
