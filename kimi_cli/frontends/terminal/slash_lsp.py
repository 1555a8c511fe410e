"""`/lsp`: the session's language servers (which run, from where, their state), the languages without one,
and the last diagnostics an edit reported (kimi_cli.extensions.lsp)."""

from __future__ import annotations

from kimi_cli.frontends.terminal.host import SessionHost
from kimi_cli.frontends.terminal.slash_registry import CommandRegistry, SlashCommand
from kimi_cli.util.sanitize import visible_text


class LspCommand:
    def __init__(self, app: SessionHost) -> None:
        self.app = app

    def register(self, registry: CommandRegistry) -> None:
        registry.add(SlashCommand("lsp", "language servers: which run, their state, the last diagnostics", self.run))

    async def run(self, arg: str) -> None:
        from kimi_cli.extensions.lsp.wiring import status_lines

        for line in status_lines(getattr(self.app.runtime, "lsp", None)):
            self.app.console.print(visible_text(line, one_line=True))  # server text is not ours to print raw
