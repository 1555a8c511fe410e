"""What a picture is to the model: the limits of the model in use (ImageLimits), the picture prepared for it
(Prepared), its cost by area (image_tokens), and the refusal (ImageError).

The pipeline (kimi_cli.media.pipeline) decides what each picture needs and the Pillow part
(kimi_cli.media.decode) re-encodes it; both take these from here.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

DEFAULT_LONG_EDGE = 2048
DEFAULT_PATCH = 14
KEEP_BYTES = 1_500_000  # an image within the bound and under this size keeps its pixels' bytes
MAX_PIXELS = 50_000_000  # the default decode cap (the model table's image_max_pixels): a bomb, or no model's use
# Full-size canvases a format's decoder holds at once: Pillow reads every WebP through libwebp's animation
# decoder (its canvas, the previous one, the frame's bytes and the image), so a WebP gets a quarter of the cap.
DECODE_CANVASES = {"image/webp": 4}


class ImageError(ValueError):
    """This picture cannot go to the model; the message says why and what to do."""


@dataclass(frozen=True)
class ImageLimits:
    """What the model in use takes: the long-edge bound, the patch size, and the request cap."""

    long_edge: int = DEFAULT_LONG_EDGE
    patch: int = DEFAULT_PATCH
    max_request_bytes: int = 100_000_000
    keep_bytes: int = KEEP_BYTES
    max_pixels: int = MAX_PIXELS

    @property
    def max_url_chars(self) -> int:
        """One image may use at most half the request (the rest is the conversation)."""
        return self.max_request_bytes // 2


def limits_for(info: Any, long_edge: int | None = None) -> ImageLimits:
    """The limits for a model table entry; `long_edge` (config `[images] long_edge`) overrides the table's."""
    edge = long_edge or int(getattr(info, "image_long_edge", DEFAULT_LONG_EDGE) or DEFAULT_LONG_EDGE)
    return ImageLimits(
        long_edge=edge,
        patch=int(getattr(info, "image_patch", DEFAULT_PATCH) or DEFAULT_PATCH),
        max_request_bytes=int(getattr(info, "max_request_bytes", 100_000_000) or 100_000_000),
        max_pixels=int(getattr(info, "image_max_pixels", MAX_PIXELS) or MAX_PIXELS),
    )


@dataclass(frozen=True)
class Prepared:
    """A picture as it goes to the model: its format, bytes and size, the size it came in, and whether it was
    re-encoded."""

    mime: str
    data: bytes
    width: int
    height: int
    original: tuple[int, int]
    changed: bool  # re-encoded (downscaled, rotated, first frame, or made smaller)

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def tokens(self, patch: int = DEFAULT_PATCH) -> int:
        return image_tokens(self.width, self.height, patch)

    def note(self) -> str:
        """What happened to it, for the tool result or the log."""
        ow, oh = self.original
        size = f"{self.width}x{self.height}"
        return size if not self.changed or (ow, oh) == (self.width, self.height) else f"{ow}x{oh} -> {size}"


def image_tokens(width: int, height: int, patch: int = DEFAULT_PATCH) -> int:
    """Vision tokens for a picture: one per patch x patch tile (a partial tile counts)."""
    if width <= 0 or height <= 0:
        return 0
    return math.ceil(width / patch) * math.ceil(height / patch)


def pixel_cap(mime: str, limits: ImageLimits) -> int:
    """The most pixels a picture of this format may declare: the model table's cap, per decoded canvas."""
    return limits.max_pixels // DECODE_CANVASES.get(mime, 1)
