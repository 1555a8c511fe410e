"""A language server can be hostile (a project's own, once trusted) or just broken: it floods its stderr or its
output, never answers, sends a 2 GB message or crashes. kimi stays bounded: what it keeps is capped, an edit
waits no longer than its bound, a broken server is started again once and then marked failed with one
notice, and nothing it started outlives kimi. Beside them, the well-behaved fake server's diagnostics arrive.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lsp_support import fake_server, lsp_backends, make_lsp_rig

from support import processes_with, wait_until

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=lsp_backends())
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def starts(marks: Path) -> int:
    """How many times the fake server started (each start adds a line)."""
    return len(marks.read_text().splitlines()) if marks.exists() else 0


def running(marks: Path) -> list[int]:
    """Live processes of the fake server (their command line names the marks file), zombies left out."""
    alive = []
    for pid in processes_with(str(marks)):
        with contextlib.suppress(OSError):
            if ") Z " not in Path(f"/proc/{pid}/stat").read_text():
                alive.append(pid)
    return alive


def rss_kb() -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1])


def test_the_fake_server_reports_and_fixes(tmp_path: Path, backend: str) -> None:
    rig = make_lsp_rig(tmp_path, backend, **fake_server("ok"))
    (rig.ws / "a.py").write_text("x = 1\n")
    try:
        rig.read("a.py")
        rig.wait_running("fake")
        added = rig.write("a.py", "x = 1\nBAD\n")[0]
        assert added == "[diagnostics] 1 new after this edit\nerror a.py:2:1 [fake1] bad line"
        assert rig.write("a.py", "x = 1\n")[0].startswith("[diagnostics] 1 fixed")
    finally:
        rig.close()


def test_other_open_files_a_push_server_rechecks_after_the_edited_one_are_reported(
    tmp_path: Path, backend: str
) -> None:
    """A push server (pyright) publishes the edited file first and the open files that import it after: the
    edit's report waits while publications go on (a CI run once missed them when they came 0.3 s later)."""
    rig = make_lsp_rig(tmp_path, backend, **fake_server("dependents"))
    (rig.ws / "a.py").write_text("import b\n")
    (rig.ws / "b.py").write_text("x = 1\n")
    try:
        rig.read("a.py")
        rig.read("b.py")
        rig.wait_running("fake")
        added = rig.write("b.py", "x = 1  # BREAKS\n")[0]
        assert "error a.py:1:1 [fake2] broken by a dependency" in added, added
        assert "a.py" in rig.write("b.py", "x = 1\n")[0]  # and fixed again
    finally:
        rig.close()


def test_an_edit_of_a_file_read_earlier_waits_the_edit_bound_not_the_start_bound(tmp_path: Path, backend: str) -> None:
    """The read's first check is done and the server runs: the edit waits `timeout`, however slow the server
    has become (the start bound is only for an edit that has to start it)."""
    rig = make_lsp_rig(tmp_path, backend, timeout=1.0, **fake_server("slow-changes"))
    (rig.ws / "a.py").write_text("x = 1\n")
    try:
        rig.read("a.py")
        rig.wait_running("fake")
        added, seconds = rig.write("a.py", "x = 1\nBAD\n")
        assert added == "" and seconds < 3, (added, seconds)  # not the rig's 30 s start bound
    finally:
        rig.close()


def test_a_server_flooding_stderr_costs_a_bounded_tail(tmp_path: Path, backend: str) -> None:
    rig = make_lsp_rig(tmp_path, backend, **fake_server("flood-stderr"))
    (rig.ws / "a.py").write_text("x = 1\n")
    try:
        before = rss_kb()
        rig.read("a.py")
        rig.wait_running("fake")
        process = rig.manager.servers["fake"].process
        rig.run(_until(lambda: process.stderr.stopped, 60))  # the drain stops at its cap
        assert len(process.stderr.kept) <= 16 * 1024 and process.stderr.total > 32 * 1024 * 1024
        added, _ = rig.write("a.py", "BAD\n")
        assert "bad line" in added  # still answering: it blocks only on its own stderr
        assert rss_kb() - before < 100 * 1024  # 256 MB written; kimi kept 16 KB of it
    finally:
        rig.close()


def test_a_server_that_never_answers_is_tried_twice_then_failed_with_one_notice(tmp_path: Path,
                                                                                 backend: str) -> None:  # fmt: skip
    marks = tmp_path / "ws" / "marks"  # inside the workspace: the sandboxed server may write there
    rig = make_lsp_rig(tmp_path, backend, start_timeout=1.0, **fake_server("silent", marks))  # initialize: 5 s
    (rig.ws / "a.py").write_text("x = 1\n")
    try:
        began = time.monotonic()
        assert rig.write("a.py", "BAD\n")[0] == ""
        assert time.monotonic() - began < 3  # the edit's bound, not the server's silence
        server = rig.manager.servers["fake"]
        rig.run(_until(lambda: server.exits == 1, 30))
        assert rig.write("a.py", "BAD\nBAD\n")[0] == ""  # started again (once)
        rig.run(_until(lambda: server.state == "failed", 30))
        notes = [rig.write("a.py", f"BAD\n{n}\n")[0] for n in range(3)]
        assert notes[0].startswith("[lsp] fake stopped working (could not start: did not answer in time)"), notes
        assert notes[1:] == ["", ""]  # one notice; a failed server costs an edit nothing
        assert starts(marks) == 2
        wait_until(lambda: not running(marks), 15, "the silent servers to be gone")
    finally:
        rig.close()


def test_a_crashing_server_is_restarted_once_then_marked_failed(tmp_path: Path, backend: str) -> None:
    from kimi_cli.extensions.lsp.wiring import status_lines

    marks = tmp_path / "ws" / "marks"  # inside the workspace: the sandboxed server may write there
    rig = make_lsp_rig(tmp_path, backend, start_timeout=5.0, **fake_server("crash", marks))
    (rig.ws / "a.py").write_text("x = 1\n")
    try:
        rig.read("a.py")
        server = rig.run(_until(lambda: rig.manager.servers.get("fake"), 30))
        rig.run(_until(lambda: server.exits == 1, 30))
        said = [rig.write("a.py", "BAD\n")[0]]  # the next use starts it again
        rig.run(_until(lambda: server.state == "failed", 30))
        said += [rig.write("a.py", f"BAD\n{n}\n")[0] for n in range(2)]
        assert starts(marks) == 2
        line = next(x for x in status_lines(rig.manager) if x.startswith("python:"))
        assert "fake" in line and "failed; exited with code 3" in line, line
        notices = [text for text in said if "[lsp] fake stopped working (exited with code 3)" in text]
        assert len(notices) == 1, said
    finally:
        rig.close()


@pytest.mark.parametrize("mode", ["huge", "spam"])
def test_a_server_flooding_its_output_is_stopped(tmp_path: Path, mode: str) -> None:
    rig = make_lsp_rig(tmp_path, lsp_backends()[0], start_timeout=5.0, **fake_server(mode))
    (rig.ws / "a.py").write_text("x = 1\n")
    try:
        before = rss_kb()
        rig.read("a.py")
        server = rig.run(_until(lambda: rig.manager.servers.get("fake"), 30))
        rig.run(_until(lambda: server.exits >= 1, 120))
        assert "2,000,000,000-byte message" in server.why if mode == "huge" else "messages within" in server.why
        assert rss_kb() - before < 200 * 1024
    finally:
        rig.close()


async def _until(predicate, timeout: float):  # type: ignore[no-untyped-def]
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("timed out waiting")


DRIVER = textwrap.dedent("""
    import asyncio, sys
    sys.path[:0] = [{tests!r}]
    from pathlib import Path
    from lsp_support import fake_server, make_lsp_rig
    rig = make_lsp_rig(Path({tmp!r}), {backend!r}, **fake_server("ok", Path({marks!r})))
    (rig.ws / "a.py").write_text("x = 1\\n")
    rig.read("a.py")
    rig.wait_running("fake")
    print("ready", flush=True)
    rig.loop.run_until_complete(asyncio.sleep(600))
""")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_no_server_outlives_kimi(tmp_path: Path, backend: str, how: signal.Signals) -> None:
    marks = tmp_path / "ws" / "marks"  # inside the workspace: the sandboxed server may write there
    code = DRIVER.format(tests=str(Path(__file__).parents[2]), tmp=str(tmp_path), backend=backend, marks=str(marks))
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert driver.stdout is not None and driver.stdout.readline().strip() == "ready"
        assert starts(marks) == 1 and running(marks)
        driver.send_signal(how)
        driver.wait(10)
        wait_until(lambda: not running(marks), 15, "the server to end with kimi")
    finally:
        driver.kill()
