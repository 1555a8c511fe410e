"""BwrapSandbox: bubblewrap namespaces enforce the policy; one pure function builds the argv."""

from __future__ import annotations

import shutil
import subprocess

from kimi_cli.tools.sandbox.base import ExecResult, run_process_group
from kimi_cli.tools.sandbox.policy import SandboxPolicy


def bwrap_argv(policy: SandboxPolicy, command: list[str], bwrap: str = "bwrap") -> list[str]:
    """The exact bwrap command line for a policy. Order matters: later mounts cover earlier ones."""
    ws = str(policy.workspace)
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--bind", str(policy.private_tmp), "/tmp"]
    argv += ["--bind", ws, ws]
    for path in policy.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for hidden in policy.hidden:
        if hidden.is_dir:
            argv += ["--tmpfs", str(hidden.path), "--remount-ro", str(hidden.path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(hidden.path)]
    if not policy.network:
        argv.append("--unshare-net")
    # As root, bwrap keeps capabilities unless dropped: without --cap-drop ALL, `mount -o remount,rw /` works.
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--clearenv"]
    for key in sorted(policy.env):
        argv += ["--setenv", key, policy.env[key]]
    argv += ["--chdir", ws, "--", *command]
    return argv


def bwrap_works(policy: SandboxPolicy) -> tuple[bool, str]:
    """Try the real thing once: some kernels or containers forbid the namespaces bwrap needs."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bwrap is not installed"
    try:
        out = subprocess.run(
            bwrap_argv(policy, ["true"], exe), capture_output=True, text=True, timeout=20, env=policy.env
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap failed to start: {exc}"
    if out.returncode != 0:
        return False, f"bwrap cannot create a sandbox here: {out.stderr.strip()[:300]}"
    return True, ""


class BwrapSandbox:
    """Runs each command in a fresh bubblewrap sandbox; the process group dies on timeout."""

    name = "bwrap"

    def __init__(self, policy: SandboxPolicy, output_cap: int, shell: str = "bash") -> None:
        self.policy = policy
        self.output_cap = output_cap
        self.shell = shell
        self.exe = shutil.which("bwrap") or "bwrap"

    async def run(self, command: str, timeout: float) -> ExecResult:
        argv = bwrap_argv(self.policy, [self.shell, "-c", command], self.exe)
        return await run_process_group(
            argv, cwd=str(self.policy.workspace), env=self.policy.env, timeout=timeout, cap=self.output_cap
        )

    def spawn_spec(self, command: str) -> tuple[list[str], dict[str, str], None, tuple[int, ...]]:
        """For a background task: the same sandbox, started and left running."""
        return bwrap_argv(self.policy, [self.shell, "-c", command], self.exe), self.policy.env, None, ()

    async def close(self) -> None:
        return None
