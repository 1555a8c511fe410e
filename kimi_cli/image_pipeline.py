"""Images sized for the model: downscaled to the model's long-edge bound, oriented, one frame, counted by area.

Every image that reaches the model goes through `prepare` (--image, @file, /image, ReadMediaFile, MCP image
results, ACP image blocks). Kimi's vision encoder cuts a picture into 14x14-pixel patches, one token each
(the model table's `image_patch`), so a 4K screenshot costs ~42k tokens as sent and ~12k at 2048 px, and
pixels past the bound buy nothing. An image already within the bound, upright, one frame and small keeps
its pixels byte for byte, minus its metadata (EXIF, XMP, text chunks: kimi_cli.image_headers); anything
else is re-encoded (PNG for graphics that stay small, JPEG otherwise), which carries no metadata either.

Nothing is decoded before its headers are read: a file whose largest declared size (any chunk order, any
frame) is over the model table's `image_max_pixels` is refused from the header, and Pillow's own limit is
set to the same cap as a hard error. One image is decoded at a time in the whole process, and only one
full-size copy of it is kept while it is scaled.

Budgets and compaction count an image by its area (`image_tokens`), never by its base64 length: read from
the header of the data URL, without Pillow. Pillow itself is imported only when an image must change.
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
import math
import threading
from dataclasses import dataclass
from typing import Any

from kimi_cli.image_headers import Header, read_header, without_metadata

DEFAULT_LONG_EDGE = 2048
DEFAULT_PATCH = 14
KEEP_BYTES = 1_500_000  # an image within the bound and under this size keeps its pixels' bytes
MAX_PIXELS = 50_000_000  # the default decode cap (the model table's image_max_pixels): a bomb, or no model's use
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # an image file or decoded data URL
MIN_LONG_EDGE = 256  # shrinking to fit the request cap stops here
JPEG_QUALITIES = (85, 70, 50)
ENCODED_INFO = ("transparency", "icc_profile")  # what a re-encoded picture keeps of its original's info
RESAMPLED = ("RGB", "RGBA", "L", "LA")  # modes LANCZOS scaling takes as they are
PREMULTIPLIED = {"RGBA": "RGBa", "LA": "La"}  # what Pillow scales transparent pictures in (its own copy, else)
# Full-size canvases a format's decoder holds at once: Pillow reads every WebP through libwebp's animation
# decoder (its canvas, the previous one, the frame's bytes and the image), so a WebP gets a quarter of the cap.
DECODE_CANVASES = {"image/webp": 4}
SUPPORTED = ("image/png", "image/jpeg", "image/webp", "image/gif")
# Pillow's exif_transpose, by EXIF orientation
TRANSPOSE = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE", 6: "ROTATE_270",
             7: "TRANSVERSE", 8: "ROTATE_90"}  # fmt: skip
# Decoding is the costly part (a 50M-pixel RGBA picture is 200 MB): one at a time in the whole process,
# however many reads the model asks for at once, and always on the same thread, so that glibc serves every
# decode from one arena (kimi keeps freed buffers up to 32 MB in the heap: kimi_cli.malloc_tuning) instead
# of leaving a decode's worth of freed pages in each caller thread's arena.
DECODES_AT_ONCE = 1
_decoder_lock = threading.Lock()
_decoder: Any = None


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
    from kimi_cli.image_headers import mime_of

    mime = mime_of(head)
    return mime if mime in SUPPORTED else None


def image_tokens(width: int, height: int, patch: int = DEFAULT_PATCH) -> int:
    """Vision tokens for a picture: one per patch x patch tile (a partial tile counts)."""
    if width <= 0 or height <= 0:
        return 0
    return math.ceil(width / patch) * math.ceil(height / patch)


# --- dimensions from the header, without Pillow -----------------------------------------------------------


def dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) a decoder would allocate for this PNG, GIF, WebP, JPEG or TIFF: the bounding box of
    every size its headers declare (kimi_cli.image_headers); None when they do not say."""
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
    return _on_decoder(_reencode, data, head, limits, label)


def pixel_cap(mime: str, limits: ImageLimits) -> int:
    """The most pixels a picture of this format may declare: the model table's cap, per decoded canvas."""
    return limits.max_pixels // DECODE_CANVASES.get(mime, 1)


def _on_decoder(work: Any, *args: Any) -> Prepared:
    """Run `work` on the process's one decoding thread and wait for it; freed pages go back afterwards."""
    global _decoder
    with _decoder_lock:
        if _decoder is None:
            from concurrent.futures import ThreadPoolExecutor

            _decoder = ThreadPoolExecutor(max_workers=DECODES_AT_ONCE, thread_name_prefix="kimi-image-decode")
    try:
        return _decoder.submit(work, *args).result()  # type: ignore[no-any-return]
    finally:
        from kimi_cli.malloc_tuning import release_free_pages

        release_free_pages()


def _pillow(max_pixels: int) -> Any:
    """Pillow, with its bomb limit at our cap as an error (Pillow only warns between 1x and 2x its cap)."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency; a broken install still gets a clear error
        raise ImageError("this image needs resizing and Pillow is not installed (pip install pillow)") from None
    import warnings

    Image.MAX_IMAGE_PIXELS = max_pixels
    warnings.filterwarnings("error", category=Image.DecompressionBombWarning)
    return Image


def _reencode(data: bytes, head: Header, limits: ImageLimits, label: str) -> Prepared:
    assert head.mime is not None
    cap = pixel_cap(head.mime, limits)
    Image = _pillow(cap)
    try:
        opened = Image.open(io.BytesIO(data), formats=[head.mime.split("/")[1].upper()])
    except Exception as exc:
        raise _decode_error(exc, label, cap) from None
    with opened:
        original = opened.size
        orientation = _orientation(opened, head)
        if opened.format == "JPEG" and max(original) > 2 * limits.long_edge:
            # decode a big photo at 1/2, 1/4 or 1/8 scale, never below the size it is sent at
            ratio = limits.long_edge / max(original)
            opened.draft(opened.mode, (math.ceil(original[0] * ratio), math.ceil(original[1] * ratio)))
        try:
            opened.load()  # the one full-size copy; the first frame of an animation
        except Exception as exc:
            raise _decode_error(exc, label, cap) from None
        alpha = opened.mode in ("RGBA", "LA", "PA") or (opened.mode == "P" and "transparency" in opened.info)
        img = opened
        if max(opened.size) > limits.long_edge:  # it will be scaled: into a mode that scales without a copy
            for mode in _scaling_modes(opened.mode):
                converted = img.convert(mode)
                img.close()  # the previous full-size copy goes at once: at most two exist, for a moment
                img = converted
        return _fit(img, head.mime, alpha, original, orientation, limits, label)


def _scaling_modes(mode: str) -> list[str]:
    """The conversions before scaling (premultiplied alpha, as Pillow would make itself, in a second copy)."""
    if mode in PREMULTIPLIED:
        return [PREMULTIPLIED[mode]]
    if mode in RESAMPLED:
        return []
    wide = "RGBA" if "A" in mode or mode == "P" else "RGB"
    return [wide, PREMULTIPLIED[wide]] if wide in PREMULTIPLIED else [wide]


def _decode_error(exc: Exception, label: str, cap: int) -> ImageError:
    from PIL import Image

    if isinstance(exc, (Image.DecompressionBombError, Image.DecompressionBombWarning)):
        return ImageError(f"{label} has more pixels than kimi decodes ({cap:,}); crop or shrink it")
    return ImageError(f"{label} cannot be decoded as an image ({type(exc).__name__}: {exc})")


def _orientation(opened: Any, head: Header) -> int:
    try:
        return int(opened.getexif().get(0x0112, head.orientation))
    except Exception:
        return head.orientation


def _fit(img: Any, mime: str, alpha: bool, original: tuple[int, int], orientation: int, limits: ImageLimits,
         label: str) -> Prepared:  # fmt: skip
    """Scale (then turn upright: turning the small copy is cheap) and encode until it fits the request."""
    edge = min(limits.long_edge, max(img.size))
    try_png = mime != "image/jpeg" or alpha  # graphics stay PNG while that stays small
    while True:
        scaled = _upright(_scaled(img, edge), orientation)
        # Pillow carries a picture's info into what it saves (a JPEG's comment, say): keep only what drawing needs
        scaled.info = {k: v for k, v in scaled.info.items() if k in ENCODED_INFO}
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


def _upright(img: Any, orientation: int) -> Any:
    method = TRANSPOSE.get(orientation)
    if method is None:
        return img
    from PIL import Image

    return img.transpose(getattr(Image.Transpose, method))


def _scaled(img: Any, edge: int) -> Any:
    from PIL import Image

    width, height = img.size
    if max(width, height) <= edge:
        return img
    ratio = edge / max(width, height)
    size = (max(1, round(width * ratio)), max(1, round(height * ratio)))
    source = img
    for mode in _scaling_modes(img.mode) if img.mode not in PREMULTIPLIED.values() else []:
        source = source.convert(mode)  # a small picture shrunk to fit the request: copies cost little
    scaled = source.resize(size, Image.Resampling.LANCZOS)
    straight = {v: k for k, v in PREMULTIPLIED.items()}.get(scaled.mode)
    return scaled.convert(straight) if straight else scaled


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
