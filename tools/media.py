"""ReadMediaFile: give an image in the workspace to the model as an image part, sized for the model
(kimi_cli.image_pipeline: the model table's long-edge bound, EXIF orientation, first frame of a GIF)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from kimi_cli.image_pipeline import ImageLimits, Prepared, prepare
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


def image_data_url(path: Path, limits: ImageLimits | None = None) -> str:
    """Read an image and return a data URL sized for the model; ValueError says why when it cannot."""
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
    from kimi_cli.settings_read import read_settings_bytes

    try:  # one open, regular files only, never blocking: what was checked above may have been swapped since
        data = read_settings_bytes(path, MAX_IMAGE_BYTES)
    except OSError as exc:
        raise ValueError(f"cannot read image {path}: {exc.strerror}") from None
    return image_bytes_url(data, str(path), limits)


def image_bytes_url(data: bytes, label: str, limits: ImageLimits | None = None) -> str:
    """A data URL for image bytes already read, downscaled and re-encoded where the model needs it;
    ValueError (ImageError) when they are not a supported image or cannot fit the request."""
    return prepare(data, limits or ImageLimits(), label).data_url()


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
        limits = ctx.services.get("image_limits") or ImageLimits()
        data = read_workspace_image(ctx, path, params.path)
        try:
            prepared: Prepared = await asyncio.to_thread(prepare, data, limits, params.path)  # Pillow: off the loop
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        rel = ctx.workspace.relative(path)
        return ToolResult(
            f"image {rel} attached in the next message ({prepared.note()}, ~{prepared.tokens(limits.patch):,} tokens)",
            images=[prepared.data_url()],
        )
