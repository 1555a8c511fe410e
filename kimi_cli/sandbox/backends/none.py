"""NoSandbox: runs commands directly, with the scrubbed environment. Only with --sandbox none."""

from __future__ import annotations

from kimi_cli.sandbox.base import ExecResult, run_process_group
from kimi_cli.sandbox.policy import SandboxPolicy


class NoSandbox:
    """No isolation: nothing stops a write outside the workspace. Every command needs approval."""

    name = "none"

    def __init__(self, policy: SandboxPolicy, output_cap: int, shell: str = "bash") -> None:
        self.policy = policy
        self.output_cap = output_cap
        self.shell = shell

    async def run(self, command: str, timeout: float) -> ExecResult:
        return await run_process_group(
            [self.shell, "-c", command],
            cwd=str(self.policy.workspace),
            env=self.policy.env,
            timeout=timeout,
            cap=self.output_cap,
        )

    def spawn_spec(self, command: str) -> tuple[list[str], dict[str, str], None, tuple[int, ...]]:
        return [self.shell, "-c", command], self.policy.env, None, ()

    async def close(self) -> None:
        return None
