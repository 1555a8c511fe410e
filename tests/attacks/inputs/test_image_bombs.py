"""Decompression bombs: a small file that declares a huge picture somewhere a header reader at a fixed offset
does not look (tEXt before IHDR, a GIF frame larger than its 1x1 screen, an APNG or WebP frame, a second
JPEG SOF, a TIFF's second directory) is refused from its headers, before anything decodes it; a whole
`kimi -p` turn of them, beside three legitimate near-cap pictures, stays under 600 MB of RSS.

The files are made by hand (struct and zlib): Pillow would refuse to write most of them.
"""

from __future__ import annotations

import functools
import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from kimi_cli.media.image import ImageError, ImageLimits
from kimi_cli.media.pipeline import dimensions, prepare

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, run_for_peak_rss, tool_call, tool_results


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def ihdr(width: int, height: int, color: int = 2) -> bytes:
    return chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0))


def zero_rows(width: int, height: int, channels: int) -> bytes:
    """IDAT data for `height` rows of zeros, compressed row by row (the raw picture is never in memory)."""
    packer = zlib.compressobj(9)
    row = b"\x00" * (1 + width * channels)
    return b"".join(packer.compress(row) for _ in range(height)) + packer.flush()


@functools.cache
def png_text_before_ihdr(side: int = 12600) -> bytes:
    """12600x12600 RGB (476 MB decoded) in ~460 KB, its IHDR after a tEXt chunk: Pillow decodes it."""
    text = chunk(b"tEXt", b"Comment\x00made by hand")
    pixels = chunk(b"IDAT", zero_rows(side, side, 3))
    return b"\x89PNG\r\n\x1a\n" + text + ihdr(side, side) + pixels + chunk(b"IEND", b"")


@functools.cache
def png_near_cap(side: int = 7000) -> bytes:
    """A real 7000x7000 RGBA picture (49M pixels, under the 50M cap): 196 MB once decoded."""
    return b"\x89PNG\r\n\x1a\n" + ihdr(side, side, 6) + chunk(b"IDAT", zero_rows(side, side, 4)) + chunk(b"IEND", b"")


def apng_with_a_huge_frame() -> bytes:
    small = chunk(b"IDAT", zlib.compress(b"\x00" * (1 + 64 * 3) * 64))
    first = chunk(b"fcTL", struct.pack(">IIIIIHHBB", 0, 64, 64, 0, 0, 1, 10, 0, 0))
    huge = chunk(b"fcTL", struct.pack(">IIIIIHHBB", 1, 20000, 20000, 0, 0, 1, 10, 0, 0))
    frame = chunk(b"fdAT", struct.pack(">I", 2) + zlib.compress(b"\x00" * 100))
    animation = chunk(b"acTL", struct.pack(">II", 2, 0))
    return b"\x89PNG\r\n\x1a\n" + ihdr(64, 64) + animation + first + small + huge + frame + chunk(b"IEND", b"")


def gif_with_a_huge_frame(width: int = 12000, height: int = 13000) -> bytes:
    """A 1x1 logical screen and a 12000x13000 frame (Pillow widens its canvas to the frame), then a second
    frame, so the file is animated."""
    screen = b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    control = b"\x21\xf9\x04\x00\x0a\x00\x00\x00"
    lzw = b"\x02\x02\x4c\x01\x00"  # minimum code size 2, one sub-block: clear, a pixel, end
    huge = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + lzw
    small = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + lzw
    return screen + control + huge + control + small + b"\x3b"


def webp_with_a_huge_frame() -> bytes:
    """A 64x64 animated canvas whose one frame says 12000x12000."""

    def riff_chunk(fourcc: bytes, data: bytes) -> bytes:
        return fourcc + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) & 1 else b"")

    def u24(value: int) -> bytes:
        return value.to_bytes(3, "little")

    vp8x = riff_chunk(b"VP8X", bytes([0x02, 0, 0, 0]) + u24(63) + u24(63))
    anim = riff_chunk(b"ANIM", b"\x00\x00\x00\x00\x00\x00")
    bits = (12000 - 1) | ((12000 - 1) << 14)
    vp8l = riff_chunk(b"VP8L", b"\x2f" + bits.to_bytes(4, "little") + b"\x00" * 8)
    frame = riff_chunk(b"ANMF", u24(0) + u24(0) + u24(12000 - 1) + u24(12000 - 1) + u24(100) + b"\x00" + vp8l)
    body = b"WEBP" + vp8x + anim + frame
    return b"RIFF" + struct.pack("<I", len(body)) + body


def jpeg_with_a_second_sof() -> bytes:
    def sof(width: int, height: int) -> bytes:
        body = struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"
        return b"\xff\xc0" + struct.pack(">H", len(body) + 2) + body

    return b"\xff\xd8" + sof(100, 100) + sof(60000, 60000) + b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00" + b"\xff\xd9"


def tiff_with_a_huge_second_page() -> bytes:
    def ifd(width: int, height: int, next_at: int) -> bytes:
        entries = [struct.pack("<HHII", 256, 4, 1, width), struct.pack("<HHII", 257, 4, 1, height)]
        return struct.pack("<H", len(entries)) + b"".join(entries) + struct.pack("<I", next_at)

    first_at = 8
    second_at = first_at + len(ifd(0, 0, 0))
    return b"II*\x00" + struct.pack("<I", first_at) + ifd(10, 10, second_at) + ifd(100000, 100000, 0)


# --- refused from the headers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "size"),
    [(png_text_before_ihdr, (12600, 12600)), (apng_with_a_huge_frame, (20000, 20000)),
     (gif_with_a_huge_frame, (12000, 13000)), (webp_with_a_huge_frame, (12000, 12000)),
     (jpeg_with_a_second_sof, (60000, 60000)), (tiff_with_a_huge_second_page, (100000, 100000))],
)  # fmt: skip
def test_the_largest_declared_size_is_found_wherever_the_file_puts_it(make: object, size: tuple[int, int]) -> None:
    assert dimensions(make()) == size  # type: ignore[operator]


@pytest.mark.parametrize(
    "make", [png_text_before_ihdr, apng_with_a_huge_frame, gif_with_a_huge_frame, webp_with_a_huge_frame,
             jpeg_with_a_second_sof],
)  # fmt: skip
def test_a_bomb_is_refused_before_it_is_decoded(make: object) -> None:
    data = make()  # type: ignore[operator]
    width, height = dimensions(data)  # type: ignore[misc]
    with pytest.raises(ImageError, match=f"{width}x{height} pixels, more than kimi decodes"):
        prepare(data, ImageLimits())


def test_a_tiff_is_refused_as_a_format_kimi_does_not_decode() -> None:
    with pytest.raises(ImageError, match=r"unsupported image format: page.tif \(TIFF\)"):
        prepare(tiff_with_a_huge_second_page(), ImageLimits(), "page.tif")


def flat_png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 20, 30)).save(out, "PNG")
    return out.getvalue()


def test_the_cap_is_the_model_tables_and_pillows_own_limit_is_it_as_an_error() -> None:
    from kimi_cli.llm.models import lookup
    from kimi_cli.media.image import limits_for

    assert limits_for(lookup("kimi-k3.1-pro")).max_pixels == 50_000_000
    tight = ImageLimits(max_pixels=1_000_000)
    with pytest.raises(ImageError, match="1200x1000 pixels"):
        prepare(flat_png(1200, 1000), tight)
    assert prepare(flat_png(2100, 300), tight).width == 2048  # 630k pixels: decoded and scaled
    assert Image.MAX_IMAGE_PIXELS == 1_000_000
    over = flat_png(1100, 1000)  # Pillow alone, past the cap but under twice it: an error, not a warning
    with pytest.raises(Image.DecompressionBombWarning):
        Image.open(io.BytesIO(over)).load()


def test_a_picture_under_the_cap_is_decoded_and_scaled() -> None:
    out = prepare(png_near_cap(), ImageLimits())
    assert out.changed and (out.width, out.height) == (2048, 2048) and out.original == (7000, 7000)


# --- a whole turn of them ----------------------------------------------------------------------------------


def test_a_turn_of_image_bombs_beside_near_cap_pictures_stays_under_600_mb(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    files = {
        "text_first.png": png_text_before_ihdr(),
        "frame.gif": gif_with_a_huge_frame(),
        "frame.webp": webp_with_a_huge_frame(),
        "pages.png": tiff_with_a_huge_second_page(),
        "near1.png": png_near_cap(),
        "near2.png": png_near_cap(),
        "near3.png": png_near_cap(),
    }
    for name, data in files.items():
        (repo / name).write_bytes(data)
    calls = [tool_call("ReadMediaFile", {"path": name}, f"r{i}") for i, name in enumerate(files)]
    server.add({"tool_calls": calls}, {"text": "looked at them"})
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    argv = [*kimi_executable(), "-p", "look at the pictures", "--no-pack", "--output-format", "json"]
    code, peak_kib = run_for_peak_rss(argv, repo, full_env)
    assert code == 0
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib // 1024} MB"
    results = dict(zip(files, tool_results(server, 1), strict=True))
    assert "12600x12600 pixels, more than kimi decodes" in results["text_first.png"]
    assert "12000x13000 pixels" in results["frame.gif"] and "12000x12000 pixels" in results["frame.webp"]
    assert "unsupported image format: pages.png (TIFF)" in results["pages.png"]
    for name in ("near1.png", "near2.png", "near3.png"):
        assert "7000x7000 -> 2048x2048" in results[name], results[name]
