"""A weights folder before anything is launched: config, tokenizer, every shard the index names, and its size."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.errors import ConfigError

TOKENIZER_FILES = ("tokenizer.json", "tiktoken.model", "tokenizer.model")


def validate_weights(folder: Path) -> list[str]:
    """The shard files of a checkpoint; ConfigError says exactly what is missing."""
    if not folder.is_dir():
        raise ConfigError(f"weights folder {folder} does not exist (download the checkpoint there first)")
    problems: list[str] = []
    if not (folder / "config.json").is_file():
        problems.append("config.json is missing")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        problems.append(f"no tokenizer file (one of {', '.join(TOKENIZER_FILES)})")
    shards: list[str] = []
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text()).get("weight_map", {})
        except ValueError as exc:
            raise ConfigError(f"{index} is not valid JSON: {exc}") from None
        shards = sorted(set(weight_map.values()))
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            problems.append(f"{len(missing)} of {len(shards)} shards named in the index are missing: {shown}")
    else:
        shards = sorted(p.name for p in folder.glob("*.safetensors"))
        if not shards:
            problems.append("no model.safetensors.index.json and no *.safetensors files")
    if problems:
        raise ConfigError(f"the weights in {folder} are incomplete: " + "; ".join(problems))
    return shards


@dataclass(frozen=True)
class CheckpointSize:
    """How much the checkpoint weighs, from its own files: what `plan` and `serve` both load onto the GPUs."""

    total: int  # bytes
    shards: int
    how: str  # for the plan: which files said so


def checkpoint_size(folder: Path) -> CheckpointSize | None:
    """The shards' sizes on disk when every one is there, else the index's `metadata.total_size`; None when
    the folder says neither (then the size is estimated from the config). Shards may be links into a
    Hugging Face cache: their targets' sizes count."""
    index = folder / "model.safetensors.index.json"
    declared = 0
    if index.is_file():
        try:
            data = json.loads(index.read_text())
        except (OSError, ValueError):
            data = {}
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        shards = sorted(set(weight_map.values())) if isinstance(weight_map, dict) else []
        metadata = data.get("metadata") if isinstance(data, dict) else None
        raw = metadata.get("total_size") if isinstance(metadata, dict) else None
        declared = int(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw > 0 else 0
    else:
        shards = sorted(p.name for p in folder.glob("*.safetensors"))
    sizes = [_size(folder / name) for name in shards]
    if shards and all(size is not None for size in sizes):
        total = sum(size or 0 for size in sizes)
        return CheckpointSize(total, len(shards), f"the {len(shards)} shard files on disk")
    if declared:
        return CheckpointSize(declared, len(shards), f"{index.name}'s metadata.total_size, {len(shards)} shards")
    return None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None
