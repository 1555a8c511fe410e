"""ReadMediaFile: give an image in the workspace to the model as an image part."""

from __future__ import annotations

import base64
from pathlib import Path

from pydantic import BaseModel, Field

from kimi_cli.tools.base import READS, Tool, ToolContext, ToolError, ToolResult

MAX_IMAGE_BYTES = 20 * 1024 * 1024


def sniff_image(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, WebP or GIF from its first bytes; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return None


def image_data_url(path: Path) -> str:
    """Read an image and return a data URL; ValueError says why when it cannot."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ValueError(f"image not found: {path}") from None
    except OSError as exc:
        raise ValueError(f"cannot read image {path}: {exc.strerror}") from None
    if not path.is_file():
        raise ValueError(f"not a file: {path}")
    if size > MAX_IMAGE_BYTES:
        raise ValueError(f"image too large: {path} is {size} bytes (limit {MAX_IMAGE_BYTES})")
    return image_bytes_url(path.read_bytes(), str(path))


def image_bytes_url(data: bytes, label: str) -> str:
    """A data URL for image bytes already read; ValueError when they are not a supported image."""
    mime = sniff_image(data[:16])
    if mime is None:
        raise ValueError(f"unsupported image format: {label} (PNG, JPEG, WebP and GIF are supported)")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def read_workspace_image(ctx: ToolContext, path: Path, shown: str) -> bytes:
    """An image inside the workspace, read through a no-follow open; size checked on the descriptor."""
    import os

    from kimi_cli.tools.safe_fs import open_regular

    try:
        fd, st = open_regular(ctx.workspace.root, ctx.workspace.rel(path))
    except OSError as exc:
        raise ctx.workspace.refused(shown, exc) from None
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > MAX_IMAGE_BYTES:
            raise ToolError(f"image too large: {shown} is {st.st_size} bytes (limit {MAX_IMAGE_BYTES})")
        return fh.read(MAX_IMAGE_BYTES + 1)


class ReadMediaFileParams(BaseModel):
    path: str = Field(description="Image path relative to the workspace.")


class ReadMediaFile(Tool[ReadMediaFileParams]):
    name = "ReadMediaFile"
    description = (
        "Look at an image in the workspace (PNG, JPEG, WebP or GIF, up to 20 MiB): it is attached for you to "
        "see. For screenshots, diagrams, rendered output; text files go through ReadFile. "
        'Example: {"path": "docs/login.png"}'
    )
    Params = ReadMediaFileParams
    facts = READS

    async def run(self, params: ReadMediaFileParams, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.resolve(params.path)
        try:
            url = image_bytes_url(read_workspace_image(ctx, path, params.path), params.path)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        rel = ctx.workspace.relative(path)
        return ToolResult(f"image {rel} attached in the next message", images=[url])
