"""Approval decisions for a headless run, where nobody can be asked."""

from __future__ import annotations


class HeadlessApprover:
    """Sandboxed commands run; unsandboxed ones need --yolo, since a headless run cannot ask."""

    def __init__(self, yolo: bool) -> None:
        self.yolo = yolo

    async def review_shell(self, command: str, sandbox: str) -> str | None:
        if self.yolo or sandbox != "none":
            return None
        return (
            "with --sandbox none every command needs approval, and a headless run cannot ask. "
            "Rerun with --yolo to allow commands, or use a sandbox (--sandbox auto)."
        )
