"""Attach images to the user's message: `--image PATH` and `@path.png` inside the prompt."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError
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


def build_user_message(prompt: str, images: list[str], cwd: Path) -> Message:
    """A user message with the prompt and every image as a data-URL part; ConfigError if one is bad."""
    paths = list(images) + [r for r in find_image_refs(prompt) if r not in images]
    if not paths:
        return {"role": "user", "content": prompt}
    parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    for raw in paths:
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else cwd / path
        try:
            url = image_data_url(path)
        except ValueError as exc:
            raise ConfigError(f"cannot attach image: {exc}") from None
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": parts}
