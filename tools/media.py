"""ReadMediaFile: give an image in the workspace to the model as an image part, sized for the model
(kimi_cli.media.pipeline: the model table's long-edge bound, EXIF orientation, first frame of a GIF)."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from kimi_cli.media.image import ImageLimits, Prepared
from kimi_cli.media.pipeline import MAX_IMAGE_BYTES, prepare
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.workspace import Workspace


def read_workspace_image(workspace: Workspace, shown: str) -> bytes:
    """An image inside the workspace: resolved there (a link out is refused), then read through a no-follow
    open, regular files only, size checked on the descriptor. ToolError says why not (its cause is the
    OSError, when there is one)."""
    import os

    from kimi_cli.hostsafe.fs import open_regular

    path = workspace.resolve(shown)
    try:
        fd, st = open_regular(workspace.root, workspace.rel(path))
    except OSError as exc:
        raise workspace.refused(shown, exc) from exc
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > MAX_IMAGE_BYTES:
            raise ToolError(f"image too large: {shown} is {st.st_size} bytes (limit {MAX_IMAGE_BYTES})")
        return fh.read(MAX_IMAGE_BYTES + 1)


def _read_prepared(workspace: Workspace, shown: str, limits: ImageLimits) -> Prepared:
    return prepare(read_workspace_image(workspace, shown), limits, shown)


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
        limits = ctx.image_limits or ImageLimits()
        try:  # the read and Pillow, off the loop
            prepared: Prepared = await asyncio.to_thread(_read_prepared, ctx.workspace, params.path, limits)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        rel = ctx.workspace.relative(ctx.workspace.resolve(params.path))
        return ToolResult(
            f"image {rel} attached in the next message ({prepared.note()}, ~{prepared.tokens(limits.patch):,} tokens)",
            images=[prepared.data_url()],
        )
