"""Pasting an image from the clipboard (issue 46, item 9): under a real X server (Xvfb) with xclip holding an
image on the CLIPBOARD selection, Ctrl-V (or /paste) in a real terminal attaches it, and the next message
reaches the model with it as an image part; at 60 and 120 columns. Without an image (or a display) the
session says why and goes on."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer

CTRL_V = "\x16"

pytestmark = pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("xclip") is None,
    reason="needs Xvfb and xclip (apt-get install xvfb xclip; .ci/run installs them)",
)


def png(width: int, height: int) -> bytes:
    """A real RGB PNG, built by hand (a red-to-blue gradient)."""
    rows = b"".join(b"\x00" + bytes(c for x in range(width) for c in (x * 255 // width, 0, y * 255 // height))
                    for y in range(height))  # fmt: skip

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@pytest.fixture
def display(tmp_path: Path) -> Iterator[str]:
    """A private X server for the test; its display name."""
    for number in range(140, 200):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and not Path(f"/tmp/.X{number}-lock").exists():
            break
    name = f":{number}"
    xvfb = subprocess.Popen(["Xvfb", name, "-nolisten", "tcp", "-screen", "0", "640x480x24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not Path(f"/tmp/.X11-unix/X{number}").exists():
            if xvfb.poll() is not None or time.monotonic() > deadline:
                pytest.fail("Xvfb did not start")
            time.sleep(0.05)
        yield name
    finally:
        xvfb.terminate()
        xvfb.wait(10)


def hold_on_clipboard(display: str, data: bytes, mime: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    """xclip owns the CLIPBOARD selection with `data` as `mime` (in the foreground, so the test can end it)."""
    source = tmp_path / "clip.bin"
    source.write_bytes(data)
    owner = subprocess.Popen(["xclip", "-quiet", "-selection", "clipboard", "-t", mime, "-i", str(source)],
                             env={**os.environ, "DISPLAY": display}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 30  # xclip and Xvfb start slowly on a loaded 2-core machine
    while True:  # until the selection is served
        probe = subprocess.run(["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"], capture_output=True,
                               env={**os.environ, "DISPLAY": display}, timeout=5)  # fmt: skip
        if mime.encode() in probe.stdout:
            return owner
        if time.monotonic() > deadline:
            owner.kill()
            pytest.fail("xclip did not take the clipboard")
        time.sleep(0.05)


def _image_parts(body: dict) -> list[str]:
    content = body["messages"][-1]["content"]
    assert isinstance(content, list), content
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


@pytest.mark.parametrize("cols", [60, 120])
def test_ctrl_v_attaches_the_clipboards_image_to_the_next_message(
    repo: Path, env: dict, server: ScriptedModelServer, display: str, tmp_path: Path, cols: int
) -> None:
    owner = hold_on_clipboard(display, png(64, 48), "image/png", tmp_path)
    server.add({"text": "a gradient"})
    term = spawn(repo, env, server, cols=cols, extra_env={"DISPLAY": display})
    try:
        term.send(CTRL_V)
        term.wait_for(r"\[image #1\] clipboard image \(64x48.*it goes with\s+your next message", regex=True)
        term.line("what is in this picture?")
        term.wait_for("a gradient")
        assert term.exit() == 0
    finally:
        term.close()
        owner.kill()
        owner.wait(5)
    body = server.requests[0]
    urls = _image_parts(body)
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")
    assert body["messages"][-1]["content"][0] == {"type": "text", "text": "what is in this picture?"}
    kept = list((Path(env["HOME"]) / ".kimi" / "pastes").iterdir())
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o077 == 0  # private to the user


def test_slash_paste_does_the_same(
    repo: Path, env: dict, server: ScriptedModelServer, display: str, tmp_path: Path
) -> None:
    owner = hold_on_clipboard(display, png(32, 32), "image/png", tmp_path)
    server.add({"text": "seen"})
    term = spawn(repo, env, server, cols=120, extra_env={"DISPLAY": display})
    try:
        term.line("/paste")
        term.wait_for("[image #1] clipboard image (32x32")
        term.line("describe it")
        term.wait_for("seen")
        assert term.exit() == 0
    finally:
        term.close()
        owner.kill()
        owner.wait(5)
    assert len(_image_parts(server.requests[0])) == 1


def test_text_on_the_clipboard_or_no_display_is_said_and_nothing_is_attached(
    repo: Path, env: dict, server: ScriptedModelServer, display: str, tmp_path: Path
) -> None:
    owner = hold_on_clipboard(display, b"just words", "UTF8_STRING", tmp_path)
    server.add({"text": "plain answer"})
    term = spawn(repo, env, server, cols=60, extra_env={"DISPLAY": display})
    try:
        term.send(CTRL_V)
        term.wait_for("no image on the clipboard")
        term.line("hello")
        term.wait_for("plain answer")
        assert term.exit() == 0
    finally:
        term.close()
        owner.kill()
        owner.wait(5)
    assert server.requests[0]["messages"][-1]["content"] == "hello"
    term = spawn(repo, env, server, cols=60)  # no DISPLAY at all
    try:
        term.line("/paste")
        term.wait_for("no clipboard reader here")
        assert term.exit() == 0
    finally:
        term.close()
