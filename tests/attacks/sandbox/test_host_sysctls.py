"""The host-wide corners of /proc (sysctls, sysrq, irq, bus, fs) never open for writing from a command.

The attack, as found: on bwrap, kimi run as root, a command (CapEff 0, no_new_privs, seccomp) wrote
`|$PWD/evil.sh %p` into /proc/sys/kernel/core_pattern and crashed a shell; the host kernel then ran the
workspace's script as real root, outside every namespace. bwrap remounts /proc/sys read-only only when
root's access(W_OK) on the folder passes, and /proc/sys (0555) fails it, while the sysctl files inside
check only euid 0. These tests only ever OPEN the files (a shell's `>>` redirection: no truncation, no
write): nothing here changes the host, whether the sandbox holds or not.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from sandbox_fixtures import Rig, backends, docker_ready, sandbox_flags

from kimi_cli.sandbox.backends.bwrap import bwrap_argv
from kimi_cli.sandbox.backends.docker import DockerSandbox, proc_left_writable
from kimi_cli.sandbox.policy import PROC_READ_ONLY, SandboxPolicy, build_policy

from scripted_server import ScriptedModelServer
from support import require, run_kimi, tool_call, tool_results

# Files a root command must not open for writing, each a way to the host (the ones this kernel lacks are
# skipped inside the command: no sysrq here, for one).
TARGETS = (
    "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
    "/proc/sys/kernel/sysrq", "/proc/sysrq-trigger", "/proc/irq/default_smp_affinity",
)  # fmt: skip
# Open only: `>>` is O_WRONLY|O_APPEND|O_CREAT on an existing file, and the subshell closes it unwritten.
OPEN_FOR_WRITING = (
    "for f in " + " ".join(TARGETS) + "; do [ -e $f ] || continue; "
    '( exec 3>>"$f" ) 2>/dev/null && echo "OPENED $f" || echo "refused $f"; done'
)
READS = "head -c 64 /proc/cpuinfo >/dev/null && grep -q '^Pid:' /proc/self/status && cat /proc/sys/kernel/ostype"


def test_bwrap_binds_the_host_wide_corners_of_proc_read_only_right_after_proc() -> None:
    """Right after --proc (later mounts cover earlier ones), -try for a kernel that lacks one."""
    policy = SandboxPolicy(workspace=Path("/w"), private_tmp=Path("/t"))
    argv = bwrap_argv(policy, ["true"], masks=([], []))
    at = argv.index("--proc")
    assert argv[at : at + 17] == [
        "--proc", "/proc",
        "--ro-bind-try", "/proc/sys", "/proc/sys",
        "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
        "--ro-bind-try", "/proc/irq", "/proc/irq",
        "--ro-bind-try", "/proc/bus", "/proc/bus",
        "--ro-bind-try", "/proc/fs", "/proc/fs",
    ]  # fmt: skip
    assert PROC_READ_ONLY == ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def test_landlock_grants_no_write_anywhere_under_proc(tmp_path: Path) -> None:
    """Landlock's half: /proc is only ever granted read rights, so a sysctl's open for writing is refused
    whatever uid the command has (the rig test below proves it on the real kernel)."""
    from kimi_cli.kernel.rights import WRITE_FILE
    from kimi_cli.sandbox.backends.landlock.rules import landlock_plan

    (tmp_path / "ws").mkdir()
    policy = build_policy(tmp_path / "ws", tmp_path / "t", environ={"HOME": str(tmp_path)})
    under = [g for g in landlock_plan(policy, 7).grants if g.path == "/proc" or g.path.startswith("/proc/")]
    assert under and not any(g.access & WRITE_FILE for g in under), under


def test_a_sysctl_does_not_open_for_writing_from_a_command(rig: Rig) -> None:
    result = rig.run(OPEN_FOR_WRITING)
    assert "refused /proc/sys/kernel/core_pattern" in result.output, result.output
    assert "OPENED" not in result.output, result.output


def test_a_command_still_reads_proc(rig: Rig) -> None:
    result = rig.run(READS)
    assert result.output.startswith("exit code: 0") and "Linux" in result.output, result.output


def test_the_docker_check_finds_a_writable_corner_in_a_mount_table() -> None:
    table = (
        "exists=/proc/sys\nexists=/proc/fs\nexists=/proc/irq\n"
        "71 70 0:41 / /proc rw,nosuid - proc proc rw\n"
        "51 71 0:41 /sys /proc/sys ro,nosuid - proc proc rw\n"
        "52 71 0:41 /fs /proc/fs ro,nosuid - proc proc rw\n"
    )
    assert proc_left_writable(table) == ["/proc/irq"]  # not a mount of its own: the rw /proc holds it
    assert proc_left_writable(table.replace("/proc rw", "/proc ro")) == []  # a read-only /proc holds it all
    binfmt = "9 51 0:9 / /proc/sys/fs/binfmt_misc rw - binfmt_misc binfmt_misc rw\n"
    assert proc_left_writable(table + binfmt) == ["/proc/sys", "/proc/irq"]  # a writable mount beneath


@pytest.mark.parametrize("backend", [b for b in backends() if b == "docker"])
def test_docker_refuses_a_container_whose_proc_is_left_writable(backend: str, tmp_path: Path) -> None:
    """The real engine, told to leave /proc alone (an empty list of read-only paths): the backend sees it in
    the container's own mount table and runs nothing there."""
    ok, why = docker_ready()
    require("docker", ok, f"the docker backend is not tested: {why}")
    from docker_image import IMAGE

    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox = DockerSandbox(build_policy(ws, tmp_path / "t", environ={"HOME": str(tmp_path)}), 1000, IMAGE, "256m",
                            64, session="proc-test")  # fmt: skip
    options: dict[str, Any] = sandbox.options
    options["readonly_paths"] = []  # what `docker run --security-opt systempaths=unconfined` sends
    try:
        with pytest.raises(RuntimeError, match="/proc/sys"):
            sandbox._ensure()
        assert sandbox.container_id is None
    finally:
        with contextlib.suppress(Exception):
            sandbox.close_sync()


@pytest.mark.parametrize("backend", backends())
def test_kimi_p_a_command_cannot_open_a_sysctl_for_writing(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    """End to end, as it was found: the open that came before the core_pattern write, through `kimi -p`;
    the legitimate reads of /proc work in the same session."""
    flags = sandbox_flags(backend, home)
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": OPEN_FOR_WRITING}, "sysctl")]},
        {"tool_calls": [tool_call("Shell", {"command": READS}, "reads")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "go", *flags], repo, env, server, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    attack, reads = tool_results(server, 2)
    assert "refused /proc/sys/kernel/core_pattern" in attack and "OPENED" not in attack, attack
    assert reads.startswith("exit code: 0") and "Linux" in reads, reads
