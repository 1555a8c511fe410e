"""What an image file declares before anything decodes it, and the same picture without its metadata.

A decoder allocates what the file's headers say, wherever they are: Pillow reads a PNG whose `IHDR` comes
after a `tEXt` chunk, widens a GIF's canvas to its largest frame (a 1x1 screen can carry a 12000x13000
frame), and an animated WebP's canvas is allocated whole. So the size here is the bounding box of every
size a file declares (canvas, IHDR, each APNG/GIF/WebP frame, every JPEG SOF, every TIFF IFD), found by
walking the file's own structure: chunks, blocks and segments by their lengths, never by searching for
magic bytes (compressed data may contain them). A walk that cannot finish says so (`size` None).

`without_metadata` keeps what decoding needs (pixels, palette, transparency, colour profile) and drops
what describes the picture or its maker: EXIF (GPS, camera, time), XMP, text and comment chunks, GIF
application and comment blocks, bytes after the end marker. It changes no pixel.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PNG_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"
MAX_STEPS = 1_000_000  # chunks, blocks or sub-blocks one walk may visit: a real file needs far fewer
MAX_IFDS = 64
MAX_IFD_ENTRIES = 4096  # tags read per directory (a real one has a few dozen)
# PNG chunks a decoder needs to show the picture as drawn; everything else (tEXt, zTXt, iTXt, eXIf, tIME,
# pHYs, private chunks, the APNG frames) is left out
PNG_KEEP = {b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND", b"gAMA", b"cHRM", b"sRGB", b"sBIT", b"iCCP"}
JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
JPEG_STANDALONE = {0x01, *range(0xD0, 0xD8)}
JPEG_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")  # a marker after entropy-coded data (FF00 is data)
WEBP_DROP = {b"EXIF", b"XMP "}
VP8X_EXIF, VP8X_XMP, VP8X_ANIMATION = 0x08, 0x04, 0x02


@dataclass(frozen=True)
class Header:
    """What the file declares. `size`: the bounding box of every declared size (None: not readable)."""

    mime: str | None
    size: tuple[int, int] | None
    frames: int = 1
    orientation: int = 1  # EXIF orientation (1: upright)


class _Box:
    def __init__(self) -> None:
        self.width = 0
        self.height = 0
        self.seen = False

    def add(self, width: int, height: int) -> None:
        self.width, self.height, self.seen = max(self.width, width), max(self.height, height), True

    def size(self) -> tuple[int, int] | None:
        return (self.width, self.height) if self.seen else None


def mime_of(head: bytes) -> str | None:
    if head.startswith(PNG_MAGIC):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    return None


def read_header(data: bytes) -> Header:
    """The file's type, its largest declared size, frame count and orientation; never raises."""
    mime = mime_of(data[:16])
    reader = {"image/png": _png, "image/jpeg": _jpeg, "image/gif": _gif, "image/webp": _webp, "image/tiff": _tiff}
    if mime is None:
        return Header(None, None)
    try:
        return reader[mime](data)
    except (struct.error, IndexError, ValueError):
        return Header(mime, None)


def without_metadata(data: bytes, mime: str) -> bytes | None:
    """The same picture with its metadata left out; None when that cannot be done without decoding
    (an animation, a structure the walk does not know)."""
    try:
        if mime == "image/png":
            kept = [data[s:e] for kind, _a, _b, s, e in _png_chunks(data) if kind in PNG_KEEP]
            if not kept or kept[-1][4:8] != b"IEND":
                kept.append(PNG_IEND)
            return b"".join([PNG_MAGIC, *kept])
        if mime == "image/jpeg":
            return _jpeg_clean(data)
        if mime == "image/gif":
            return _gif_clean(data)
        if mime == "image/webp":
            return _webp_clean(data)
    except (struct.error, IndexError, ValueError):
        return None
    return None


# --- PNG and APNG ------------------------------------------------------------------------------------------


def _png_chunks(data: bytes) -> Iterator[tuple[bytes, int, int, int, int]]:
    """(type, payload start, payload end, chunk start, chunk end) of each chunk, by the chunks' lengths.
    A broken chunk after the pixels ends the walk, as it ends a decoder's; before them it is an error."""
    pos, steps, pixels = 8, 0, False
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        if length > 0x7FFFFFFF or (steps := steps + 1) > MAX_STEPS:
            if pixels:
                return
            raise ValueError("broken chunk")
        kind, end = data[pos + 4 : pos + 8], pos + 12 + length
        pixels = pixels or kind == b"IDAT"
        yield kind, pos + 8, min(pos + 8 + length, len(data)), pos, min(end, len(data))
        if kind == b"IEND" or end > len(data):  # the end, or a cut-off file (a data URL's first bytes)
            return
        pos = end


def _png(data: bytes) -> Header:
    box, frames, orientation = _Box(), 1, 1
    for kind, start, stop, _s, _e in _png_chunks(data):
        if kind == b"IHDR":
            box.add(*struct.unpack(">II", data[start : start + 8]))
        elif kind == b"fcTL":  # sequence, width, height, x offset, y offset
            _seq, width, height, x, y = struct.unpack(">5I", data[start : start + 20])
            box.add(x + width, y + height)
        elif kind == b"acTL":
            frames = max(1, int.from_bytes(data[start : start + 4], "big"))
        elif kind == b"eXIf":
            orientation = _orientation(data[start:stop])
        elif kind == b"IDAT" and not box.seen:
            raise ValueError("pixels before any size")
    return Header("image/png", box.size(), frames, orientation)


# --- JPEG ---------------------------------------------------------------------------------------------------


def _jpeg_segments(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(marker, start, end) of each segment; entropy-coded data after an SOS is part of that SOS's span.
    Ends at EOI (the bytes after it are not the picture's), or at a broken segment after a scan."""
    pos, steps, scanned = 2, 0, False
    while pos + 2 <= len(data):
        if (steps := steps + 1) > MAX_STEPS or data[pos] != 0xFF:
            if scanned:
                return
            raise ValueError("broken segment")
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0xD9:
            yield marker, pos, pos + 2
            return
        if marker in JPEG_STANDALONE:
            yield marker, pos, pos + 2
            pos += 2
            continue
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if end > len(data):  # cut off
            yield marker, pos, len(data)
            return
        if marker == 0xDA:  # the scan runs until the next real marker
            scanned = True
            found = JPEG_MARKER.search(data, end)
            end = found.start() if found else len(data)
        yield marker, pos, end
        pos = end


def _jpeg(data: bytes) -> Header:
    box, orientation = _Box(), 1
    for marker, start, end in _jpeg_segments(data):
        if marker in JPEG_SOF and start + 9 <= len(data):
            height, width = struct.unpack(">HH", data[start + 5 : start + 9])
            box.add(width, height)
        elif marker == 0xE1 and data[start + 4 : start + 10] == b"Exif\x00\x00":
            orientation = _orientation(data[start + 10 : end])
        elif marker == 0xDA:
            break  # the size is fixed before the first scan
    return Header("image/jpeg", box.size(), 1, orientation)


def _jpeg_keeps(marker: int, segment: bytes) -> bool:
    if 0xE0 <= marker <= 0xEF:  # APPn: keep the colour profile (APP2) and Adobe's colour transform (APP14)
        return (marker == 0xE2 and segment[4:16] == b"ICC_PROFILE\x00") or marker == 0xEE
    return marker != 0xFE  # COM


def _jpeg_clean(data: bytes) -> bytes:
    parts = [data[:2]]
    for marker, start, end in _jpeg_segments(data):
        if _jpeg_keeps(marker, data[start:end]):
            parts.append(data[start:end])
    return b"".join(parts)


# --- GIF ----------------------------------------------------------------------------------------------------


def _gif_blocks(data: bytes) -> Iterator[tuple[int, int, int, tuple[int, int] | None]]:
    """(kind, start, end, frame extent) of each block after the header: 0x21 extensions (kind 0x2100 |
    label), 0x2C images (with left+width, top+height), 0x3B the trailer."""
    flags = data[10]
    pos = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    steps, images = 0, False
    while pos < len(data):
        if (steps := steps + 1) > MAX_STEPS:
            raise ValueError("too many blocks")
        kind = data[pos]
        if kind not in (0x21, 0x2C, 0x3B) and images:  # junk after a picture ends it, as it ends a decoder
            return
        if kind == 0x3B:
            yield kind, pos, pos + 1, None
            return
        if kind == 0x21:
            end = _sub_blocks(data, pos + 2)
            yield 0x2100 | data[pos + 1], pos, end, None
        elif kind == 0x2C:
            left, top, width, height, image_flags = struct.unpack("<HHHHB", data[pos + 1 : pos + 10])
            table = 3 << ((image_flags & 7) + 1) if image_flags & 0x80 else 0
            end = _sub_blocks(data, pos + 10 + table + 1)  # after the LZW minimum code size
            images = True
            yield kind, pos, end, (left + width, top + height)
        else:
            raise ValueError("unknown block")
        pos = end


def _sub_blocks(data: bytes, pos: int) -> int:
    """Where a run of sub-blocks ends (the length of the data when it is cut off)."""
    for _ in range(MAX_STEPS):
        if pos >= len(data):
            return len(data)
        size = data[pos]
        pos += size + 1
        if size == 0:
            return pos
    raise ValueError("too many sub-blocks")


def _gif(data: bytes) -> Header:
    box = _Box()
    box.add(*struct.unpack("<HH", data[6:10]))
    frames = 0
    for _kind, _start, _end, extent in _gif_blocks(data):
        if extent is not None:
            box.add(*extent)
            frames += 1
    return Header("image/gif", box.size(), max(1, frames))


def _gif_clean(data: bytes) -> bytes:
    flags = data[10]
    parts = [data[: 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)]]
    for kind, start, end, _extent in _gif_blocks(data):
        if kind in (0x2C, 0x3B, 0x21F9):  # images, the trailer, graphic control (transparency, delay)
            parts.append(data[start:end])
    if parts[-1] != b";":
        parts.append(b";")
    return b"".join(parts)


# --- WebP ---------------------------------------------------------------------------------------------------


def _riff_chunks(data: bytes, pos: int, stop: int) -> Iterator[tuple[bytes, int, int, int]]:
    """(fourcc, payload start, payload end, chunk end) of each chunk between pos and stop."""
    steps = 0
    while pos + 8 <= stop:
        if (steps := steps + 1) > MAX_STEPS:
            raise ValueError("too many chunks")
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        end = pos + 8 + size + (size & 1)
        yield data[pos : pos + 4], pos + 8, min(pos + 8 + size, stop), min(end, stop)
        pos = end


def _bitstream_size(fourcc: bytes, payload: bytes) -> tuple[int, int] | None:
    if fourcc == b"VP8L" and payload[:1] == b"\x2f":
        bits = int.from_bytes(payload[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8 " and payload[3:6] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", payload[6:10])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _webp(data: bytes) -> Header:
    box, frames, orientation = _Box(), 0, 1
    stop = min(len(data), 8 + int.from_bytes(data[4:8], "little"))
    for fourcc, start, end, _chunk_end in _riff_chunks(data, 12, stop):
        if fourcc == b"VP8X":
            box.add(int.from_bytes(data[start + 4 : start + 7], "little") + 1,
                    int.from_bytes(data[start + 7 : start + 10], "little") + 1)  # fmt: skip
        elif fourcc == b"ANMF":  # x/2, y/2, width-1, height-1 (24 bits each), then the frame's own chunks
            x, y, w, h = (int.from_bytes(data[start + i : start + i + 3], "little") for i in (0, 3, 6, 9))
            box.add(2 * x + w + 1, 2 * y + h + 1)
            frames += 1
            for inner, s, e, _ in _riff_chunks(data, start + 16, end):
                if (size := _bitstream_size(inner, data[s : min(e, s + 16)])) is not None:
                    box.add(*size)
        elif fourcc == b"EXIF":
            orientation = _orientation(data[start:end])
        elif (size := _bitstream_size(fourcc, data[start : min(end, start + 16)])) is not None:
            box.add(*size)
    return Header("image/webp", box.size(), max(1, frames), orientation)


def _webp_clean(data: bytes) -> bytes | None:
    stop = min(len(data), 8 + int.from_bytes(data[4:8], "little"))
    kept: list[bytes] = []
    for fourcc, start, _end, chunk_end in _riff_chunks(data, 12, stop):
        chunk = data[start - 8 : chunk_end]
        if fourcc == b"VP8X":
            if data[start] & VP8X_ANIMATION:
                return None  # frames: decoded and re-encoded instead
            chunk = chunk[:8] + bytes([data[start] & ~(VP8X_EXIF | VP8X_XMP) & 0xFF]) + chunk[9:]
        elif fourcc in WEBP_DROP or fourcc in (b"ANIM", b"ANMF"):
            continue
        kept.append(chunk)
    body = b"WEBP" + b"".join(kept)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


# --- TIFF (and EXIF, which is a TIFF structure) -------------------------------------------------------------


def _ifds(tiff: bytes) -> Iterator[dict[int, int]]:
    """The numeric tags of each image file directory, following the chain of next-IFD offsets."""
    order = "<" if tiff[:2] == b"II" else ">"
    offset = struct.unpack(order + "I", tiff[4:8])[0]
    seen: set[int] = set()
    while offset and offset not in seen and len(seen) < MAX_IFDS and offset + 2 <= len(tiff):
        seen.add(offset)
        (declared,) = struct.unpack(order + "H", tiff[offset : offset + 2])
        count = min(declared, MAX_IFD_ENTRIES)
        tags: dict[int, int] = {}
        for i in range(count):
            entry = offset + 2 + 12 * i
            if entry + 12 > len(tiff):
                break
            tag, kind = struct.unpack(order + "HH", tiff[entry : entry + 4])
            if kind == 3:  # SHORT
                tags[tag] = struct.unpack(order + "H", tiff[entry + 8 : entry + 10])[0]
            elif kind == 4:  # LONG
                tags[tag] = struct.unpack(order + "I", tiff[entry + 8 : entry + 12])[0]
        yield tags
        next_at = offset + 2 + 12 * declared
        offset = struct.unpack(order + "I", tiff[next_at : next_at + 4])[0] if next_at + 4 <= len(tiff) else 0


def _tiff(data: bytes) -> Header:
    box, frames = _Box(), 0
    for tags in _ifds(data):
        if 256 in tags and 257 in tags:
            box.add(tags[256], tags[257])
            frames += 1
    return Header("image/tiff", box.size(), max(1, frames))


def _orientation(exif: bytes) -> int:
    if exif.startswith(b"Exif\x00\x00"):
        exif = exif[6:]
    if exif[:4] not in (b"II*\x00", b"MM\x00*"):
        return 1
    try:
        value = next(_ifds(exif), {}).get(0x0112, 1)
    except (struct.error, IndexError):
        return 1
    return value if 1 <= value <= 8 else 1
