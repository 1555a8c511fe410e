"""What `plan` and `serve` are about: a weights folder, a config.json alone, or a model id, read ONE way.

Both commands get the model's spec, its family and the weights' size from `resolve_model`, so they cannot
disagree: the size is the checkpoint's own (its shard files, or its index's `metadata.total_size`) when the
folder has them, and otherwise the estimate from the config (parameters x bits), named as an estimate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from kimi_cli.engine.family import ModelFamily, detect_family
from kimi_cli.engine.spec import KIMI_K3_1_PRO, ModelSpec, spec_from_config
from kimi_cli.engine.weights import checkpoint_size
from kimi_cli.errors import ConfigError

# The one model kimi knows without a config.json: the seed documents' Kimi K3.1 Pro.
BUILTIN_FAMILY = ModelFamily("kimi_k3", ("kimi_k3", "kimi_k3"), False, "the built-in Kimi K3.1 Pro (seed figures)", 0)


@dataclass(frozen=True)
class Model:
    target: str  # what `vllm serve` gets: the weights folder, or the model id
    folder: Path | None  # the weights folder, when there is one (its files may still be missing)
    spec: ModelSpec
    family: ModelFamily

    @property
    def weights_how(self) -> str:
        """Where the weights' size comes from, for one line of `serve` and the plan's table."""
        if self.spec.checkpoint_bytes:
            return self.spec.weights_source or "the checkpoint"
        return f"estimated from the config: {self.spec.total_params / 1e12:.2f}T params x {self.spec.weight_bits} bits"


def is_builtin(name: str) -> bool:
    """`kimi-k3.1-pro`, in any case, with or without an organisation (`someone/Kimi-K3.1-Pro`)."""
    return name.rsplit("/", 1)[-1].strip().lower() == KIMI_K3_1_PRO.name


def resolve_model(target: str, config: Path | None = None) -> Model:
    """A folder (its config.json), a config.json file (the folder it sits in will hold the weights), or a
    model id (the built-in K3.1 Pro, or any id with --config). ConfigError says what is missing."""
    path = Path(target).expanduser()
    folder: Path | None = None
    if path.is_dir():
        folder = path
        config = config or path / "config.json"
        if not config.is_file():
            raise ConfigError(f"{path} has no config.json (give one with --config PATH)")
    elif path.is_file():
        if config is None:
            config = path
        folder = path.parent
    elif config is None and not is_builtin(target):
        raise ConfigError(
            f"{target} is neither a folder nor a file, and kimi knows no model of that name "
            f"(it knows {KIMI_K3_1_PRO.name}): give its config.json with --config PATH"
        )
    if config is None:
        return Model(target, None, KIMI_K3_1_PRO, BUILTIN_FAMILY)
    try:
        data = json.loads(config.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        spec = spec_from_config(config)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {config}: {exc}") from None
    family = detect_family(data)
    if family.name == "kimi_k3" and spec.layers == KIMI_K3_1_PRO.layers and not spec.linear_attention_layers:
        spec = replace(KIMI_K3_1_PRO, checkpoint_bytes=None, weights_source="")  # no KDA layout: the seed's shape
    # A folder's own size; a model id with --config is served under the id, as vLLM would.
    spec = with_checkpoint(spec, folder) if folder is not None else replace(spec, name=target)
    return Model(str(folder) if folder is not None else target, folder, spec, family)


def with_checkpoint(spec: ModelSpec, folder: Path) -> ModelSpec:
    """The spec with the folder's own size, or marked as estimated from the config when it has none."""
    size = checkpoint_size(folder)
    if size is None:
        note = f"no shards in {folder.name or folder} yet: the weights' size is estimated from the config"
        return replace(spec, checkpoint_bytes=None, weights_source="", assumptions=(*spec.assumptions, note))
    return replace(spec, checkpoint_bytes=float(size.total), checkpoint_shards=size.shards, weights_source=size.how)
