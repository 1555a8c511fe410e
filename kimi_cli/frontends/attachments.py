"""Attach images to the user's message: `--image PATH` and `@path.png` inside the prompt.

An `@path.png` is text in the prompt, and a prompt may come from a project's custom command: it attaches
only a file inside the workspace, resolved there (a link inside that stays inside is followed, a link out
is refused) and read through the no-follow reader (kimi_cli.hostsafe.fs). An absolute path, `~` or a `..`
that leads out is refused. `--image PATH` (and the terminal's `/image`, or a dropped path) is the user's own
word: a path inside the workspace is read the same way, and one outside it, named by its absolute path,
is the user's file, read as a regular file.

Each one goes through the image pipeline (kimi_cli.media.pipeline): downscaled to the model's long-edge
bound, upright, one frame, no metadata; a picture that cannot fit the request is refused here, before any
request. A workspace image is read as ReadMediaFile reads one (kimi_cli.tools.media), so this sits with the
front ends, above the tools: every front end attaches images the same way."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError
from kimi_cli.llm.types import Message
from kimi_cli.media.image import ImageLimits, Prepared

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")  # the names an attachment may have
IMAGE_REF = re.compile(
    r"(?<![\w@])@((?:[^\s@]|\\ )+\.(?:" + "|".join(s[1:] for s in IMAGE_SUFFIXES) + r"))\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Attachment:
    """One image to attach: inside the workspace (`rel`, read no-follow) or the user's own file (`path`)."""

    shown: str  # as the user (or the command) wrote it
    rel: str | None = None
    path: Path | None = None


def find_image_refs(prompt: str) -> list[str]:
    """The `@path.png` references in a prompt, in order, without duplicates."""
    seen: list[str] = []
    for match in IMAGE_REF.finditer(prompt):
        ref = match.group(1).replace("\\ ", " ")
        if ref not in seen:
            seen.append(ref)
    return seen


def _leads_out(rel: str) -> bool:
    norm = posixpath.normpath(rel)
    return norm == ".." or norm.startswith("../")


def mentioned(ref: str) -> Attachment:
    """An `@ref` of the prompt: a workspace path, or ConfigError."""
    if ref.startswith(("/", "~")) or _leads_out(ref):
        raise ConfigError(
            f"cannot attach image: @{ref} is outside the workspace; @ attaches files inside it only "
            "(attach a file of your own with --image /absolute/path)"
        )
    return Attachment(ref, rel=posixpath.normpath(ref))


def named_by_user(item: str, cwd: Path) -> Attachment:
    """An --image PATH (or /image PATH): inside the workspace, or the user's own file by absolute path."""
    path = Path(item).expanduser()
    if not path.is_absolute():
        if _leads_out(item):
            raise ConfigError(f"cannot attach image: {item} leads out of the workspace; name a file of your own "
                              "by its absolute path")  # fmt: skip
        return Attachment(item, rel=posixpath.normpath(item))
    lexical = os.path.normpath(path)
    for base in {str(cwd.resolve()), os.path.abspath(cwd)}:  # the workspace as resolved, and as reached
        if lexical.startswith(base.rstrip("/") + "/"):
            return Attachment(item, rel=lexical[len(base.rstrip("/")) + 1 :])
    return Attachment(item, path=Path(lexical))


def attachments(prompt: str, images: list[str], cwd: Path) -> list[Attachment]:
    """--image paths, then @refs in the prompt, without duplicates; ConfigError for an @ref outside."""
    found = [named_by_user(item, cwd) for item in images]
    found += [mentioned(ref) for ref in find_image_refs(prompt) if ref not in images]
    out: list[Attachment] = []
    for item in found:
        if all((item.rel, item.path) != (o.rel, o.path) for o in out):
            out.append(item)
    return out


def read_attachment(item: Attachment, cwd: Path) -> bytes:
    """The attachment's bytes (at most the pipeline's MAX_IMAGE_BYTES); ConfigError says why not."""
    from kimi_cli.media.pipeline import MAX_IMAGE_BYTES

    if item.path is not None:
        from kimi_cli.hostsafe.settings_read import read_settings_bytes

        try:  # one open, regular files only, never blocking
            return read_settings_bytes(item.path, MAX_IMAGE_BYTES)
        except FileNotFoundError:
            raise ConfigError(f"cannot attach image: image not found: {item.shown}") from None
        except OSError as exc:
            raise ConfigError(f"cannot attach image: cannot read image {item.shown}: {exc.strerror}") from None
    from kimi_cli.tools.errors import ToolError
    from kimi_cli.tools.media import read_workspace_image
    from kimi_cli.tools.workspace import Workspace

    assert item.rel is not None
    try:
        return read_workspace_image(Workspace(cwd), item.rel)
    except ToolError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise ConfigError(f"cannot attach image: image not found: {item.shown}") from None
        raise ConfigError(f"cannot attach image: {exc}") from None


def check_attachments(prompt: str, images: list[str], cwd: Path) -> None:
    """Before anything slow (packing): every attachment may be read and is a supported image. ConfigError
    if not."""
    from kimi_cli.media.pipeline import sniff

    for item in attachments(prompt, images, cwd):
        if sniff(read_attachment(item, cwd)[:16]) is None:
            raise ConfigError(f"cannot attach image: unsupported image format: {item.shown} (PNG, JPEG, WebP "
                              "and GIF are supported)")  # fmt: skip


def build_user_message(
    prompt: str,
    images: list[str],
    cwd: Path,
    limits: ImageLimits | None = None,
    notify: Callable[[str], object] | None = None,
) -> Message:
    """A user message with the prompt and every image as a data-URL part, each sized for the model
    (`limits`, from the model table); ConfigError if one is bad or cannot fit the request. `notify` hears
    one line per image attached (its size as sent, and what resizing did), once all of them are ready."""
    from kimi_cli.media.pipeline import prepare

    found = attachments(prompt, images, cwd)
    if not found:
        return {"role": "user", "content": prompt}
    parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    told: list[str] = []
    for item in found:
        try:
            prepared = prepare(read_attachment(item, cwd), limits or ImageLimits(), item.shown)
        except ValueError as exc:
            raise ConfigError(f"cannot attach image: {exc}") from None
        parts.append({"type": "image_url", "image_url": {"url": prepared.data_url()}})
        told.append(attached_note(item.shown, prepared, (limits or ImageLimits()).patch))
    if notify is not None:
        for line in told:
            notify(line)
    return {"role": "user", "content": parts}


def attached_note(shown: str, prepared: Prepared, patch: int) -> str:
    """`attached shot.png (1024x640, 3,367 image tokens)`, or `(resized 3840x2160 -> 2048x1152, ...)`."""
    size = prepared.note()
    how = f"resized {size}" if "->" in size else f"{size}, re-encoded" if prepared.changed else size
    return f"attached {shown} ({how}, {prepared.tokens(patch):,} image tokens)"
