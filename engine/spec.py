"""ModelSpec: a model's architecture as data. Kimi K3.1 Pro from the seed documents, or any config.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelSpec:
    """What memory planning needs to know about a model. `assumptions` names every figure we had to guess."""

    name: str
    total_params: float
    active_params: float
    layers: int
    dense_layers: int
    linear_attention_layers: int  # KDA: a constant-size state per sequence
    full_attention_layers: int  # Gated DSA: a cache that grows with every token
    hidden_size: int
    attention_heads: int
    kv_latent_dim: int  # compressed (MLA-style) KV per token per full-attention layer
    rope_dim: int
    index_key_dim: int  # DSA indexer key per token per layer
    index_heads: int
    index_top_k: int
    linear_heads: int
    linear_head_dim: int
    routed_experts: int
    active_experts: int
    shared_experts: int
    expert_hidden: int
    latent_moe_dim: int
    max_context: int
    vision_params: float
    vocab_size: int
    weight_bits: float  # average bits per parameter as stored, scales included
    checkpoint_bytes: float | None = None  # measured size on disk, when known
    checkpoint_shards: int | None = None
    weights_source: str = ""  # where checkpoint_bytes comes from (the shard files, the index, the seed)
    mtp_layers: int = 0  # multi-token-prediction heads (num_nextn_predict_layers), for speculative decoding
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def weight_bytes(self) -> float:
        """Bytes of weights to load: the checkpoint's size when known, else params x bits."""
        return self.checkpoint_bytes if self.checkpoint_bytes else self.estimated_weight_bytes()

    def estimated_weight_bytes(self, bits: float | None = None) -> float:
        return self.total_params * (bits if bits is not None else self.weight_bits) / 8

    def kv_bytes_per_token(self, kv_dtype_bytes: float) -> float:
        """Cache per token across the full-attention layers: latent KV (+ rope) and the indexer key."""
        per_layer = (self.kv_latent_dim + self.rope_dim) * kv_dtype_bytes + self.index_key_dim * 1.0  # FP8 keys
        return per_layer * self.full_attention_layers

    def linear_state_bytes(self) -> float:
        """Per-sequence state of the linear-attention layers (fp32 heads x d x d), whatever the length."""
        return self.linear_attention_layers * self.linear_heads * self.linear_head_dim**2 * 4


KIMI_K3_1_PRO = ModelSpec(
    name="kimi-k3.1-pro",
    total_params=2.8e12,
    active_params=104e9,
    layers=93,
    dense_layers=1,
    linear_attention_layers=69,
    full_attention_layers=24,
    hidden_size=7168,
    attention_heads=96,
    kv_latent_dim=512,
    rope_dim=64,
    index_key_dim=128,
    index_heads=32,
    index_top_k=2048,
    linear_heads=96,
    linear_head_dim=128,
    routed_experts=896,
    active_experts=16,
    shared_experts=2,
    expert_hidden=3072,
    latent_moe_dim=3584,
    max_context=1_048_576,
    vision_params=401e6,
    vocab_size=163_840,
    weight_bits=4.25,
    checkpoint_bytes=1.4e12,
    checkpoint_shards=96,
    weights_source="96 shards",
    assumptions=(
        "KV latent 512 + RoPE 64 per token per DSA layer (MLA-style, as in Kimi K2); the seed gives none",
        "one 128-dim FP8 indexer key per token per DSA layer (the seed: index 32 heads x 128 dim)",
        "KDA state: 96 heads x 128 x 128 in fp32 per layer per sequence",
        "MXFP4 = 4 bits + one 8-bit scale per 32 weights = 4.25 bits; the 1.4 TB checkpoint size is used",
        "vLLM keeps 1 - gpu_memory_utilization of HBM free; activations and CUDA graphs take 4 GB per GPU",
    ),
)


def _first(cfg: dict[str, Any], *keys: str, default: int = 0) -> int:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            return int(value)
    return default


def spec_from_config(path: Path) -> ModelSpec:
    """Read a Hugging Face-style config.json: dense models, MoE (DeepSeek/Kimi K2 keys) and Kimi K3's
    nested `text_config` with its KDA layout (`linear_attn_config`), MLA dims and MTP layers. What the
    file does not say is an assumption, and named as one."""
    data = json.loads(path.read_text())
    nested = data.get("text_config")
    cfg: dict[str, Any] = {**data, **nested} if isinstance(nested, dict) else data
    assumptions: list[str] = [
        f"parameters estimated from {path.name} (attention 4h^2, gated MLP 3 x h x inter, "
        "experts at the latent MoE size when the config gives one)"
    ]
    layers = _first(cfg, "num_hidden_layers", "n_layers", "num_layers", default=1)
    hidden = _first(cfg, "hidden_size", "d_model", default=1024)
    heads = _first(cfg, "num_attention_heads", "n_heads", default=8)
    kv_heads = _first(cfg, "num_key_value_heads", default=heads)
    head_dim = _first(cfg, "head_dim", default=hidden // max(heads, 1))
    vocab = _first(cfg, "vocab_size", default=32000)
    inter = _first(cfg, "intermediate_size", default=4 * hidden)
    experts = _first(cfg, "n_routed_experts", "num_experts", "num_local_experts")
    active = _first(cfg, "num_experts_per_tok", "num_experts_per_token", "moe_top_k")
    shared = _first(cfg, "n_shared_experts", "num_shared_experts")
    moe_inter = _first(cfg, "moe_intermediate_size", default=inter)
    dense_layers = _first(cfg, "first_k_dense_replace", default=0 if experts else layers)
    raw_linear = cfg.get("linear_attn_config")
    linear_cfg: dict[str, Any] = raw_linear if isinstance(raw_linear, dict) else {}
    kda_layers = len(linear_cfg.get("kda_layers") or [])
    types = cfg.get("layer_types")
    if not kda_layers and isinstance(types, list):
        kda_layers = sum(1 for t in types if "linear" in str(t))
    linear_heads = int(linear_cfg.get("num_heads") or 0) if kda_layers else 0
    linear_dim = int(linear_cfg.get("head_dim") or 0) if kda_layers else 0
    kv_lora = _first(cfg, "kv_lora_rank")
    latent = kv_lora if kv_lora else 2 * kv_heads * head_dim
    rope = _first(cfg, "qk_rope_head_dim")
    context = _first(cfg, "max_position_embeddings", "model_max_length", "max_sequence_length", "seq_length")
    if not context:
        context = 4096
        assumptions.append("config.json gives no context length: 4,096 tokens assumed")
    attn = 4 * hidden * hidden
    # A latent MoE (Kimi K3: moe_latent_size) runs its experts in a smaller dimension than the hidden size,
    # with one projection down and one up per layer; counting the experts at the hidden size doubles K3.
    moe_latent = _first(cfg, "moe_latent_size", "latent_moe_dim", default=hidden)
    projections = 2 * hidden * moe_latent if moe_latent != hidden else 0
    moe_mlp = 3 * moe_latent * moe_inter * (experts + shared) + projections
    dense_mlp = 3 * hidden * inter
    total = layers * attn + dense_layers * dense_mlp + (layers - dense_layers) * (moe_mlp if experts else dense_mlp)
    total += 2 * vocab * hidden
    active_mlp = 3 * moe_latent * moe_inter * (active + shared) + projections if experts else dense_mlp
    active_total = layers * attn + dense_layers * dense_mlp + (layers - dense_layers) * active_mlp + 2 * vocab * hidden
    quant = data.get("quantization_config") or cfg.get("quantization_config") or {}
    bits = 4.25 if "fp4" in json.dumps(quant).lower() else 16.0
    if kda_layers:
        assumptions.append(f"KDA state: {linear_heads} heads x {linear_dim} x {linear_dim} in fp32 per layer")
    else:
        assumptions.append("KV cache in the model dtype for every layer (no linear-attention layers declared)")
    return ModelSpec(
        name=str(data.get("_name_or_path") or path.parent.name),
        total_params=float(total), active_params=float(active_total),
        layers=layers, dense_layers=dense_layers, linear_attention_layers=kda_layers,
        full_attention_layers=layers - kda_layers, hidden_size=hidden, attention_heads=heads, kv_latent_dim=latent,
        rope_dim=rope, index_key_dim=_first(cfg, "index_head_dim") if cfg.get("index_topk") else 0,
        index_heads=_first(cfg, "index_n_heads"), index_top_k=_first(cfg, "index_topk"),
        linear_heads=linear_heads, linear_head_dim=linear_dim,
        routed_experts=experts, active_experts=active, shared_experts=shared,
        expert_hidden=moe_inter, latent_moe_dim=moe_latent,
        max_context=context, vision_params=0.0, vocab_size=vocab, weight_bits=bits,
        mtp_layers=_first(cfg, "num_nextn_predict_layers"),
        assumptions=tuple(assumptions),
    )  # fmt: skip
