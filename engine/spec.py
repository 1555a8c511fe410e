"""ModelSpec: a model's architecture as data. Kimi K3.1 Pro from the seed documents, or any config.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


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
    assumptions=(
        "KV latent 512 + RoPE 64 per token per DSA layer (MLA-style, as in Kimi K2); the seed gives none",
        "one 128-dim FP8 indexer key per token per DSA layer (the seed: index 32 heads x 128 dim)",
        "KDA state: 96 heads x 128 x 128 in fp32 per layer per sequence",
        "MXFP4 = 4 bits + one 8-bit scale per 32 weights = 4.25 bits; the 1.4 TB checkpoint size is used",
        "vLLM keeps 1 - gpu_memory_utilization of HBM free; activations and CUDA graphs take 4 GB per GPU",
    ),
)


def spec_from_config(path: Path) -> ModelSpec:
    """Read the same fields from a Hugging Face-style config.json (small test models included)."""
    data = json.loads(path.read_text())
    cfg = data.get("text_config", data)
    layers = int(cfg.get("num_hidden_layers", 1))
    hidden = int(cfg.get("hidden_size", 1024))
    heads = int(cfg.get("num_attention_heads", 8))
    kv_heads = int(cfg.get("num_key_value_heads", heads))
    head_dim = int(cfg.get("head_dim", hidden // max(heads, 1)))
    vocab = int(cfg.get("vocab_size", 32000))
    inter = int(cfg.get("intermediate_size", 4 * hidden))
    experts = int(cfg.get("n_routed_experts", cfg.get("num_experts", cfg.get("num_local_experts", 0))) or 0)
    active = int(cfg.get("num_experts_per_tok", 0) or 0)
    moe_inter = int(cfg.get("moe_intermediate_size", inter))
    attn = 4 * hidden * hidden
    mlp = 3 * hidden * (moe_inter * experts if experts else inter)
    total = layers * (attn + mlp) + 2 * vocab * hidden
    active_mlp = 3 * hidden * (moe_inter * active if experts else inter)
    kv_lora = int(cfg.get("kv_lora_rank", 0) or 0)
    latent = kv_lora if kv_lora else 2 * kv_heads * head_dim
    rope = int(cfg.get("qk_rope_head_dim", 0) or 0)
    quant = data.get("quantization_config") or {}
    bits = 4.25 if "fp4" in json.dumps(quant).lower() else 16.0
    return ModelSpec(
        name=str(data.get("_name_or_path") or path.parent.name),
        total_params=float(total), active_params=float(layers * (attn + active_mlp) + 2 * vocab * hidden),
        layers=layers, dense_layers=0 if experts else layers, linear_attention_layers=0,
        full_attention_layers=layers, hidden_size=hidden, attention_heads=heads, kv_latent_dim=latent,
        rope_dim=rope, index_key_dim=0, index_heads=0, index_top_k=0, linear_heads=0, linear_head_dim=0,
        routed_experts=experts, active_experts=active, shared_experts=int(cfg.get("n_shared_experts", 0) or 0),
        expert_hidden=moe_inter, latent_moe_dim=hidden, max_context=int(cfg.get("max_position_embeddings", 4096)),
        vision_params=0.0, vocab_size=vocab, weight_bits=bits,
        assumptions=(f"parameters estimated from {path.name} (attention 4h^2, gated MLP 3 x h x inter)",
                     "KV cache in the model dtype for every layer (no linear-attention layers declared)"),
    )  # fmt: skip
