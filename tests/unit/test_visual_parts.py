"""The visual check's parts in process: the numpy SSIM (against scikit-image where it is installed), the
loop's between-steps seam, the flags, the attach notice, and what marks a step as one that changed files."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kimi_cli.errors import KimiError
from kimi_cli.frontends.attachments import build_user_message
from kimi_cli.frontends.headless.chromium import chunk_size, render_command
from kimi_cli.frontends.headless.visual import folder_fingerprint, parse_visual
from kimi_cli.media.similarity import similarity, ssim
from kimi_cli.tools.read_file import ReadFile

from fakes import FakeProvider, agent_for, calls, text, user


def noisy(seed: int, shape: tuple[int, int] = (120, 160)) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, shape).astype(np.float64)
    return a, np.clip(a + rng.normal(0, 25, shape), 0, 255)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ssim_is_scikit_images_default(seed: int) -> None:
    structural_similarity = pytest.importorskip("skimage.metrics").structural_similarity
    a, b = noisy(seed)
    assert ssim(a, b) == pytest.approx(structural_similarity(a, b, data_range=255.0), abs=1e-9)


def test_ssim_of_a_picture_with_itself_is_one_and_sizes_must_match() -> None:
    a, b = noisy(3)
    assert ssim(a, a) == pytest.approx(1.0) and ssim(a, b) < 0.99
    with pytest.raises(ValueError, match="differ in size"):
        ssim(a, b[:, :-1])
    with pytest.raises(ValueError, match="no window"):
        ssim(a[:5, :5], b[:5, :5])


def png(colour: str, size: tuple[int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def test_similarity_scales_the_candidate_to_the_reference() -> None:
    assert similarity(png("#1e90ff", (200, 100)), png("#1e90ff", (400, 200))) == pytest.approx(1.0)
    assert similarity(png("#1e90ff", (200, 100)), png("#ff0000", (200, 100))) < 0.95


def test_the_seam_adds_what_a_front_end_returns_before_the_next_request(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    provider = FakeProvider(calls(("ReadFile", {"path": "a.txt"})), text("done"))
    agent = agent_for(provider, [ReadFile()], tmp_path)
    seen: list[int] = []

    async def between() -> list[dict[str, Any]]:
        seen.append(agent.steps)
        return [{"role": "user", "content": f"[kimi] before step {agent.steps}"}] if agent.steps == 2 else []

    agent.between_steps.append(between)
    asyncio.run(agent.run(user("go")))
    assert seen == [1, 2]  # once before each request
    assert provider.requests[1].messages[-1] == {"role": "user", "content": "[kimi] before step 2"}
    assert all("before step" not in str(m.get("content")) for m in provider.requests[0].messages)


@pytest.mark.parametrize(
    ("target", "expected"),
    [("index.html", "index.html"), ("site/../index.html", "index.html"), ("http://127.0.0.1:5173/", None)],
)
def test_the_flags_name_a_workspace_file_or_a_url(tmp_path: Path, target: str, expected: str | None) -> None:
    options = parse_visual(target, 0.9, "800x600", tmp_path)
    assert options is not None and options.size == (800, 600) and options.target_ssim == 0.9
    assert options.is_url == (expected is None) and (expected is None or options.target == expected)


@pytest.mark.parametrize(
    ("target", "ssim_target", "size"),
    [("../out.html", None, None), ("/etc/passwd", None, None), ("file:///etc/passwd", None, None),
     ("index.html", 0.0, None), ("index.html", None, "9000x10"), (None, 0.5, None)],
)  # fmt: skip
def test_flags_that_cannot_work_are_usage_errors(tmp_path: Path, target: Any, ssim_target: Any, size: Any) -> None:
    with pytest.raises(KimiError) as caught:
        parse_visual(target, ssim_target, size, tmp_path)
    assert caught.value.exit_code == 2


def test_the_render_command_quotes_the_url_and_stays_within_the_output_cap() -> None:
    command = render_command("/usr/bin/chromium", "http://x/?a=1;touch /tmp/p", (640, 480), 1000, offline=False)
    assert "'http://x/?a=1;touch /tmp/p'" in command and "--window-size=640,480" in command
    assert "-- 'http" in command  # the URL comes after the end of switches
    assert chunk_size(30_000) % 4 == 0 and chunk_size(30_000) <= 30_000 - 400 and chunk_size(1000) >= 512


def test_the_fingerprint_sees_a_changed_file_and_never_follows_a_link(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("a")
    (tmp_path / "out").symlink_to("/")
    before = folder_fingerprint(tmp_path)
    assert all("/etc" not in path for path, _, _ in before)
    (tmp_path / "style.css").write_text("b")
    assert folder_fingerprint(tmp_path) != before


def test_the_attach_notice_says_the_size_sent_and_any_resizing(tmp_path: Path) -> None:
    (tmp_path / "small.png").write_bytes(png("#00ff00", (40, 30)))
    (tmp_path / "big.png").write_bytes(png("#00ff00", (3000, 1500)))
    told: list[str] = []
    build_user_message("see", ["small.png", "big.png"], tmp_path, notify=told.append)
    assert told[0].startswith("attached small.png (40x30, ") and "image tokens" in told[0]
    assert told[1].startswith("attached big.png (resized 3000x1500 -> 2048x1024, ")
