"""Limits on what one MCP result may put into the conversation (and so into the session log).

An image part is checked here before anything keeps it: one over MAX_IMAGE_BYTES, or past the result's
MAX_RESULT_IMAGE_BYTES, or of a type that is not an image, becomes a short text placeholder the model can
read, never raw bytes in the log. The image pipeline (downscaling to what the model can use) plugs in at
`image_part`: whatever it returns is still held to these caps.
"""

from __future__ import annotations

import re

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # decoded bytes of one image
MAX_RESULT_IMAGE_BYTES = 10 * 1024 * 1024  # all images of one result
MAX_IMAGES = 8
IMAGE_TYPES = re.compile(r"image/(png|jpeg|jpg|gif|webp)$")


def decoded_size(data_b64: str) -> int:
    """Bytes the base64 text decodes to, without decoding it."""
    data = data_b64.rstrip("=\n\r ")
    return len(data) * 3 // 4


class ImageBudget:
    """Counts the images of one result against the per-result caps."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def image_part(self, mime_type: str | None, data_b64: str) -> tuple[str | None, str]:
        """(data URL to send, or None; the text note that goes beside it)."""
        mime = (mime_type or "").lower()
        size = decoded_size(data_b64)
        if not IMAGE_TYPES.match(mime):
            return None, f"[image left out: type {mime or 'unknown'!r} is not png, jpeg, gif or webp]"
        if size > MAX_IMAGE_BYTES:
            return None, (f"[image left out: {mime}, {size:,} bytes is over the {MAX_IMAGE_BYTES:,}-byte cap for one "
                          "image; ask the tool for a smaller one]")  # fmt: skip
        if self.count >= MAX_IMAGES or self.total + size > MAX_RESULT_IMAGE_BYTES:
            return None, f"[image left out: {mime}, {size:,} bytes; this result already holds {self.count} images]"
        if not re.fullmatch(r"[A-Za-z0-9+/=\s]*", data_b64[:4096]):
            return None, f"[image left out: {mime}, the data is not base64]"
        self.count += 1
        self.total += size
        return f"data:{mime};base64,{data_b64}", f"[image: {mime}, {size:,} bytes]"
