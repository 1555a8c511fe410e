"""LandlockSandbox: Landlock (filesystem, TCP) and seccomp (sockets, sessions) applied to the child before exec.

It needs no user namespaces and no root, so it works where bubblewrap cannot (Ubuntu 24.04's AppArmor
default, GitHub's ubuntu-latest runners). Differences from bwrap, each handled:
- no private /tmp mount: TMPDIR points at the session's private tmp, the only writable place outside
  the workspace;
- no pid namespace: setsid/setpgid are refused by seccomp, so everything a command starts stays in its
  process group, and the group is killed when the call ends;
- .git cannot be read-only inside the writable workspace: GitGuard restores it after each command.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from kimi_cli.tools.sandbox.base import ExecResult, run_process_group
from kimi_cli.tools.sandbox.git_guard import GitGuard
from kimi_cli.tools.sandbox.landlock_rules import git_guard_paths, landlock_plan
from kimi_cli.tools.sandbox.landlock_sys import (
    LandlockUnavailable,
    create_ruleset,
    landlock_abi,
    machine,
    make_child_setup,
    seccomp_program,
)
from kimi_cli.tools.sandbox.policy import SandboxPolicy
from kimi_cli.tools.sandbox.spawner import Spawner, collect

MIN_ABI = 1


class LandlockSandbox:
    """Runs each command under the session's Landlock ruleset and seccomp filter."""

    name = "landlock"

    def __init__(self, policy: SandboxPolicy, output_cap: int, shell: str = "bash") -> None:
        self.abi = landlock_abi()
        if self.abi < MIN_ABI:
            raise LandlockUnavailable("this kernel has no Landlock (Linux 5.13+ with landlock in lsm=)")
        self.policy = policy
        self.output_cap = output_cap
        self.shell = shell
        self.plan = landlock_plan(policy, self.abi)
        self.bpf = seccomp_program(machine(), block_inet=not policy.network)
        self.ruleset_fd = create_ruleset(self.plan, self.abi)
        self._setup = make_child_setup(self.ruleset_fd, self.bpf)
        self.env = {**policy.env, "TMPDIR": str(policy.private_tmp)}
        self.guard = GitGuard(git_guard_paths(policy.workspace)) if (policy.workspace / ".git").is_dir() else None
        self.spawner: Spawner | None = None  # forks for us from a small process: cheaper than forking kimi

    @property
    def network_note(self) -> str:
        if self.policy.network:
            return "network allowed"
        tcp = "Landlock TCP rules and " if self.plan.handled_net else ""
        return f"network off ({tcp}seccomp refuses inet sockets)"

    async def run(self, command: str, timeout: float) -> ExecResult:
        if self.guard is not None:
            self.guard.remember()
        result = await self._run(command, timeout)
        if self.guard is not None:
            repaired = self.guard.restore()
            if repaired:
                names = ", ".join(os.path.relpath(p, self.policy.workspace) for p in repaired[:5])
                result.output += (
                    f"\n[kimi: the command changed {names}; .git is read-only in the sandbox, so it was put "
                    "back. Use the Git tool for git operations.]"
                )
                if result.exit_code == 0:
                    result.exit_code = 1
        return result

    async def _run(self, command: str, timeout: float) -> ExecResult:
        if self.spawner is None:
            try:
                self.spawner = Spawner(self.ruleset_fd, self.bpf.program, machine())
            except OSError:
                self.spawner = None
        if self.spawner is not None:
            try:
                pid, fd, exited = await self.spawner.start([self.shell, "-c", command], str(self.policy.workspace),
                                                           self.env)  # fmt: skip
            except (OSError, RuntimeError):
                self.spawner.close()
                self.spawner = None
            else:
                return await collect(pid, fd, exited, timeout, self.output_cap)
        return await run_process_group(
            [self.shell, "-c", command],
            cwd=str(self.policy.workspace),
            env=self.env,
            timeout=timeout,
            cap=self.output_cap,
            preexec_fn=self._setup,
            pass_fds=(self.ruleset_fd,),
        )

    def spawn_spec(self, command: str) -> tuple[list[str], dict[str, str], Callable[[], None], tuple[int, ...]]:
        return [self.shell, "-c", command], self.env, self._setup, (self.ruleset_fd,)

    async def close(self) -> None:
        self.close_sync()

    def close_sync(self) -> None:
        if self.spawner is not None:
            self.spawner.close()
            self.spawner = None
        if self.ruleset_fd >= 0:
            os.close(self.ruleset_fd)
            self.ruleset_fd = -1


def landlock_works(policy: SandboxPolicy) -> tuple[bool, str]:
    """Try the real thing once: a sandboxed `true`."""
    try:
        sandbox = LandlockSandbox(policy, 1000)
    except (LandlockUnavailable, OSError) as exc:
        return False, f"landlock cannot sandbox here: {exc}"
    try:
        out = subprocess.run(
            ["true"], env=sandbox.env, preexec_fn=sandbox._setup, pass_fds=(sandbox.ruleset_fd,),
            capture_output=True, timeout=20,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"landlock cannot sandbox here: {exc}"
    finally:
        sandbox.close_sync()
    if out.returncode != 0:
        return False, f"landlock cannot sandbox here: `true` exited {out.returncode}"
    return True, f"Landlock ABI {sandbox.abi}"
