"""KimiSync: Kimi for code without an event loop (a script, a notebook cell that cannot await)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from kimi_cli.sdk.client import Kimi
from kimi_cli.sdk.events import Event, Result


class KimiSync:
    """The same options as Kimi; run() yields events as they come, ask() returns the Result."""

    def __init__(self, cwd: Any = ".", **options: Any) -> None:
        self.kimi = Kimi(cwd, **options)

    @property
    def session_id(self) -> str | None:
        return self.kimi.session_id

    @property
    def result(self) -> Result | None:
        return self.kimi.result

    def run(self, prompt: str, **kwargs: Any) -> Iterator[Event]:
        """Each event as the run makes it, from an event loop of this call's own."""
        loop = asyncio.new_event_loop()
        events = self.kimi.run(prompt, **kwargs)
        try:
            while True:
                try:
                    yield loop.run_until_complete(events.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            loop.run_until_complete(events.aclose())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def ask(self, prompt: str, **kwargs: Any) -> Result:
        for _ in self.run(prompt, **kwargs):
            pass
        assert self.kimi.result is not None
        return self.kimi.result
