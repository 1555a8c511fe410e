"""Attach images to the user's message: `--image PATH` and `@path.png` inside the prompt.

Each one goes through the image pipeline (kimi_cli.image_pipeline): downscaled to the model's long-edge
bound, upright, one frame; a picture that cannot fit the request is refused here, before any request."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError
from kimi_cli.image_pipeline import ImageLimits
from kimi_cli.llm.types import Message
from kimi_cli.tools.media import image_data_url

IMAGE_REF = re.compile(r"(?<![\w@])@((?:[^\s@]|\\ )+\.(?:png|jpe?g|webp|gif))\b", re.IGNORECASE)


def find_image_refs(prompt: str) -> list[str]:
    """The `@path.png` references in a prompt, in order, without duplicates."""
    seen: list[str] = []
    for match in IMAGE_REF.finditer(prompt):
        ref = match.group(1).replace("\\ ", " ")
        if ref not in seen:
            seen.append(ref)
    return seen


def attachment_paths(prompt: str, images: list[str], cwd: Path) -> list[Path]:
    """--image paths, then @refs in the prompt, resolved against `cwd`, without duplicates."""
    raw = list(images) + [r for r in find_image_refs(prompt) if r not in images]
    out: list[Path] = []
    for item in raw:
        path = Path(item).expanduser()
        out.append(path if path.is_absolute() else cwd / path)
    return out


def check_attachments(prompt: str, images: list[str], cwd: Path) -> None:
    """Before anything slow (packing): every attachment exists and is a supported image. ConfigError if not."""
    from kimi_cli.image_pipeline import sniff

    for path in attachment_paths(prompt, images, cwd):
        try:
            from kimi_cli.settings_read import read_settings_bytes

            head = read_settings_bytes(path, 16, head=True)  # a regular file; a FIFO or device is refused
        except FileNotFoundError:
            raise ConfigError(f"cannot attach image: image not found: {path}") from None
        except OSError as exc:
            raise ConfigError(f"cannot attach image: cannot read image {path}: {exc.strerror}") from None
        if sniff(head) is None:
            raise ConfigError(
                f"cannot attach image: unsupported image format: {path} (PNG, JPEG, WebP and GIF are supported)"
            )


def build_user_message(prompt: str, images: list[str], cwd: Path, limits: ImageLimits | None = None) -> Message:
    """A user message with the prompt and every image as a data-URL part, each sized for the model
    (`limits`, from the model table); ConfigError if one is bad or cannot fit the request."""
    paths = attachment_paths(prompt, images, cwd)
    if not paths:
        return {"role": "user", "content": prompt}
    parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    for path in paths:
        try:
            url = image_data_url(path, limits)
        except ValueError as exc:
            raise ConfigError(f"cannot attach image: {exc}") from None
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": parts}
