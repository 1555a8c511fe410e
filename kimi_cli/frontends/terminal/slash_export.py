"""`/export [md|json|html] [PATH]`: the running session exported (kimi_cli.session.export), written to
PATH or to ~/.kimi/exports/<id>.<ext>, 0600. The log is settled first, so the export holds every step."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kimi_cli.errors import KimiError
from kimi_cli.frontends.terminal.host import SessionHost
from kimi_cli.frontends.terminal.slash_registry import CommandRegistry, SlashCommand
from kimi_cli.util.sanitize import visible_text


class ExportCommand:
    def __init__(self, app: SessionHost) -> None:
        self.app = app

    def register(self, registry: CommandRegistry) -> None:
        registry.add(SlashCommand("export", "this session as Markdown, JSON or an HTML page with plots", self.run,
                                  "/export [md | json | html] [PATH]"))  # fmt: skip

    async def run(self, arg: str) -> None:
        from kimi_cli.session.export import FORMATS, default_path, export_text, write_export

        words = arg.split(maxsplit=1)
        fmt = words[0].lower() if words else "md"
        if fmt not in FORMATS:
            self.app.console.print(visible_text(f"/export takes md, json or html, not {fmt!r}", "yellow"))
            return
        session = self.app.runtime.session
        path = Path(words[1]).expanduser() if len(words) > 1 else default_path(session.id, fmt)
        try:
            session.settle()  # the step's deferred records are in the log
            text = await asyncio.to_thread(export_text, session.path, fmt)
            await asyncio.to_thread(write_export, path, text)
        except (KimiError, OSError) as exc:
            self.app.console.print(visible_text(f"export failed: {exc}", "red"))
            return
        self.app.console.print(visible_text(f"exported this session ({fmt}) to {path}"))
