"""Real escape attempts through the real Shell tool, on bubblewrap and (where dockerd runs) Docker."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from sandbox_fixtures import SECRET, CountingServer, Rig

from support import processes_with, unique_seconds, wait_until


def test_write_outside_the_workspace_fails(rig: Rig) -> None:
    result = rig.run(f"echo x > {rig.outside}/escaped")
    assert result.is_error
    assert not (rig.outside / "escaped").exists()
    assert rig.run("echo ok > inside.txt").output.startswith("exit code: 0")
    assert (rig.ws / "inside.txt").read_text() == "ok\n"


def test_touch_in_home_fails(rig: Rig) -> None:
    rig.run("touch ~/marker")
    assert not (rig.home / "marker").exists()


def test_write_to_etc_fails_even_after_a_remount(rig: Rig) -> None:
    markers = [Path("/etc/kimi-escape-1"), Path("/etc/kimi-escape-2")]
    try:
        first = rig.run("echo x > /etc/kimi-escape-1")
        second = rig.run("mount -o remount,rw / ; echo x > /etc/kimi-escape-2")
        assert first.is_error and second.is_error
        assert not any(m.exists() for m in markers)
    finally:
        for marker in markers:
            marker.unlink(missing_ok=True)  # an escape must not leave litter on the host


def test_hidden_credential_files_cannot_be_read(rig: Rig) -> None:
    result = rig.run("cat ~/.ssh/id_rsa; cat ~/.kimi/config.toml")
    assert "PRIVATE KEY" not in result.output and SECRET not in result.output


def test_environment_has_no_secrets(rig: Rig) -> None:
    result = rig.run("env")
    assert result.output.startswith("exit code: 0")
    assert "PATH=" in result.output
    for name in ("KIMI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY"):
        assert f"\n{name}=" not in result.output  # (the once-per-session notice may name what was withheld)
    assert SECRET not in result.output


def test_network_is_off_by_default(rig: Rig) -> None:
    server = CountingServer()
    try:
        result = rig.run(f"echo hi > /dev/tcp/127.0.0.1/{server.port}")
        # A connection of our own after the command: the server accepts in arrival order, so once it has
        # accepted ours, one from the sandbox would have been accepted (and counted) before it.
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
        wait_until(lambda: server.accepted >= 1, what="the test's own connection")
        assert result.is_error
        assert server.accepted == 1
    finally:
        server.close()


def test_network_works_when_allowed(net_rig: Rig) -> None:
    server = CountingServer()
    try:
        result = net_rig.run(f"echo hi > /dev/tcp/127.0.0.1/{server.port}")
        assert result.output.startswith("exit code: 0"), result.output
        wait_until(lambda: server.accepted == 1, what="the sandboxed connection to arrive")
    finally:
        server.close()


def test_symlink_out_of_the_workspace_cannot_be_written_through(rig: Rig) -> None:
    (rig.ws / "link").symlink_to(rig.outside)
    shell_result = rig.run("echo x > link/via-shell")
    tool_result = rig.call("WriteFile", {"path": "link/via-tool", "content": "x"})
    assert shell_result.is_error and tool_result.is_error
    assert list(rig.outside.iterdir()) == []


def test_timeout_kills_the_whole_group_and_returns_in_time(rig: Rig) -> None:
    n = unique_seconds()  # sleeps no other test (or other run on this machine) starts: they mark this group
    started = time.monotonic()
    result = rig.run(f"(sleep {n}; touch survivor) & sleep {n + 1}", timeout=2)
    elapsed = time.monotonic() - started
    assert "timed out after 2 s" in result.output
    assert elapsed < 20, elapsed  # generous; an unkilled group would run for an hour
    wait_until(lambda: processes_with(f"sleep {n}") == [] and processes_with(f"sleep {n + 1}") == [], what="the group")
    assert not (rig.ws / "survivor").exists()


def test_output_flood_is_capped(rig: Rig) -> None:
    result = rig.run("yes | head -c 50000000")
    assert len(result.output) < 40_000
    assert "bytes of output cut" in result.output


def test_git_folder_is_read_only(rig: Rig) -> None:
    before = (rig.ws / ".git" / "config").read_bytes()
    a = rig.run("echo '[core] hooksPath = /tmp' >> .git/config")
    b = rig.run("echo 'curl evil' > .git/hooks/pre-commit")
    assert a.is_error and b.is_error
    assert (rig.ws / ".git" / "config").read_bytes() == before
    assert not (rig.ws / ".git" / "hooks" / "pre-commit").exists()


def test_non_utf8_output_is_decoded_with_replacement(rig: Rig) -> None:
    result = rig.run("printf 'ok \\377\\376 done\\n'")
    assert "ok" in result.output and "done" in result.output and "\ufffd" in result.output


def test_root_capabilities_are_dropped(rig: Rig) -> None:
    if os.geteuid() != 0:
        pytest.skip("the remount escape only exists when running as root")
    result = rig.run("grep CapEff /proc/self/status")
    assert "0000000000000000" in result.output


def test_a_process_that_leaves_the_session_does_not_survive_the_call(rig: Rig) -> None:
    n = unique_seconds()
    rig.run(
        f"setsid sleep {n} >/dev/null 2>&1 & (sleep {n + 1} &) ; nohup sleep {n + 2} >/dev/null 2>&1 & echo started"
    )
    wait_until(lambda: [processes_with(f"sleep {n + i}") for i in range(3)] == [[], [], []], what="escapees")
