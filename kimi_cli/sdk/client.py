"""`Kimi`: run kimi tasks from Python, in process, through the same headless run as `kimi -p`.

    async with Kimi(cwd="repo", model="kimi-k2", sandbox="bwrap") as k:
        async for event in k.run("fix the failing test"):
            ...
        print(k.result.text, k.result.cost_usd, k.session_id)

Each event is a model of kimi_cli.sdk.events, equal to the line `kimi -p --output-format stream-json` prints.
The workspace's trust works as in `kimi -p`: an untrusted folder's widening settings do not apply unless
`trust=True` (the --trust flag) is given.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from kimi_cli.frontends.headless.app import RunOptions
from kimi_cli.frontends.headless.stream import ApprovalRequest, stream_run
from kimi_cli.sdk.events import Event, Result, parse_event

# An approval callback: True or "yes" allows once, "always" for the session, False or "no" or
# "no:<why>" refuses (the why reaches the model); it may be async.
ApprovalCallback = Callable[[ApprovalRequest], "bool | str | Awaitable[bool | str]"]


class Kimi:
    """A workspace to run tasks in, with the options every run of it takes (the flags of `kimi -p`)."""

    def __init__(
        self,
        cwd: str | Path = ".",
        *,
        model: str | None = None,
        provider: str | None = None,
        base_url: str | None = None,
        effort: str | None = None,
        sandbox: str | None = None,
        max_steps: int | None = None,
        allow_network: bool = False,
        yolo: bool = False,
        trust: bool = False,
        approve: ApprovalCallback | None = None,
    ) -> None:
        self.cwd = Path(cwd).expanduser().resolve()
        if not self.cwd.is_dir():
            raise NotADirectoryError(f"cwd {self.cwd} is not a directory")
        if effort is not None and effort not in ("low", "high", "max"):
            raise ValueError(f"effort must be low, high or max, not {effort!r}")
        flags: dict[str, Any] = {"model": model, "provider": provider, "base_url": base_url, "effort": effort,
                                 "max_steps": max_steps, "yolo": yolo or None, "trust": trust or None}  # fmt: skip
        if sandbox is not None or allow_network:
            flags["sandbox"] = {k: v for k, v in (("mode", sandbox), ("allow_network", allow_network or None)) if v}
        self.flags = {k: v for k, v in flags.items() if v is not None}
        self.approve = approve
        self.result: Result | None = None  # the last run's
        self.session_id: str | None = None  # the last run's session: resume it with run(..., resume=...)

    async def __aenter__(self) -> Kimi:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None  # each run closes its own session; nothing is held between runs

    async def run(
        self,
        prompt: str,
        *,
        resume: str | None = None,
        fork: str | None = None,
        continue_latest: bool = False,
        output_schema: str | Path | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run one task and yield its events, `Init` first and `Result` last. `resume` continues a session
        by id, `fork` continues a copy of it (the original stays as it was), `continue_latest` the latest
        session in the workspace. `output_schema` is a JSON Schema file the answer must match."""
        if fork is not None:
            from kimi_cli.session.fork import fork_session

            resume = fork_session(self.cwd, fork)
        opts = RunOptions(
            prompt=prompt,
            workdir=self.cwd,
            output_format="stream-json",
            continue_latest=continue_latest,
            resume_id=resume,
            config_flags=dict(self.flags),
            output_schema=str(output_schema) if output_schema is not None else None,
        )
        approve = self._ask if self.approve is not None else None
        async for obj in stream_run(opts, approve):
            event = parse_event(obj)
            if isinstance(event, Result):
                self.result, self.session_id = event, event.session_id or self.session_id
            yield event

    async def ask(self, prompt: str, **kwargs: Any) -> Result:
        """Run one task to its end; its Result (the answer in .text, the price in .cost_usd)."""
        async for _ in self.run(prompt, **kwargs):
            pass
        assert self.result is not None
        return self.result

    async def _ask(self, request: ApprovalRequest) -> str:
        assert self.approve is not None
        answer = self.approve(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is True:
            return "yes"
        if answer is False or answer is None:
            return "no"
        return str(answer)
