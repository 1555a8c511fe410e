"""Check a weights folder before anything is launched: config, tokenizer, and every shard the index names."""

from __future__ import annotations

import json
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
