"""Images sized for the model: downscaled to the model's long-edge bound, oriented, one frame, counted by area.

Every image that reaches the model goes through `prepare` (--image, @file, /image, ReadMediaFile, MCP image
results, ACP image blocks). Kimi's vision encoder cuts a picture into 14x14-pixel patches, one token each
(the model table's `image_patch`), so a 4K screenshot costs ~42k tokens as sent and ~12k at 2048 px, and
pixels past the bound buy nothing. An image already within the bound, upright, one frame and small keeps
its pixels byte for byte, minus its metadata (EXIF, XMP, text chunks: kimi_cli.media.headers); anything
else is re-encoded (PNG for graphics that stay small, JPEG otherwise), which carries no metadata either.

Nothing is decoded before its headers are read: a file whose largest declared size (any chunk order, any
frame) is over the model table's `image_max_pixels` is refused from the header, and Pillow's own limit is
set to the same cap as a hard error. One image is decoded at a time in the whole process, and only one
full-size copy of it is kept while it is scaled (kimi_cli.media.decode, the part that needs Pillow).

Budgets and compaction count an image by its area (`image_tokens`, in kimi_cli.media.image with the limits
and the prepared picture that both halves share), never by its base64 length: read from the header of the
data URL, without Pillow. Pillow itself is imported only when an image must change.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Any

from kimi_cli.media.headers import read_header, without_metadata
from kimi_cli.media.image import (
    DEFAULT_LONG_EDGE,
    DEFAULT_PATCH,
    ImageError,
    ImageLimits,
    Prepared,
    image_tokens,
    pixel_cap,
)

MAX_IMAGE_BYTES = 20 * 1024 * 1024  # an image file or decoded data URL
SUPPORTED = ("image/png", "image/jpeg", "image/webp", "image/gif")


def sniff(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, WebP or GIF from its first bytes; None for anything else."""
    from kimi_cli.media.headers import mime_of

    mime = mime_of(head)
    return mime if mime in SUPPORTED else None


# --- dimensions from the header, without Pillow -----------------------------------------------------------


def dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) a decoder would allocate for this PNG, GIF, WebP, JPEG or TIFF: the bounding box of
    every size its headers declare (kimi_cli.media.headers); None when they do not say."""
    return read_header(data).size


HEAD_B64 = 262_144  # base64 characters decoded to find a header (a JPEG's EXIF block may come first)


@functools.lru_cache(maxsize=256)
def url_dimensions(url: str) -> tuple[int, int] | None:
    """(width, height) of a base64 data URL's image, from its first bytes only."""
    if not url.startswith("data:"):
        return None
    comma = url.find(",")
    if comma < 0 or ";base64" not in url[:comma]:
        return None
    head = url[comma + 1 : comma + 1 + HEAD_B64]
    head = head[: len(head) - len(head) % 4]
    try:
        return dimensions(base64.b64decode(head, validate=False))
    except (binascii.Error, ValueError):
        return None


def url_tokens(url: str, patch: int = DEFAULT_PATCH) -> int:
    """Vision tokens for an image part's URL; an image whose size cannot be read counts as a full bound."""
    size = url_dimensions(url)
    if size is None:
        return image_tokens(DEFAULT_LONG_EDGE, DEFAULT_LONG_EDGE, patch)
    return image_tokens(size[0], size[1], patch)


def message_tokens(message: dict[str, Any], chars_per_token: float, patch: int = DEFAULT_PATCH) -> int:
    """Estimated tokens of one message: its text by characters, each image by its area (never its base64)."""
    content = message.get("content")
    if not isinstance(content, list):
        import json

        return int(len(json.dumps(message, ensure_ascii=False)) / chars_per_token)
    rest = {k: v for k, v in message.items() if k != "content"}
    chars = len(str(rest)) + 16
    tokens = 0
    for part in content:
        url = _image_url(part)
        if url is not None:
            tokens += url_tokens(url, patch)
            chars += 32
        else:
            chars += len(str(part.get("text", "")) if isinstance(part, dict) else str(part)) + 16
    return tokens + int(chars / chars_per_token)


def strip_images(message: dict[str, Any]) -> dict[str, Any]:
    """The message with each image part's data replaced by a short marker (for text-only counting)."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = [{"type": "text", "text": "[image]"} if _image_url(p) is not None else p for p in content]
    return {**message, "content": parts}


def _image_url(part: Any) -> str | None:
    if isinstance(part, dict) and part.get("type") == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return url if isinstance(url, str) else ""
    return None


# --- preparing a picture ------------------------------------------------------------------------------------


def prepare(data: bytes, limits: ImageLimits, label: str = "image") -> Prepared:
    """The picture as it should reach the model; ImageError (a ValueError) says why it cannot."""
    head = read_header(data)
    if head.mime not in SUPPORTED:
        kind = " (TIFF)" if head.mime == "image/tiff" else ""
        raise ImageError(f"unsupported image format: {label}{kind} (PNG, JPEG, WebP and GIF are supported)")
    if head.size is None:
        raise ImageError(f"{label} cannot be decoded as an image: its headers do not give its size")
    width, height = head.size
    if width * height > (cap := pixel_cap(head.mime, limits)):
        raise ImageError(f"{label} is {width}x{height} pixels, more than kimi decodes ({cap:,}); "
                         "crop or shrink it first")  # fmt: skip
    if max(head.size) <= limits.long_edge and len(data) <= limits.keep_bytes and head.frames == 1:
        clean = without_metadata(data, head.mime) if head.orientation == 1 else None
        if clean is not None:
            return Prepared(head.mime, clean, width, height, head.size, changed=False)
    from kimi_cli.media.decode import reencode

    return reencode(data, head, limits, label)


def prepare_data_url(url: str, limits: ImageLimits, label: str = "image") -> Prepared:
    """The same for an image that arrives as a base64 data URL (MCP results, ACP image blocks)."""
    comma = url.find(",")
    if not url.startswith("data:") or comma < 0 or ";base64" not in url[:comma]:
        raise ImageError(f"{label} is not a base64 data URL")
    if len(url) - comma > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ImageError(f"{label} is over the {MAX_IMAGE_BYTES:,}-byte limit for an image")
    try:
        data = base64.b64decode(url[comma + 1 :], validate=False)
    except (binascii.Error, ValueError):
        raise ImageError(f"{label}: the data is not base64") from None
    return prepare(data, limits, label)


# --- images in a history --------------------------------------------------------------------------------------


def image_urls(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [url for url in (_image_url(p) for p in content) if url]


def history_image_tokens(messages: list[dict[str, Any]], patch: int = DEFAULT_PATCH) -> int:
    """Vision tokens of every image in a history (what the server's prompt_tokens include for them)."""
    return sum(url_tokens(url, patch) for m in messages for url in image_urls(m))


def recent_images(
    messages: list[dict[str, Any]], budget_tokens: int, max_images: int = 4, patch: int = DEFAULT_PATCH
) -> list[str]:
    """The newest images of a history that fit `budget_tokens` together, oldest first (compaction keeps
    them, so the model still sees the screenshot it is working from)."""
    kept: list[str] = []
    used = 0
    for message in reversed(messages):
        for url in reversed(image_urls(message)):
            cost = url_tokens(url, patch)
            if len(kept) >= max_images or used + cost > budget_tokens:
                return list(reversed(kept))
            kept.append(url)
            used += cost
    return list(reversed(kept))
