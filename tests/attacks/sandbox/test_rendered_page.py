"""A page the model wrote, rendered by `--visual-check`, gets no more than the model's own commands get.

Chromium renders the workspace's HTML with --no-sandbox; run on the host, a hostile page would show any
file the user can read (an <img> of a file:// URL: the screenshot then carries it to the model) and reach
the host's network. It runs in the session's sandbox instead: the hidden credential stores are not there,
and the network is off unless the session has it. The control runs the same page with --sandbox none,
where the planted picture does show: the test can fail.
"""

from __future__ import annotations

import base64
import io
import shutil
from pathlib import Path

import pytest
from sandbox_fixtures import CountingServer, backends, sandbox_flags

from scripted_server import ScriptedModelServer
from support import require, run_kimi, tool_call

RENDERING = [b for b in backends() if b != "docker"]  # the Docker test image has no Chromium


def need_chromium() -> None:
    require("chromium", shutil.which("chromium"), "headless Chromium; .ci/run installs the chromium package")


def red_png(path: Path) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (64, 64), "#ff0000").save(path)
    return path


def page_showing(src: str) -> str:
    """A blue page covered by the picture at `src`, if the browser can load it."""
    return (
        '<html><body style="margin:0;background:#0000ff">'
        f'<img src="{src}" style="position:fixed;left:0;top:0;width:100%;height:100%"></body></html>'
    )


def rendered_colour(server: ScriptedModelServer) -> tuple[int, int, int]:
    """The centre pixel of the screenshot the second request carried."""
    from PIL import Image

    first = len(server.requests[0]["messages"])
    for message in server.requests[1]["messages"][first:]:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                with Image.open(io.BytesIO(data)) as img:
                    return img.convert("RGB").getpixel((img.width // 2, img.height // 2))  # type: ignore[return-value]
    raise AssertionError("no screenshot was sent")


def render_page(repo: Path, env: dict, server: ScriptedModelServer, html: str, flags: list[str]) -> None:
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "index.html", "content": html}, "w1")]},
               {"text": "done"})  # fmt: skip
    proc = run_kimi(["-p", "build", "--visual-check", "index.html", "--visual-size", "320x240", "--yolo", *flags],
                    repo, env, server, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", RENDERING)
def test_a_rendered_page_cannot_show_a_file_the_sandbox_hides(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, backend: str
) -> None:
    need_chromium()
    secret = red_png(home / ".ssh" / "id_photo.png")
    render_page(repo, env, server, page_showing(secret.as_uri()), sandbox_flags(backend, home))
    assert rendered_colour(server) == (0, 0, 255)  # the page, without the hidden picture


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", RENDERING)
def test_a_rendered_page_shows_a_workspace_picture(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, backend: str
) -> None:
    need_chromium()
    red_png(repo / "img" / "logo.png")
    render_page(repo, env, server, page_showing("img/logo.png"), sandbox_flags(backend, home))
    assert rendered_colour(server) == (255, 0, 0)


@pytest.mark.timeout(300)
def test_without_a_sandbox_the_hidden_file_would_show(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    """The control: the same page rendered with --sandbox none shows the planted picture."""
    need_chromium()
    secret = red_png(home / ".ssh" / "id_photo.png")
    render_page(repo, env, server, page_showing(secret.as_uri()), ["--sandbox", "none"])
    assert rendered_colour(server) == (255, 0, 0)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", [*RENDERING, "none"])
def test_a_rendered_page_cannot_reach_the_hosts_network(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, backend: str
) -> None:
    """Off by default on every backend; with --sandbox none a file is rendered in a network namespace of
    its own (unshare -rn) where the kernel allows one."""
    need_chromium()
    listener = CountingServer()
    try:
        url = f"http://127.0.0.1:{listener.port}/leak.png"
        html = page_showing(url) + f"<script>fetch('{url}').catch(() => 0)</script>"
        render_page(
            repo, env, server, html, sandbox_flags(backend, home) if backend != "none" else ["--sandbox", "none"]
        )
        assert listener.accepted == 0
    finally:
        listener.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", RENDERING)
def test_with_the_network_allowed_the_page_reaches_the_users_server(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, backend: str
) -> None:
    need_chromium()
    listener = CountingServer()
    try:
        render_page(repo, env, server, page_showing(f"http://127.0.0.1:{listener.port}/logo.png"),
                    [*sandbox_flags(backend, home), "--allow-network"])  # fmt: skip
        assert listener.accepted >= 1
    finally:
        listener.close()
