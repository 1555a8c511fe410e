"""Files through an editor (ACP's fs/read_text_file and fs/write_text_file), when the client offers them:
reads see unsaved buffers, and edits land in the editor. Without one, tools use the disk."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class EditorFiles(Protocol):
    async def read(self, path: Path) -> str | None: ...  # None: the editor does not have it; use the disk

    async def write(self, path: Path, text: str) -> None: ...
