"""LandlockSandbox: Landlock (filesystem, TCP, scopes) and seccomp (syscalls, sockets) applied before exec.

It needs no user namespaces and no root, so it works where bubblewrap cannot (Ubuntu 24.04's AppArmor
default, GitHub's ubuntu-latest runners). Differences from bwrap, each handled:
- no private /tmp mount: TMPDIR points at the session's private tmp, the only writable place outside
  the workspace;
- no pid namespace: setsid/setpgid are refused by seccomp, so everything a command starts stays in its
  process group, and the group is killed when the call ends (or when kimi dies: see spawner_main.py);
  /proc/<pid> of processes outside the command's domain is closed by Landlock's ptrace rule;
- no mount namespace: a unix socket outside the workspace is kept out of reach by the connect()
  supervisor (supervise.py), not by hiding it;
- .git and .kimi cannot be read-only inside the writable workspace: the guard (sandbox/guard/command.py, the same on
  every backend) restores them, refs and HEAD included.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable

from kimi_cli.kernel.restrict import Restriction, Unavailable, create_ruleset, landlock_abi, machine, seccomp_program
from kimi_cli.kernel.rights import SCOPE_SIGNAL
from kimi_cli.sandbox.backends.landlock.rules import landlock_plan
from kimi_cli.sandbox.backends.landlock.spawner import Spawner, collect, started_from
from kimi_cli.sandbox.base import ExecResult, GuardedSandbox, Started, run_process_group
from kimi_cli.sandbox.policy import SandboxPolicy

LandlockUnavailable = Unavailable
MIN_ABI = 1


class LandlockSandbox(GuardedSandbox):
    """Runs each command under the session's Landlock ruleset and seccomp filter."""

    name = "landlock"
    guard_mounts = False  # nothing is mounted: the guard walks .git's refs and HEAD too

    def __init__(self, policy: SandboxPolicy, output_cap: int, shell: str = "bash", abi: int | None = None) -> None:
        """`abi` caps the kernel's Landlock ABI: what a session on an older kernel gets (for tests)."""
        self.abi = landlock_abi() if abi is None else min(abi, landlock_abi())
        if self.abi < MIN_ABI:
            raise Unavailable("this kernel has no Landlock (Linux 5.13+ with landlock in lsm=)")
        self.policy = policy
        self.output_cap = output_cap
        self.shell = shell
        self.plan = landlock_plan(policy, self.abi)
        self.ruleset_fd = create_ruleset(
            self.abi, self.plan.handled_fs, self.plan.handled_net, self.plan.scoped,
            [(g.path, g.access) for g in self.plan.grants],
        )  # fmt: skip
        # Without a supervisor (this process forks the child itself) connect() is refused outright.
        self.signal_scope = bool(self.plan.scoped & SCOPE_SIGNAL)
        plain = seccomp_program(machine(), network=policy.network, connect="deny",
                                metadata="deny" if os.geteuid() == 0 else "allow",
                                signals="allow" if self.signal_scope else "deny", truncate=self.abi >= 3)  # fmt: skip
        self.restriction = Restriction(self.ruleset_fd, None, plain)
        self.env = {**policy.env, "TMPDIR": str(policy.private_tmp)}
        self.spawner: Spawner | None = None  # forks for us from a small process: cheaper than forking kimi

    @property
    def network_note(self) -> str:
        if self.policy.network:
            return "network allowed"
        tcp = "Landlock TCP rules and " if self.plan.handled_net else ""
        return f"network off ({tcp}seccomp refuses inet sockets)"

    def _preexec(self) -> Callable[[], None]:
        parent = os.getpid()
        return lambda: self.restriction.apply(parent)

    def _spawner(self) -> Spawner | None:
        if self.spawner is None:
            try:
                roots = [str(self.policy.workspace), str(self.policy.private_tmp)]
                hidden = [str(h.path) for h in self.policy.hidden]
                self.spawner = Spawner(self.ruleset_fd, roots, self.policy.network, hidden, self.abi, self.signal_scope)
            except OSError:
                self.spawner = None
        return self.spawner

    async def _spawn(self, command: str) -> tuple[int, int, asyncio.Future[int]] | None:
        spawner = self._spawner()
        if spawner is None:
            return None
        try:
            return await spawner.start([self.shell, "-c", command], str(self.policy.workspace), self.env)
        except (OSError, RuntimeError):
            spawner.close()
            self.spawner = None
            return None

    async def run(self, command: str, timeout: float) -> ExecResult:
        return await self.guarded(lambda: self._run(command, timeout))  # .git/.kimi checks: base.GuardedSandbox

    async def _run(self, command: str, timeout: float) -> ExecResult:
        spawned = await self._spawn(command)
        if spawned is not None:
            result = await collect(*spawned, timeout, self.output_cap)
        else:
            result = await run_process_group(
                [self.shell, "-c", command], cwd=str(self.policy.workspace), env=self.env, timeout=timeout,
                cap=self.output_cap, preexec_fn=self._preexec(),
            )  # fmt: skip
        return result

    async def start(self, command: str) -> Started:
        """A background command, started by the spawner (supervised, and killed if kimi dies)."""
        self.start_guard()
        spawned = await self._spawn(command)
        if spawned is None:
            proc = await asyncio.create_subprocess_exec(
                self.shell, "-c", command, cwd=str(self.policy.workspace), env=self.env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True, preexec_fn=self._preexec(),
            )  # fmt: skip
            return Started.from_process(proc)
        return await started_from(*spawned)

    def spawn_spec(self, command: str) -> tuple[list[str], dict[str, str], Callable[[], None], tuple[int, ...]]:
        """argv, env and the preexec function for a sandboxed process that the caller starts itself.

        The caller must fork from the thread that will outlive the process (PR_SET_PDEATHSIG follows the
        forking thread) and pass start_new_session=True. No fd of the caller's reaches the process.
        """
        self.start_guard()
        return [self.shell, "-c", command], self.env, self._preexec(), ()

    async def close(self) -> None:
        self.close_sync()

    def close_sync(self) -> None:
        if self.spawner is not None:
            self.spawner.close()
            self.spawner = None
        if self.ruleset_fd >= 0:
            self.close_guard()
            os.close(self.ruleset_fd)
            self.ruleset_fd = -1


def landlock_works(policy: SandboxPolicy) -> tuple[bool, str]:
    """Try the real thing once: a sandboxed `true`."""
    try:
        sandbox = LandlockSandbox(policy, 1000)
    except (Unavailable, OSError) as exc:
        return False, f"landlock cannot sandbox here: {exc}"
    try:
        out = subprocess.run(
            ["true"], env=sandbox.env, preexec_fn=sandbox._preexec(), capture_output=True, timeout=20,
            start_new_session=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"landlock cannot sandbox here: {exc}"
    finally:
        sandbox.close_sync()
    if out.returncode != 0:
        return False, f"landlock cannot sandbox here: `true` exited {out.returncode}"
    return True, f"Landlock ABI {sandbox.abi}"
