"""`kimi -p --visual-check`: after an edit the page is rendered by headless Chromium in the sandbox and the
screenshot goes with the next request; with --visual-target the run goes on until the SSIM is reached."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import require, result_json, run_kimi, tool_call

BLUE, RED = "#1e90ff", "#ff0000"


def need_chromium() -> None:
    require("chromium", shutil.which("chromium"), "headless Chromium; .ci/run installs the chromium package")


def page(colour: str, text: str = "") -> str:
    return f'<html><body style="margin:0;background:{colour}">{text}</body></html>'


def flat_png(path: Path, colour: str, size: tuple[int, int] = (400, 300)) -> Path:
    from PIL import Image

    Image.new("RGB", size, colour).save(path)
    return path


def images_in(message: dict) -> list[bytes]:
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    urls = [p["image_url"]["url"] for p in parts if isinstance(p, dict) and p.get("type") == "image_url"]
    return [base64.b64decode(u.split(",", 1)[1]) for u in urls]


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def pixel(png: bytes, xy: tuple[int, int] = (10, 10)) -> tuple[int, int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        return img.convert("RGB").getpixel(xy)  # type: ignore[return-value]


def write(path: str, content: str, call_id: str) -> dict:
    return {"tool_calls": [tool_call("WriteFile", {"path": path, "content": content}, call_id)]}


def visual_run(repo: Path, env: dict, server: ScriptedModelServer, *extra: str) -> dict:
    proc = run_kimi(["-p", "build the page in the picture", "--image", "shot.png", "--visual-check", "index.html",
                     "--output-format", "json", *extra], repo, env, server, timeout=240)  # fmt: skip
    data = result_json(proc)
    data["_stderr"] = proc.stderr
    data["_rc"] = proc.returncode
    return data


@pytest.mark.timeout(300)
def test_the_screenshot_of_the_edited_page_goes_with_the_next_request(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    need_chromium()
    flat_png(repo / "shot.png", BLUE)
    server.add(write("index.html", page(RED), "w1"), {"text": "Built it."})
    data = visual_run(repo, env, server)
    assert data["_rc"] == 0, data["_stderr"]
    first, second = server.requests[0]["messages"], server.requests[1]["messages"]
    assert len(images_in(first[-1])) == 1  # the reference, attached by --image
    shown = [m for m in second[len(first) :] if images_in(m)]
    assert len(shown) == 1, [text_of(m) for m in second[len(first) :]]
    shot = images_in(shown[0])[0]
    assert pixel(shot) == (255, 0, 0)  # the page as Chromium drew it, not the reference
    from PIL import Image

    assert Image.open(io.BytesIO(shot)).size == (400, 300)  # the window takes the reference's size
    note = text_of(shown[0])
    assert "index.html as rendered after step 1" in note and "SSIM" in note and "against shot.png" in note
    visual = data["visual_check"]
    assert visual["renders"] == 1 and 0 < visual["ssim"] < 0.95 and visual["reached"] is None
    assert pixel(Path(visual["screenshot"]).read_bytes()) == (255, 0, 0)  # kept in the session folder
    assert "kimi: attached shot.png (400x300" in data["_stderr"]  # the attach notice


@pytest.mark.timeout(300)
def test_a_step_that_changed_nothing_is_not_rendered(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    need_chromium()
    flat_png(repo / "shot.png", BLUE)
    (repo / "index.html").write_text(page(RED))
    server.add({"tool_calls": [tool_call("ReadFile", {"path": "index.html"}, "r1")]}, {"text": "Looks fine."})
    data = visual_run(repo, env, server)
    assert data["_rc"] == 0, data["_stderr"]
    first = server.requests[0]["messages"]
    assert not any(images_in(m) for m in server.requests[1]["messages"][len(first) :])
    assert data["visual_check"]["renders"] == 0


@pytest.mark.timeout(400)
def test_the_run_goes_on_until_the_target_is_reached(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    need_chromium()
    flat_png(repo / "shot.png", BLUE)
    server.add(
        write("index.html", page(RED), "w1"),  # far from the reference
        {"text": "Done."},  # stops short: kimi tells it the score
        write("index.html", page(BLUE), "w2"),
        {"text": "Now it matches."},
    )
    data = visual_run(repo, env, server, "--visual-target", "0.99")
    assert data["_rc"] == 0 and data["reason"] == "done", data["_stderr"]
    assert len(server.requests) == 4
    follow_up = text_of(server.requests[2]["messages"][-1])
    assert "under the target 0.99" in follow_up and "Keep editing" in follow_up
    last = [m for m in server.requests[3]["messages"] if images_in(m)][-1]
    assert pixel(images_in(last)[0]) == (30, 144, 255) and "The target is reached" in text_of(last)
    visual = data["visual_check"]
    assert visual["reached"] is True and visual["ssim"] >= 0.99 and visual["renders"] == 2


@pytest.mark.timeout(300)
def test_a_run_that_ends_under_the_target_says_so(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    need_chromium()
    flat_png(repo / "shot.png", BLUE)
    server.add(write("index.html", page(RED), "w1"), {"text": "Done."}, {"text": "It cannot get closer."})
    data = visual_run(repo, env, server, "--visual-target", "0.99")
    assert data["_rc"] == 1 and data["reason"] == "visual_target_missed", data
    assert "under the --visual-target 0.99" in data["message"] and data["visual_check"]["reached"] is False
    assert len(server.requests) == 3  # one follow-up; no edit came of it, so no second one


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        (["--visual-target", "0.9"], "need --visual-check"),
        (["--visual-check", "../outside.html"], "inside the workspace"),
        (["--visual-check", "http://127.0.0.1:9/"], "--allow-network"),
        (["--visual-check", "index.html", "--visual-size", "10x10"], "--visual-size"),
        (["--visual-check", "index.html", "--visual-target", "2"], "between 0 and 1"),
    ],
)
def test_flags_that_cannot_work_stop_before_any_request(
    repo: Path, env: dict, server: ScriptedModelServer, args: list[str], needs: str
) -> None:
    proc = run_kimi(["-p", "go", *args], repo, env, server)
    assert proc.returncode == 2 and needs in proc.stderr, proc.stderr
    assert server.requests == []


def test_a_target_needs_a_reference_picture(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    need_chromium()
    proc = run_kimi(["-p", "go", "--visual-check", "index.html", "--visual-target", "0.9"], repo, env, server)
    assert proc.returncode == 2 and "needs a reference picture" in proc.stderr
    assert server.requests == []


def test_the_result_object_keeps_its_schema(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    need_chromium()
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("kimi_cli.frontends.headless").joinpath("headless.schema.json").read_text())
    flat_png(repo / "shot.png", BLUE)
    server.add(write("index.html", page(RED), "w1"), {"text": "ok"})
    data = {k: v for k, v in visual_run(repo, env, server).items() if not k.startswith("_")}
    jsonschema.validate(data, {"$defs": schema["$defs"], "$ref": "#/$defs/result"})
    visual_schema = schema["$defs"]["result"]["properties"]["visual_check"]
    jsonschema.validate(data["visual_check"], visual_schema)


@pytest.mark.timeout(300)
def test_a_screenshot_larger_than_the_output_cap_comes_back_whole(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    """The PNG travels in base64 chunks that fit the sandbox's output cap (here its least, 1,000 bytes)."""
    need_chromium()
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write("\n[shell]\noutput_cap = 1000\n")
    flat_png(repo / "shot.png", BLUE)
    words = " ".join(f"word{i}" for i in range(400))  # text makes the PNG larger than one chunk
    server.add(write("index.html", page(RED, f"<p style='color:#fff'>{words}</p>"), "w1"), {"text": "ok"})
    data = visual_run(repo, env, server)
    assert data["_rc"] == 0, data["_stderr"]
    shot = Path(data["visual_check"]["screenshot"]).read_bytes()
    assert len(shot) > 3000 and pixel(shot, (399, 299)) == (255, 0, 0)
    sent = [images_in(m) for m in server.requests[1]["messages"] if images_in(m)][-1][0]
    assert sent == shot  # within the bound and small: sent as rendered, byte for byte


def test_the_terminal_tells_the_picture_it_attaches(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    from terminal import spawn

    flat_png(repo / "shot.png", BLUE, (3000, 1500))
    server.add({"text": "nice picture"})
    term = spawn(repo, env, server)
    try:
        term.wait_for("❯")
        term.line("what is @shot.png?")
        term.wait_for("attached shot.png (resized 3000x1500 -> 2048x1024")
        term.wait_for("nice picture")
        assert term.exit() == 0
    finally:
        term.close()
