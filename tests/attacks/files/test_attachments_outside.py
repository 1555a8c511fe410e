"""Attachments stay inside the workspace: an `@file.png` (typed, or in a project's custom command) attaches
only a workspace file, read without following a link out; `--image` inside the workspace is read the same
way, and only the user's own `--image /absolute/path` reaches outside. What is sent carries no metadata.

Every request the scripted server got is searched: an attack passes only if no image part is in any of
them (the old code sent the outside files byte for byte, text chunks included).
"""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from pathlib import Path

from PIL import Image
from terminal import Terminal

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi


def png_with_text(text: str, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A 4x4 PNG carrying `text` in a tEXt chunk (as screenshots carry their tool, host or window title)."""
    out = io.BytesIO()
    Image.new("RGB", (4, 4), color).save(out, "PNG")
    data = out.getvalue()
    body = b"Comment\x00" + text.encode()
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    return data[:33] + chunk + data[33:]  # after IHDR


def sent_images(server: ScriptedModelServer) -> list[bytes]:
    found = []
    for request in server.requests:
        for message in request["messages"]:
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "image_url":
                    found.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return found


def assert_refused_and_never_sent(proc: object, server: ScriptedModelServer, *secrets: bytes) -> None:
    assert proc.returncode == 2, proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    assert sent_images(server) == []
    everything = json.dumps(server.requests)
    for secret in secrets:
        assert base64.b64encode(secret).decode() not in everything


# --- attacks ---------------------------------------------------------------------------------------------


def test_an_untrusted_projects_command_cannot_attach_absolute_or_home_files(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.png"
    outside.write_bytes(png_with_text("OUTSIDE-SECRET"))
    (home / "home.png").write_bytes(png_with_text("HOME-SECRET"))
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "review.md").write_text(f"Review @{outside} and @~/home.png please.\n")
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "/review", "--output-format", "json"], repo, env, server)
    assert_refused_and_never_sent(proc, server, outside.read_bytes(), (home / "home.png").read_bytes())
    result = result_json(proc)
    assert result["is_error"] and "is outside the workspace" in result["message"]


def test_a_workspace_link_to_an_outside_image_is_not_followed(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.png").write_bytes(png_with_text("LINKED-SECRET"))
    (repo / "shot.png").symlink_to(elsewhere / "x.png")
    (repo / "shots").symlink_to(elsewhere)
    for args in (["-p", "look at @shot.png"], ["-p", "look at @shots/x.png"], ["-p", "look", "--image", "shot.png"]):
        server.requests.clear()
        proc = run_kimi(args, repo, env, server)
        assert_refused_and_never_sent(proc, server, (elsewhere / "x.png").read_bytes())
        assert "outside the workspace" in proc.stderr


def test_dot_dot_out_of_the_workspace_is_refused(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo.parent / "up.png").write_bytes(png_with_text("UP-SECRET"))
    for args in (["-p", "look at @../up.png"], ["-p", "look", "--image", "../up.png"]):
        proc = run_kimi(args, repo, env, server)
        assert_refused_and_never_sent(proc, server, (repo.parent / "up.png").read_bytes())


def test_a_link_typed_in_the_terminal_is_not_followed_and_the_session_goes_on(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    (tmp_path / "x.png").write_bytes(png_with_text("TERMINAL-SECRET"))
    (repo / "shot.png").symlink_to(tmp_path / "x.png")
    server.add({"text": "still here"})
    term = Terminal.start(repo, env, server, cols=400)  # the refusal names two long temporary paths
    try:
        term.wait_for("❯")
        term.line("what is in @shot.png")
        term.wait_for("outside the workspace")
        term.line("hello")
        term.wait_for("still here")
        assert term.exit() == 0
    finally:
        term.close()
    assert sent_images(server) == [] and "Traceback" not in term.transcript


# --- legitimate uses ---------------------------------------------------------------------------------------


def test_an_inside_image_and_the_users_own_absolute_image_are_attached_without_metadata(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    (repo / "inside.png").write_bytes(png_with_text("INSIDE-META", (10, 200, 10)))
    (repo / "docs").mkdir()
    (repo / "docs" / "alias.png").symlink_to(repo / "inside.png")  # a link that stays inside
    mine = tmp_path / "Desktop" / "shot.png"
    mine.parent.mkdir()
    mine.write_bytes(png_with_text("DESKTOP-META", (10, 10, 200)))
    server.add({"text": "nice"})
    proc = run_kimi(["-p", "compare @inside.png with @docs/alias.png", "--image", str(mine)], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    images = sent_images(server)
    colors = [Image.open(io.BytesIO(data)).convert("RGB").getpixel((1, 1)) for data in images]
    assert colors == [(10, 10, 200), (10, 200, 10), (10, 200, 10)]  # --image first, then the @refs in order
    assert all(b"tEXt" not in data and b"META" not in data for data in images)


def test_a_photo_keeps_its_pixels_and_loses_its_exif(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    exif = Image.Exif()
    exif[0x010F] = "CameraMaker"  # Make
    exif[0x8825] = {2: (51.0, 30.0, 0.0)}  # GPS latitude
    photo = Image.effect_noise((320, 240), 60).convert("RGB")
    out = io.BytesIO()
    photo.save(out, "JPEG", exif=exif.tobytes(), comment=b"COMMENT-META")
    (repo / "photo.jpg").write_bytes(out.getvalue())
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "what is in @photo.jpg"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    (sent,) = sent_images(server)
    assert b"Exif" not in sent and b"CameraMaker" not in sent and b"COMMENT-META" not in sent
    original = Image.open(io.BytesIO(out.getvalue()))
    assert Image.open(io.BytesIO(sent)).tobytes() == original.tobytes()  # not re-encoded: the same pixels
