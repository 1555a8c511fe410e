"""Images sized for the model: downscaled to the long-edge bound, upright, one frame, counted by area.

Pictures are made with Pillow here; what kimi sends is read back from the scripted server's request body.
"""

from __future__ import annotations

import base64
import io
import math
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from kimi_cli.context.compaction import compacted_history
from kimi_cli.media.image import ImageError, ImageLimits, image_tokens
from kimi_cli.media.pipeline import (
    dimensions,
    message_tokens,
    prepare,
    prepare_data_url,
    url_dimensions,
)

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call


def screenshot(width: int, height: int, seed: int = 1) -> Image.Image:
    """Something like a screen: flat panels, a gradient, and fine noise (so PNG cannot squeeze it away)."""
    rng = random.Random(seed)
    img = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    for _ in range(40):
        x, y = rng.randrange(width), rng.randrange(height)
        img.paste((rng.randrange(256), rng.randrange(256), rng.randrange(256)), (x, y, x + 300, y + 120))
    noise = Image.effect_noise((width // 4, height // 4), 40).resize((width, height)).convert("RGB")
    return Image.blend(img, noise, 0.15)


def encode(img: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt, **options)
    return out.getvalue()


def decode(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


# --- the pipeline ----------------------------------------------------------------------------------------


def test_a_small_image_within_the_bound_goes_byte_for_byte() -> None:
    data = encode(screenshot(800, 600))
    out = prepare(data, ImageLimits())
    assert out.data == data and not out.changed and (out.width, out.height) == (800, 600)
    assert out.mime == "image/png"


def test_a_4k_screenshot_is_downscaled_to_the_long_edge_and_counted_by_area() -> None:
    data = encode(screenshot(3840, 2160))
    out = prepare(data, ImageLimits(long_edge=2048))
    assert out.changed and max(out.width, out.height) == 2048 and out.height == 1152
    assert decode(out.data).size == (2048, 1152)
    assert out.tokens(14) == math.ceil(2048 / 14) * math.ceil(1152 / 14) == 12_201
    assert image_tokens(3840, 2160) == 275 * 155 == 42_625  # what it would have cost as sent
    assert len(out.data) < len(data)


def test_the_bound_is_configurable() -> None:
    out = prepare(encode(screenshot(1600, 900)), ImageLimits(long_edge=512))
    assert (out.width, out.height) == (512, 288)


def test_exif_orientation_is_applied() -> None:
    img = screenshot(400, 200)
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: the viewer turns it 90 degrees clockwise
    data = encode(img, "JPEG", exif=exif.tobytes())
    out = prepare(data, ImageLimits())
    assert out.changed and (out.width, out.height) == (200, 400)
    plain = encode(img, "JPEG")
    assert not prepare(plain, ImageLimits()).changed  # upright JPEG: kept as it is


def test_an_animated_gif_becomes_its_first_frame() -> None:
    frames = [Image.new("RGB", (64, 48), color) for color in ((255, 0, 0), (0, 0, 255), (0, 255, 0))]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    out = prepare(buf.getvalue(), ImageLimits())
    assert out.changed and out.mime == "image/png"
    picture = decode(out.data)
    assert getattr(picture, "n_frames", 1) == 1 and picture.convert("RGB").getpixel((10, 10)) == (255, 0, 0)


def test_a_picture_over_the_request_cap_is_refused_clearly() -> None:
    noise = encode(Image.effect_noise((1200, 1200), 120).convert("RGB"))
    with pytest.raises(ImageError, match="does not fit the request cap"):
        prepare(noise, ImageLimits(max_request_bytes=20_000))
    # the same picture under the table's cap goes as it is; under a tighter one, smaller
    assert prepare(noise, ImageLimits()).width == 1200
    squeezed = prepare(noise, ImageLimits(max_request_bytes=400_000))
    assert squeezed.mime == "image/jpeg" and len(squeezed.data_url()) <= 200_000 and squeezed.width < 1200


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 30_000, 30_000, 8, 2, 0, 0, 0))
    bomb = b"\x89PNG\r\n\x1a\n" + header + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b"")
    with pytest.raises(ImageError, match="30000x30000 pixels"):
        prepare(bomb, ImageLimits())


def test_unsupported_and_broken_data_are_clear_errors() -> None:
    with pytest.raises(ImageError, match="unsupported image format"):
        prepare(b"BM" + b"\x00" * 64, ImageLimits())
    with pytest.raises(ImageError, match="cannot be decoded"):
        prepare(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, ImageLimits(long_edge=1))


@pytest.mark.parametrize(
    ("fmt", "options"),
    [("PNG", {}), ("GIF", {}), ("JPEG", {"exif": b"Exif\x00\x00" + b"\x00" * 30_000}), ("WEBP", {"lossless": True}),
     ("WEBP", {"quality": 80}), ("WEBP", {"exif": b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\x00\x00"})],
)  # fmt: skip
def test_dimensions_are_read_from_headers_without_decoding(fmt: str, options: dict) -> None:
    data = encode(screenshot(321, 123), fmt, **options)
    assert dimensions(data) == (321, 123)
    url = "data:image/x;base64," + base64.b64encode(data).decode()
    assert url_dimensions(url) == (321, 123)


def test_a_message_with_an_image_is_estimated_by_area_not_base64() -> None:
    big = prepare(encode(screenshot(3840, 2160)), ImageLimits())
    url = big.data_url()
    message = {"role": "user", "content": [{"type": "text", "text": "build this"},
                                           {"type": "image_url", "image_url": {"url": url}}]}  # fmt: skip
    tokens = message_tokens(message, 3.5)
    assert 12_201 <= tokens < 12_300
    assert len(url) / 3.5 > 10 * tokens  # what counting it as text would have said


def test_compaction_keeps_recent_images_that_fit_and_drops_older_ones() -> None:
    def image_message(width: int, seed: int) -> dict:
        url = prepare(encode(screenshot(width, width // 2, seed)), ImageLimits()).data_url()
        return {"role": "user", "content": [{"type": "text", "text": f"shot {seed}"},
                                            {"type": "image_url", "image_url": {"url": url}}]}  # fmt: skip

    old, recent = image_message(2000, 1), image_message(1000, 2)
    messages = [{"role": "system", "content": "s"}, old, {"role": "assistant", "content": "ok"}, recent]
    out = compacted_history({"role": "system", "content": "fresh"}, messages, "did things", [], [], 10_000)
    content = out[-1]["content"]
    urls = [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    assert urls == [recent["content"][1]["image_url"]["url"]]  # 1000x500 fits 10k tokens; 2000x1000 does not
    assert "did things" in content[0]["text"] and "shot 1" in content[0]["text"]
    bigger = compacted_history({"role": "system", "content": "f"}, messages, "x", [], [], 40_000)
    assert len([p for p in bigger[-1]["content"] if p.get("type") == "image_url"]) == 2


def test_mcp_and_acp_images_go_through_the_pipeline() -> None:
    from kimi_cli.extensions.mcp.tool import convert_result
    from kimi_cli.frontends.acp.agent import _user_message

    data = base64.b64encode(encode(screenshot(3000, 1500))).decode()
    part = SimpleNamespace(type="image", mime_type="image/png", data=data)
    result = convert_result(SimpleNamespace(content=[part], structured_content=None, is_error=False), ImageLimits())
    (url,) = result.images
    assert url_dimensions(url) == (2048, 1024) and "[image:" in result.output
    block = SimpleNamespace(type="image", mime_type="image/png", data=data, uri=None)
    message = _user_message([SimpleNamespace(type="text", text="look"), block], ImageLimits(long_edge=1000))
    assert url_dimensions(message["content"][1]["image_url"]["url"]) == (1000, 500)
    refused = _user_message([block], ImageLimits(max_request_bytes=10_000))
    assert "image left out" in refused["content"] and "request cap" in refused["content"]
    too_big = prepare_data_url("data:image/png;base64," + data, ImageLimits(long_edge=300))
    assert (too_big.width, too_big.height) == (300, 150)


# --- end to end --------------------------------------------------------------------------------------------


def sent_images(server: ScriptedModelServer, request: int) -> list[Image.Image]:
    found = []
    for message in server.requests[request]["messages"]:
        for part in message.get("content") if isinstance(message.get("content"), list) else []:
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
                found.append(decode(base64.b64decode(url.split(",", 1)[1])))
    return found


def test_a_4k_attachment_goes_up_downscaled_and_the_first_request_is_not_a_compaction(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    shot = repo / "shot.png"
    shot.write_bytes(encode(screenshot(3840, 2160)))
    assert shot.stat().st_size > 1_000_000
    config = home / ".kimi" / "config.toml"
    config.write_text("max_output_tokens = 200000\n" + config.read_text())
    server.add({"text": "built it"})
    proc = run_kimi(["-p", "build this page", "--image", "shot.png", "--context-length", "60000", "--no-pack"],
                    repo, env, server)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 1  # no compaction first: the picture counts ~12k tokens, not its base64
    body = server.requests[0]
    assert "compacting" not in body["messages"][0]["content"]
    (picture,) = sent_images(server, 0)
    assert max(picture.size) <= 2048 and picture.size == (2048, 1152)
    # max_tokens is what the window has left: the image's 12,201 tokens are in the estimate
    assert 256 < body.get("max_completion_tokens", body.get("max_tokens", 0)) <= 60_000 - 12_201


def test_read_media_file_and_at_refs_are_sized_too(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "wide.png").write_bytes(encode(screenshot(3000, 1000)))
    (repo / "small.png").write_bytes(encode(screenshot(300, 200)))
    server.add({"tool_calls": [tool_call("ReadMediaFile", {"path": "wide.png"}, "m1")]}, {"text": "seen"})
    proc = run_kimi(["-p", "compare with @small.png"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert [p.size for p in sent_images(server, 0)] == [(300, 200)]
    tool_msg = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "3000x1000 -> 2048x683" in tool_msg["content"] and "tokens" in tool_msg["content"]
    assert [p.size for p in sent_images(server, 1)] == [(300, 200), (2048, 683)]


def test_the_long_edge_comes_from_config(repo: Path, env: dict, server: ScriptedModelServer, home: Path) -> None:
    (repo / "shot.png").write_bytes(encode(screenshot(1600, 800)))
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + "\n[images]\nlong_edge = 1024\n")
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "look", "--image", "shot.png"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert [p.size for p in sent_images(server, 0)] == [(1024, 512)]


def test_a_picture_that_cannot_fit_the_request_is_refused_before_any_request(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    (repo / "noise.png").write_bytes(encode(Image.effect_noise((1200, 1200), 120).convert("RGB")))
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + '\n[models."kimi-k3.1-pro"]\nmax_request_bytes = 20000\n')
    proc = run_kimi(["-p", "look", "--image", "noise.png"], repo, env, server)
    assert proc.returncode == 2 and "does not fit the request cap" in proc.stderr, proc.stderr
    assert server.requests == []
    assert "Traceback" not in proc.stderr


def test_a_4k_screenshot_keeps_its_quality_when_downscaled() -> None:
    import numpy as np
    from skimage.metrics import structural_similarity

    source = screenshot(3840, 2160)
    out = prepare(encode(source), ImageLimits())
    reference = np.asarray(source.resize((2048, 1152), Image.Resampling.LANCZOS).convert("L"))
    sent = np.asarray(decode(out.data).convert("L"))
    assert structural_similarity(reference, sent, data_range=255) > 0.97  # 0.978, as before the bounds


@pytest.mark.parametrize(
    ("fmt", "options", "marks"),
    [("PNG", {"exif": b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\x00\x00"}, [b"eXIf", b"tEXt", b"TEXT-META"]),
     ("GIF", {"comment": b"COMMENT-META"}, [b"COMMENT-META"]),
     ("WEBP", {"lossless": True, "exif": b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\x00\x00", "xmp": b"<x>XMP-META</x>"},
      [b"EXIF", b"XMP-META"])],
)  # fmt: skip
def test_a_picture_kept_as_it_is_loses_its_metadata_and_no_pixel(fmt: str, options: dict, marks: list[bytes]) -> None:
    from PIL import PngImagePlugin

    if fmt == "PNG":
        info = PngImagePlugin.PngInfo()
        info.add_text("Comment", "TEXT-META")
        options = {**options, "pnginfo": info}
    data = encode(screenshot(300, 200), fmt, **options)
    assert all(mark in data for mark in marks)
    out = prepare(data, ImageLimits())
    assert not out.changed and not any(mark in out.data for mark in marks)
    assert decode(out.data).convert("RGBA").tobytes() == decode(data).convert("RGBA").tobytes()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "GIF"])
def test_a_re_encoded_picture_carries_none_of_its_metadata(fmt: str) -> None:
    from PIL import PngImagePlugin

    exif = Image.Exif()
    exif[0x010F] = "CameraMaker"
    options: dict = {"exif": exif.tobytes()}
    if fmt == "PNG":
        options["pnginfo"] = PngImagePlugin.PngInfo()
        options["pnginfo"].add_text("Comment", "TEXT-META")
    if fmt in ("JPEG", "GIF"):
        options["comment"] = b"COMMENT-META"
    if fmt == "WEBP":
        options["xmp"] = b"<x>XMP-META</x>"
    picture = screenshot(3000, 1500)
    out = prepare(encode(picture if fmt != "GIF" else picture.convert("P"), fmt, **options), ImageLimits())
    assert out.changed and (out.width, out.height) == (2048, 1024)
    assert not any(mark in out.data for mark in (b"CameraMaker", b"TEXT-META", b"COMMENT-META", b"XMP-META", b"Exif"))
