"""bwrap's lifeline: a sandbox empties when kimi lets go of it, whatever became of bwrap's own parent link.

--die-with-parent is set by bwrap's pid 1 only once it runs; on a loaded machine kimi can die (or a
timeout can kill the outer bwrap) before that, and the command used to run on under the host's init
(tests/attacks/sandbox/test_nothing_outlives_kimi.py caught it about one run in four on 2 busy
cores). These tests take the
parent link out of the question: the outer bwrap stays alive, and only the lifeline closes.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

from kimi_cli.sandbox.backends.bwrap import BwrapSandbox

from support import processes_with, wait_until


@pytest.fixture(params=[b for b in backends() if b == "bwrap"])
def bwrap_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, _ = make_rig(tmp_path, request.param)
    yield the_rig
    the_rig.close()


def test_a_command_sees_no_lifeline(bwrap_rig: Rig) -> None:
    """The legitimate side: the watcher changes nothing the command can see."""
    result = bwrap_rig.run('echo "$0"; ls /proc/self/fd; readlink /proc/self/fd/0; exit 7')
    lines = result.output.splitlines()
    assert lines[0] == "exit code: 7", result.output
    # ls's own fds: 0-2 and the folder it lists; no pipe left over from the lifeline
    assert lines[1:7] == ["bash", "0", "1", "2", "3", "/dev/null"], result.output


def test_closing_the_lifeline_kills_everything_in_the_sandbox(bwrap_rig: Rig) -> None:
    sandbox = bwrap_rig.sandbox
    assert isinstance(sandbox, BwrapSandbox)
    n = 3000 + secrets.randbelow(900) * 4
    command = f"(sleep {n}; echo late) & sleep {n + 1} & setsid sleep {n + 2} & wait"

    async def scenario() -> int | None:
        started = await sandbox.start(command)
        wait_until(lambda: all(processes_with(f"sleep {n + i}") for i in range(3)), 30, "the commands to start")
        assert started.lifeline is not None
        started.release()  # the outer bwrap is alive: no parent-death signal is involved
        code = await asyncio.wait_for(started.exited, 30)
        return code

    code = bwrap_rig.loop.run_until_complete(scenario())
    assert code != 0
    wait_until(lambda: not any(processes_with(f"sleep {n + i}") for i in range(3)), 30, "every process to die")


def test_a_timed_out_command_leaves_nothing_behind(bwrap_rig: Rig) -> None:
    n = 3000 + secrets.randbelow(900) * 4
    result = bwrap_rig.run(f"sleep {n} & sleep {n + 1}", timeout=1)
    assert "timed out" in result.output.lower(), result.output
    wait_until(lambda: not any(processes_with(f"sleep {n + i}") for i in range(2)), 30, "every process to die")
