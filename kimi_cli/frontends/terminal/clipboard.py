"""Paste an image from the clipboard: Ctrl-V on the input line and `/paste`.

A terminal's own paste carries text only (bracketed paste), so the image is read from the desktop's
clipboard by its own tool: `wl-paste` under Wayland, `xclip` under X. Both are host programs kimi starts,
so they are looked up where no sandboxed command can plant one (hostsafe.programs) and get the user's
environment without the API key variables (hostsafe.secrets). A terminal that pastes an image as a file
path (a drag-and-drop, or a file copied in a file manager) is handled where the pasted text arrives: a
message that is only an image's path attaches it (session.pasted_image), and so does a bracketed paste
of one (bind_keys below).

The bytes are kept in ~/.kimi/pastes (a private folder, out of every sandbox's reach) so that the image
goes through the same attachment path as `/image PATH`: checked and sized now, sent with the next message.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.util.sanitize import visible_text

READ_TIMEOUT = 3.0  # seconds: an X selection owner that never answers must not hang the session
# What the clipboard may offer, in the order taken: the formats the image pipeline reads.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}


class ClipboardError(Exception):
    """Why no image came from the clipboard, said to the user as is."""


@dataclass(frozen=True)
class Reader:
    """One clipboard tool: the command that lists the types offered, and the one that prints one of them."""

    program: str  # absolute path
    kind: str  # "wayland" | "x11"

    def list_types(self) -> list[str]:
        if self.kind == "wayland":
            return [self.program, "--list-types"]
        return [self.program, "-selection", "clipboard", "-t", "TARGETS", "-o"]

    def read(self, mime: str) -> list[str]:
        if self.kind == "wayland":
            return [self.program, "--no-newline", "--type", mime]
        return [self.program, "-selection", "clipboard", "-t", mime, "-o"]


def find_reader(workspace: Path, environ: dict[str, str] | None = None) -> Reader | None:
    """wl-paste under a Wayland session, else xclip under X; None where neither is (a server, ssh)."""
    from kimi_cli.hostsafe.programs import host_which

    env = os.environ if environ is None else environ
    if env.get("WAYLAND_DISPLAY"):
        found = host_which("wl-paste", exclude=[workspace])
        if found:
            return Reader(found, "wayland")
    if env.get("DISPLAY"):
        found = host_which("xclip", exclude=[workspace])
        if found:
            return Reader(found, "x11")
    return None


async def _read_all(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Until the end or `limit` bytes (a stream's read(n) returns whatever one chunk brought)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await stream.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


async def _run(argv: list[str], limit: int) -> bytes:
    from kimi_cli.hostsafe.secrets import without_keys

    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=without_keys(os.environ), start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        data = await asyncio.wait_for(_read_all(proc.stdout, limit + 1), READ_TIMEOUT)
    except TimeoutError:
        raise ClipboardError("the clipboard did not answer in time") from None
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    if len(data) > limit:
        raise ClipboardError(f"the clipboard's image is over {limit // (1024 * 1024)} MiB")
    return data


async def read_image(workspace: Path) -> tuple[bytes, str]:
    """The clipboard's image as (bytes, mime); ClipboardError says why there is none."""
    from kimi_cli.media.pipeline import MAX_IMAGE_BYTES

    reader = find_reader(workspace)
    if reader is None:
        raise ClipboardError("no clipboard reader here: install wl-clipboard (Wayland) or xclip (X11), "
                             "or attach a file with /image PATH")  # fmt: skip
    offered = (await _run(reader.list_types(), 64 * 1024)).decode("utf-8", "replace").split()
    mime = next((m for m in IMAGE_TYPES if m in offered), None)
    if mime is None:
        raise ClipboardError("no image on the clipboard")
    data = await _run(reader.read(mime), MAX_IMAGE_BYTES)
    if not data:
        raise ClipboardError("the clipboard's image is empty")
    return data, mime


def keep(data: bytes, mime: str) -> Path:
    """Write the pasted image to ~/.kimi/pastes (0700 folder, 0600 file); its path."""
    from kimi_cli.hostsafe.fs import rooted, write_atomic_at
    from kimi_cli.util.paths import kimi_home

    folder = kimi_home() / "pastes"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = f"clipboard-{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns() % 1_000_000:06d}{SUFFIX[mime]}"
    with rooted(folder) as fd:
        write_atomic_at(fd, name, data, new_mode=0o600, keep_mode=False)
    return folder / name


class ClipboardPaste:
    """Ctrl-V and /paste for an interactive session (`app` is the InteractiveApp)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._tasks: set[asyncio.Future[Any]] = set()

    def register(self, registry: Any) -> None:
        from kimi_cli.frontends.terminal.slash_registry import SlashCommand

        registry.add(SlashCommand("paste", "attach the clipboard's image to your next message (Ctrl-V)",
                                  self.cmd_paste))  # fmt: skip

    def bind_keys(self, bindings: Any) -> None:
        from prompt_toolkit.filters import Condition
        from prompt_toolkit.keys import Keys

        app = self.app
        typing = Condition(lambda: app.input.question is None)

        @bindings.add("c-v", filter=typing)
        def _paste(event: Any) -> None:
            task = asyncio.ensure_future(self.paste())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        @bindings.add(Keys.BracketedPaste, filter=typing)
        def _bracketed(event: Any) -> None:
            text = event.data.replace("\r\n", "\n").replace("\r", "\n")
            path = app.pasted_image(text)
            if path is None:  # ordinary text, as prompt_toolkit's own binding inserts it
                event.current_buffer.insert_text(text)
                return
            self.attach(path, path.name)

    async def cmd_paste(self, arg: str) -> None:
        await self.paste()

    async def paste(self) -> bool:
        """Read the clipboard's image and attach it; say why not."""
        try:
            data, mime = await read_image(self.app.runtime.workdir)
            path = keep(data, mime)
        except ClipboardError as exc:
            self.app.console.print(visible_text(str(exc), "yellow"))
            return False
        except OSError as exc:
            self.app.console.print(visible_text(f"cannot keep the pasted image: {exc.strerror or exc}", "yellow"))
            return False
        return self.attach(path, "clipboard image")

    def attach(self, path: Path, shown: str) -> bool:
        """Check and size it as it will be sent, then queue it for the next message."""
        from kimi_cli.errors import KimiError
        from kimi_cli.frontends.attachments import named_by_user, read_attachment
        from kimi_cli.media.pipeline import prepare

        app = self.app
        limits = app.runtime.image_limits()
        try:
            item = named_by_user(str(path), app.runtime.workdir)
            prepared = prepare(read_attachment(item, app.runtime.workdir), limits, shown)
        except (KimiError, ValueError) as exc:
            app.console.print(visible_text(str(exc).removeprefix("cannot attach image: "), "yellow"))
            return False
        app.pending_images.append(str(path))
        tokens = prepared.tokens(limits.patch)
        note = f"[image #{len(app.pending_images)}] {shown} ({prepared.note()}, ~{tokens:,} tokens): "
        app.console.print(visible_text(note + "it goes with your next message", "cyan"))
        app.input.invalidate()
        return True
