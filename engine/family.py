"""Which model a checkpoint holds, from its config.json: the parsers vLLM needs, and whether it runs native.

Kimi K3 writes its tool calls and thinking in XTML channels (`<|open|>tools<|sep|>...`), which only vLLM's
`kimi_k3` parsers read; K2-style models (and DeepSeek-V3) use `kimi_k2`'s format; anything else gets no
Kimi parser, since those need Kimi's special tokens. `--trust-remote-code` runs code shipped with the
weights, so it is passed only when vLLM does not know the architecture, or the checkpoint ships its own
code (`auto_map`), or the user asks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Architectures vLLM 0.33 implements itself (the ones a Kimi user meets; any other needs remote code).
NATIVE_ARCHITECTURES = frozenset(
    {
        "KimiK3ForConditionalGeneration", "KimiLinearForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM",
        "KimiVLForConditionalGeneration", "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM",
        "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM",
        "GPTNeoXForCausalLM", "GPT2LMHeadModel", "OPTForCausalLM",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ModelFamily:
    name: str  # kimi_k3 | kimi_k2 | other
    parsers: tuple[str, str] | None  # (tool-call parser, reasoning parser), or None
    needs_remote_code: bool
    why: str
    mtp_layers: int  # num_nextn_predict_layers: heads for MTP speculative decoding


def _text_config(data: dict[str, Any]) -> dict[str, Any]:
    text = data.get("text_config")
    return {**text, **{k: v for k, v in data.items() if k != "text_config"}} if isinstance(text, dict) else data


def detect_family(data: dict[str, Any]) -> ModelFamily:
    """From a parsed config.json (nested `text_config` included)."""
    merged = _text_config(data)
    archs = [str(a) for a in (data.get("architectures") or merged.get("architectures") or [])]
    model_types = {str(data.get("model_type", "")).lower(), str(merged.get("model_type", "")).lower()}
    text = data.get("text_config")
    if isinstance(text, dict):
        model_types.add(str(text.get("model_type", "")).lower())
    mtp = int(merged.get("num_nextn_predict_layers", 0) or 0)
    unknown = [a for a in archs if a not in NATIVE_ARCHITECTURES]
    custom_code = bool(data.get("auto_map"))
    remote = bool(unknown) or custom_code or not archs
    reason = (
        f"architecture {', '.join(unknown)} is not built into vLLM" if unknown
        else "the checkpoint ships its own code (auto_map)" if custom_code
        else "config.json names no architecture" if not archs
        else f"{archs[0]} is native in vLLM"
    )  # fmt: skip
    if "KimiK3ForConditionalGeneration" in archs or "kimi_k3" in model_types:
        return ModelFamily("kimi_k3", ("kimi_k3", "kimi_k3"), remote, reason, mtp)
    if any(t in model_types for t in ("kimi_k2", "deepseek_v3")) or "DeepseekV3ForCausalLM" in archs:
        return ModelFamily("kimi_k2", ("kimi_k2", "kimi_k2"), remote, reason, mtp)
    return ModelFamily("other", None, remote, reason, mtp)


def read_family(weights: Path) -> ModelFamily:
    return detect_family(json.loads((weights / "config.json").read_text()))
