"""A custom status line: `[status_line] command = "..."`, fed Claude Code's statusLine JSON on stdin.

The command's first line of output is shown above kimi's own status line (escape sequences written out,
cut to the terminal's width). It runs with /bin/sh -c on the HOST, in the workspace, with the user's
environment less the API key variables: a command in a folder's own .kimi/config.toml is therefore a
widening that needs the folder's trust (hostsafe.trust_rules: `status_line.command`), so an untrusted
project cannot run anything this way. It runs at the start, after each turn and, while a turn runs, at most
every REFRESH seconds when something it is told changed; one run at a time, each within [status_line]
timeout, a command that fails or hangs shows nothing (and is said once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from typing import Any

from rich.text import Text

from kimi_cli.util.sanitize import visible

REFRESH = 1.0  # seconds between runs while the session changes
MAX_OUTPUT = 4096


class StatusCommand:
    """One per interactive session (`app` is the InteractiveApp); `line` is what is shown."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.settings = app.runtime.config.status_line
        self.line = ""
        self.started = time.monotonic()
        self._last_input = ""
        self._task: asyncio.Task[None] | None = None
        self._told = False

    @property
    def enabled(self) -> bool:
        return bool(self.settings.command.strip())

    def payload(self) -> dict[str, Any]:
        """What Claude Code's statusLine command reads (the fields kimi has), as JSON on stdin."""
        from kimi_cli import __version__

        app, rt = self.app, self.app.runtime
        st = app.status
        session = rt.session
        return {
            "hook_event_name": "Status",
            "session_id": session.id,
            "transcript_path": str(getattr(session, "path", "")),
            "cwd": str(rt.workdir),
            "model": {"id": st.model, "display_name": st.model},
            "workspace": {"current_dir": str(rt.workdir), "project_dir": str(rt.workdir)},
            "version": __version__,
            "output_style": {"name": "default"},
            "cost": {
                "total_cost_usd": round(st.cost, 6) if st.priced else None,
                "total_duration_ms": int((time.monotonic() - self.started) * 1000),
            },
            "context_window": {
                "context_window_size": st.window,
                "used_tokens": st.context_tokens,
                "used_percentage": round(100 * st.context_tokens / st.window, 1) if st.window else None,
                "total_input_tokens": st.prompt_tokens,
                "total_output_tokens": st.completion_tokens,
            },
            "kimi": {"sandbox": st.sandbox, "mode": st.mode, "effort": st.effort, "phase": st.phase},
        }

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._task = asyncio.ensure_future(self._loop())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _loop(self) -> None:
        while True:
            data = self.payload()
            changed = json.dumps({k: v for k, v in data.items() if k != "cost"} | {"c": data["cost"]["total_cost_usd"]})
            if changed != self._last_input:
                self._last_input = changed
                await self.refresh(data)
            await asyncio.sleep(REFRESH)

    async def refresh(self, data: dict[str, Any] | None = None) -> None:
        """Run the command once and keep its first line."""
        from kimi_cli.hostsafe.secrets import without_keys

        payload = json.dumps(data or self.payload()).encode()
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh", "-c", self.settings.command, cwd=str(self.app.runtime.workdir),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                env=without_keys(os.environ), start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            self._fail(f"cannot start: {exc.strerror or exc}")
            return
        try:
            out, _ = await asyncio.wait_for(proc.communicate(payload), self.settings.timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()
            self._fail(f"took over {self.settings.timeout:g} s")
            return
        first = out[:MAX_OUTPUT].decode("utf-8", "replace").splitlines()
        self.line = visible(first[0], drop_colors=True, one_line=True) if first and proc.returncode == 0 else ""
        if proc.returncode != 0:
            self._fail(f"exited {proc.returncode}")
        self.app.input.invalidate()

    def _fail(self, why: str) -> None:
        self.line = ""
        if not self._told:
            self._told = True
            self.app.console.print(Text(f"[status_line] command {why}; the custom status line stays empty",
                                        style="yellow"))  # fmt: skip
