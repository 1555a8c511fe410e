"""Decoding, scaling and re-encoding a picture with Pillow: the costly half of kimi_cli.media.pipeline,
reached only once the headers have been read and the picture is within the pixel cap.

Decoding is the costly part (a 50M-pixel RGBA picture is 200 MB): one at a time in the whole process,
however many reads the model asks for at once, and always on the same thread, so that glibc serves every
decode from one arena (kimi keeps freed buffers up to 32 MB in the heap: kimi_cli.util.malloc_tuning) instead of
leaving a decode's worth of freed pages in each caller thread's arena. One full-size copy is kept while it
is scaled: a conversion closes the copy it came from, and a picture is turned upright once small.
"""

from __future__ import annotations

import io
import math
import threading
from typing import Any

from kimi_cli.media.headers import Header
from kimi_cli.media.image import ImageError, ImageLimits, Prepared, pixel_cap

JPEG_QUALITIES = (85, 70, 50)
MIN_LONG_EDGE = 256  # shrinking to fit the request cap stops here
ENCODED_INFO = ("transparency", "icc_profile")  # what a re-encoded picture keeps of its original's info
RESAMPLED = ("RGB", "RGBA", "L", "LA")  # modes LANCZOS scaling takes as they are
PREMULTIPLIED = {"RGBA": "RGBa", "LA": "La"}  # what Pillow scales transparent pictures in (its own copy, else)
# Pillow's exif_transpose, by EXIF orientation
TRANSPOSE = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE", 6: "ROTATE_270",
             7: "TRANSVERSE", 8: "ROTATE_90"}  # fmt: skip
DECODES_AT_ONCE = 1
_decoder_lock = threading.Lock()
_decoder: Any = None


def reencode(data: bytes, head: Header, limits: ImageLimits, label: str) -> Prepared:
    """The picture decoded (its first frame), scaled, upright and encoded to fit the request; ImageError
    says why it cannot. Runs on the process's one decoding thread; the caller waits."""
    return _on_decoder(_reencode, data, head, limits, label)


def _on_decoder(work: Any, *args: Any) -> Prepared:
    """Run `work` on the process's one decoding thread and wait for it; freed pages go back afterwards."""
    global _decoder
    with _decoder_lock:
        if _decoder is None:
            from concurrent.futures import ThreadPoolExecutor

            _decoder = ThreadPoolExecutor(max_workers=DECODES_AT_ONCE, thread_name_prefix="kimi-image-decode")
    try:
        return _decoder.submit(work, *args).result()
    finally:
        from kimi_cli.util.malloc_tuning import release_free_pages

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
