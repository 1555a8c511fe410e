"""A page rendered to a PNG by headless Chromium, run as a command in the session's sandbox.

The page is the workspace's (a file the model wrote, or the user's URL serving it), so Chromium gets
exactly what the model's own commands get: the sandbox's view (credential stores hidden, a private /tmp),
its network (none unless the session allows it) and its limits. It runs with --no-sandbox because its
own sandbox cannot nest inside ours (no new namespaces, no setuid); what a hostile page could do with a
renderer bug is then what a model command can do anyway. Each render has a fresh profile and HOME in a
temporary folder of the sandbox's /tmp, never the user's.

The PNG comes back through the command's output, in base64 chunks that fit the sandbox's output cap, and
is checked against the SHA-256 the first chunk announced (a background command could swap the file
between two reads). The bytes are the page's, so the caller treats them as any workspace image: through
the image pipeline (headers first, size caps) before anything decodes them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kimi_cli.errors import ConfigError

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# The flags every render uses: no GPU, no first-run, no background fetches, no component updates, the page
# at one pixel per CSS pixel without scrollbars; /dev/shm is not writable under Landlock.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
         "--no-default-browser-check", "--mute-audio", "--force-color-profile=srgb")  # fmt: skip
RENDER_TIMEOUT = 90.0  # seconds for one render in the sandbox (a cold start on a loaded machine takes ~8 s)
MAX_PNG_BYTES = 20 * 1024 * 1024
SHOT = re.compile(r"^kimi-shot: (/[\w./-]+) (\d+) ([0-9a-f]{64})$", re.M)
FAILED = re.compile(r"^kimi-shot-failed: (\d+)$", re.M)

Run = Callable[[str, float], Awaitable[object]]  # Sandbox.run: (command, timeout) -> ExecResult


class RenderError(Exception):
    """The page could not be rendered; the message says why (for the model and the user)."""


@dataclass
class Rendered:
    png: bytes
    extra: str  # what else the command's output said (the sandbox's notes about earlier commands)


def find_chromium(writable: tuple[object, ...]) -> str:
    """The host's Chromium, never one from a folder commands can write; ConfigError when there is none."""
    from pathlib import Path

    from kimi_cli.hostsafe.programs import host_which

    roots = tuple(Path(str(p)) for p in writable)
    for name in CHROMIUM_NAMES:
        found = host_which(name, roots)
        if found:
            return found
    raise ConfigError(
        "--visual-check needs headless Chromium: install it (Debian/Ubuntu: apt-get install chromium) so that "
        f"one of {', '.join(CHROMIUM_NAMES)} is on PATH"
    )


def render_command(chromium: str, url: str, size: tuple[int, int], chunk: int, offline: bool) -> str:
    """The first command: render into a fresh folder of the sandbox's /tmp, announce the PNG's folder, size
    and digest, and print its first base64 chunk; on failure, the exit status and the log's tail."""
    width, height = size
    run = " ".join(shlex.quote(a) for a in (chromium, *FLAGS, f"--window-size={width},{height}"))
    run += ' --user-data-dir="$d/profile" --screenshot="$d/shot.png" -- ' + shlex.quote(url)
    # With no sandbox at all (--sandbox none) a file is still rendered without the network where that can be had.
    net = 'n=""; if command -v unshare >/dev/null 2>&1 && unshare -rn true 2>/dev/null; then n="unshare -rn"; fi; '
    return (
        'd=$(mktemp -d) && ' + (net if offline else 'n=""; ')
        + f'HOME="$d" XDG_CONFIG_HOME="$d/c" XDG_CACHE_HOME="$d/c" $n {run} >"$d/log" 2>&1 </dev/null; rc=$?; '
        'if [ -s "$d/shot.png" ]; then '
        'echo "kimi-shot: $d $(wc -c <"$d/shot.png") $(sha256sum <"$d/shot.png" | cut -d" " -f1)"; '
        f'base64 -w0 "$d/shot.png" | head -c {chunk}; echo; '
        'else echo "kimi-shot-failed: $rc"; tail -c 2000 "$d/log"; rm -rf "$d"; fi'
    )  # fmt: skip


def chunk_command(folder: str, offset: int, chunk: int, last: bool) -> str:
    """A later chunk of the same PNG's base64 (offset counts from 0); the last one removes the folder."""
    q = shlex.quote(folder)
    tail = f"; rm -rf {q}" if last else ""
    return f"base64 -w0 {q}/shot.png | tail -c +{offset + 1} | head -c {chunk}; echo{tail}"


def chunk_size(output_cap: int) -> int:
    """Base64 characters per command: within the output cap with room for the header line, a multiple of 4."""
    return max(512, (output_cap - 400) // 4 * 4)


async def render(run: Run, chromium: str, url: str, size: tuple[int, int], output_cap: int,
                 offline: bool) -> Rendered:  # fmt: skip
    """The page at `url` as PNG bytes, rendered in the sandbox that `run` runs commands in."""
    chunk = chunk_size(output_cap)
    first = _output(await run(render_command(chromium, url, size, chunk, offline), RENDER_TIMEOUT))
    failed = FAILED.search(first)
    found = SHOT.search(first)
    if found is None:
        why = f"exit {failed.group(1)}" if failed else "no screenshot"
        tail = first[failed.end() :].strip()[-800:] if failed else first.strip()[-800:]
        raise RenderError(f"Chromium did not render {url} in the sandbox ({why}): {tail or 'no output'}")
    folder, total, digest = found.group(1), int(found.group(2)), found.group(3)
    if total > MAX_PNG_BYTES:
        await run(f"rm -rf {shlex.quote(folder)}", 30)
        raise RenderError(f"the screenshot is {total:,} bytes, over the {MAX_PNG_BYTES:,}-byte limit")
    encoded_len = (total + 2) // 3 * 4
    lines = first[found.end() :].lstrip("\n").split("\n", 1)
    pieces, extra = [lines[0]], lines[1] if len(lines) > 1 else ""
    got = len(pieces[0])
    while got < encoded_len:
        last = got + chunk >= encoded_len
        out = _output(await run(chunk_command(folder, got, chunk, last), RENDER_TIMEOUT))
        piece, _, more = out.partition("\n")
        if not piece:
            raise RenderError("the screenshot's data stopped before its end")
        pieces.append(piece)
        extra += more
        got += len(piece)
    if encoded_len <= chunk:
        await run(f"rm -rf {shlex.quote(folder)}", 30)
    try:
        png = base64.b64decode("".join(pieces), validate=True)
    except (binascii.Error, ValueError):
        raise RenderError("the screenshot's data was not base64") from None
    if len(png) != total or hashlib.sha256(png).hexdigest() != digest:
        raise RenderError("the screenshot changed while it was read (another command in the sandbox wrote it)")
    return Rendered(png, extra.strip())


def _output(result: object) -> str:
    return str(getattr(result, "output", "") or "")
