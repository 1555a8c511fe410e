"""Images sized for the model: downscaled to the model's long-edge bound, oriented, one frame, counted by area.

Every image that reaches the model goes through `prepare` (--image, @file, /image, ReadMediaFile, MCP image
results, ACP image blocks). Kimi's vision encoder cuts a picture into 14x14-pixel patches, one token each
(the model table's `image_patch`), so a 4K screenshot costs ~42k tokens as sent and ~12k at 2048 px, and
pixels past the bound buy nothing. An image already within the bound, upright, one frame and small keeps
its exact bytes; anything else is re-encoded (PNG for graphics that stay small, JPEG otherwise).

Budgets and compaction count an image by its area (`image_tokens`), never by its base64 length: read from
the header of the data URL, without Pillow. Pillow itself is imported only when an image must change.
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
import math
import struct
from dataclasses import dataclass
from typing import Any

DEFAULT_LONG_EDGE = 2048
DEFAULT_PATCH = 14
KEEP_BYTES = 1_500_000  # an image within the bound and under this size goes as it is, byte for byte
MAX_PIXELS = 80_000_000  # decoded area refused outright (a decompression bomb, or a scan no model can use)
MIN_LONG_EDGE = 256  # shrinking to fit the request cap stops here
JPEG_QUALITIES = (85, 70, 50)
SNIFF = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


class ImageError(ValueError):
    """This picture cannot go to the model; the message says why and what to do."""


@dataclass(frozen=True)
class ImageLimits:
    """What the model in use takes: the long-edge bound, the patch size, and the request cap."""

    long_edge: int = DEFAULT_LONG_EDGE
    patch: int = DEFAULT_PATCH
    max_request_bytes: int = 100_000_000
    keep_bytes: int = KEEP_BYTES

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
    )


@dataclass(frozen=True)
class Prepared:
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


def sniff(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, WebP or GIF from its first bytes; None for anything else."""
    for magic, mime in SNIFF.items():
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_tokens(width: int, height: int, patch: int = DEFAULT_PATCH) -> int:
    """Vision tokens for a picture: one per patch x patch tile (a partial tile counts)."""
    if width <= 0 or height <= 0:
        return 0
    return math.ceil(width / patch) * math.ceil(height / patch)


# --- dimensions from the header, without Pillow -----------------------------------------------------------


def dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, WebP or JPEG header; None when the bytes do not say."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
    except struct.error:
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None


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
    mime = sniff(data[:16])
    if mime is None:
        raise ImageError(f"unsupported image format: {label} (PNG, JPEG, WebP and GIF are supported)")
    size = dimensions(data)
    if size is not None and size[0] * size[1] > MAX_PIXELS:
        raise ImageError(f"{label} is {size[0]}x{size[1]} pixels, more than kimi decodes ({MAX_PIXELS:,}); "
                         "crop or shrink it first")  # fmt: skip
    if size is not None and _keep_as_is(data, mime, size, limits):
        return Prepared(mime, data, size[0], size[1], size, changed=False)
    return _reencode(data, mime, limits, label)


def _keep_as_is(data: bytes, mime: str, size: tuple[int, int], limits: ImageLimits) -> bool:
    """Small, within the bound, one frame, upright: the exact bytes go (no decode, no Pillow)."""
    if max(size) > limits.long_edge or len(data) > limits.keep_bytes:
        return False
    if mime == "image/gif" and data.count(b"\x21\xf9\x04") > 1:
        return False  # more than one graphic control block: animated, the first frame is sent
    if mime in ("image/jpeg", "image/webp") and b"Exif" in data[:65536]:
        return _exif_upright(data)
    return True


def _exif_upright(data: bytes) -> bool:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as img:
            return int(img.getexif().get(0x0112, 1)) == 1
    except Exception:
        return True


def _reencode(data: bytes, mime: str, limits: ImageLimits, label: str) -> Prepared:
    try:
        from PIL import Image, ImageOps
    except ImportError:  # pragma: no cover - Pillow is a dependency; a broken install still gets a clear error
        raise ImageError(f"{label} needs resizing and Pillow is not installed (pip install pillow)") from None
    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        with Image.open(io.BytesIO(data)) as opened:
            original = opened.size
            opened.seek(0)  # an animated GIF or WebP: its first frame
            img = ImageOps.exif_transpose(opened.copy()) or opened.copy()
    except Image.DecompressionBombError:
        raise ImageError(
            f"{label} has more pixels than kimi decodes ({MAX_PIXELS:,}); crop or shrink it first"
        ) from None
    except Exception as exc:
        raise ImageError(f"{label} cannot be decoded as an image ({type(exc).__name__}: {exc})") from None
    alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    edge = min(limits.long_edge, max(img.size))
    try_png = mime != "image/jpeg" or alpha  # graphics stay PNG while that stays small
    while True:
        scaled = _scaled(img, edge)
        smallest = 0
        for out_mime, encoded in _encodings(scaled, try_png, alpha, limits):
            if out_mime == "image/png" and not alpha and len(encoded) > limits.keep_bytes:
                try_png = False  # a photo-like picture: JPEG from here on (PNG will not get small)
                continue
            url_chars = len(encoded) * 4 // 3 + 64
            if url_chars <= limits.max_url_chars:
                return Prepared(out_mime, encoded, scaled.size[0], scaled.size[1], original, changed=True)
            smallest = url_chars
        if edge <= MIN_LONG_EDGE:
            break
        # bytes go with the area: jump to the edge that should fit, at most 3/4 of this one
        shrink = math.sqrt(limits.max_url_chars / smallest) * 0.95 if smallest else 0.75
        edge = max(MIN_LONG_EDGE, int(edge * min(0.75, shrink)))
    raise ImageError(
        f"{label} does not fit the request cap ({limits.max_request_bytes:,} bytes for the whole request) even at "
        f"{MIN_LONG_EDGE}px and JPEG quality {JPEG_QUALITIES[-1]}"
    )


def _scaled(img: Any, edge: int) -> Any:
    from PIL import Image

    width, height = img.size
    if max(width, height) <= edge:
        return img
    ratio = edge / max(width, height)
    size = (max(1, round(width * ratio)), max(1, round(height * ratio)))
    source = img if img.mode in ("RGB", "RGBA", "L", "LA") else img.convert("RGBA" if "A" in img.mode or
                                                                              img.mode == "P" else "RGB")  # fmt: skip
    return source.resize(size, Image.Resampling.LANCZOS)


def _encodings(img: Any, try_png: bool, alpha: bool, limits: ImageLimits) -> Any:
    """Candidate encodings, best first: PNG for graphics (and anything with transparency), then JPEG at
    falling quality (transparency flattened on white)."""
    if try_png:
        yield "image/png", _save(img, "PNG", compress_level=4)  # near level 6's size, about twice as fast
    flat = img
    if img.mode not in ("RGB", "L"):
        flat = img.convert("RGBA")
        from PIL import Image

        background = Image.new("RGB", flat.size, (255, 255, 255))
        background.paste(flat, mask=flat.getchannel("A"))
        flat = background
    for quality in JPEG_QUALITIES:
        yield "image/jpeg", _save(flat, "JPEG", quality=quality)


def _save(img: Any, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    if fmt == "PNG" and img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        img = img.convert("RGBA")
    img.save(out, fmt, **options)
    return out.getvalue()


def prepare_data_url(url: str, limits: ImageLimits, label: str = "image") -> Prepared:
    """The same for an image that arrives as a base64 data URL (MCP results, ACP image blocks)."""
    comma = url.find(",")
    if not url.startswith("data:") or comma < 0 or ";base64" not in url[:comma]:
        raise ImageError(f"{label} is not a base64 data URL")
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
