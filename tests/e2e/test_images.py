"""Images on the user message: --image and @path.png, checked before any request is sent."""

from __future__ import annotations

from pathlib import Path

from kimi_cli.frontends.attachments import find_image_refs

from scripted_server import ScriptedModelServer
from support import run_kimi


def test_at_references_are_found_without_emails() -> None:
    text = "build @shots/a.png and @b.JPG, mail me@x.png please, again @shots/a.png"
    assert find_image_refs(text) == ["shots/a.png", "b.JPG"]


def test_image_flag_and_at_path_attach_data_url_parts(
    repo: Path, env: dict, server: ScriptedModelServer, png_bytes: bytes
) -> None:
    (repo / "a.png").write_bytes(png_bytes)
    (repo / "b.png").write_bytes(png_bytes)
    server.add({"text": "nice"})
    proc = run_kimi(["-p", "make this like @b.png", "--image", "a.png"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    content = server.requests[0]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "make this like @b.png"}
    assert len(content) == 3
    assert all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in content[1:])


def test_missing_image_fails_before_any_request(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    proc = run_kimi(["-p", "look", "--image", "nope.png"], repo, env, server)
    assert proc.returncode == 2 and "image not found" in proc.stderr
    assert server.requests == []


def test_unsupported_format_fails_before_any_request(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "x.bmp").write_bytes(b"BM" + b"\x00" * 64)
    proc = run_kimi(["-p", "look", "--image", "x.bmp"], repo, env, server)
    assert proc.returncode == 2 and "unsupported image format" in proc.stderr
    assert server.requests == []
