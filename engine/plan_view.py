"""Show a plan: a rich table of the arithmetic, the verdict, what would fit instead, and the assumptions."""

from __future__ import annotations

from typing import Any

from kimi_cli.engine.plan import GB, Plan

VERDICTS = {
    "fits": "FITS",
    "fits-fewer": "FITS, but fewer full-context sequences than asked",
    "context-too-long": "the weights fit, but not one sequence of this context",
    "weights-do-not-fit": "DOES NOT FIT: the weights alone exceed the GPUs' usable memory",
}


def _gb(x: float) -> str:
    return f"{x / GB:,.1f} GB"


def plan_json(plan: Plan) -> dict[str, Any]:
    r = plan.request
    return {
        "model": r.spec.name, "gpu": r.gpu_name, "hbm_gb": r.hbm_gb, "gpus_per_node": r.gpus_per_node,
        "nodes": r.nodes, "context": r.context, "kv_dtype": r.kv_dtype,
        "weights_total_bytes": plan.weights_total, "weights_estimate_bytes": r.spec.estimated_weight_bytes(),
        "weights_source": r.spec.weights_source if r.spec.checkpoint_bytes else "config estimate",
        "bf16_bytes": r.spec.estimated_weight_bytes(16), "weights_per_gpu_bytes": plan.weights_per_gpu,
        "usable_per_gpu_bytes": plan.usable_per_gpu, "kv_budget_per_gpu_bytes": plan.kv_budget_per_gpu,
        "kv_bytes_per_token": plan.kv_per_token, "kv_per_sequence_per_gpu_bytes": plan.kv_per_sequence_per_gpu,
        "state_per_sequence_per_gpu_bytes": plan.state_per_sequence_per_gpu, "sequences": plan.sequences,
        "max_context_one_sequence": plan.max_context_one_sequence, "verdict": plan.verdict,
        "suggestions": plan.suggestions, "assumptions": list(r.spec.assumptions),
    }  # fmt: skip


def print_plan(plan: Plan) -> None:
    from rich.console import Console
    from rich.table import Table

    r, s = plan.request, plan.request.spec
    table = Table(title=f"{s.name} on {r.nodes} x {r.gpus_per_node} x {r.gpu_name} ({r.hbm_gb:g} GB each)")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("how")
    rows = [
        ("parallelism", f"TP {r.gpus_per_node} · EP {r.gpus_per_node} · PP {r.nodes}", "experts spread over each node"),
        ("weights (checkpoint)" if s.checkpoint_bytes else "weights (estimated)", _gb(plan.weights_total),
         (f"{s.weights_source or 'the checkpoint'}; " if s.checkpoint_bytes else "from the config: ")
         + f"{s.total_params / 1e12:.2f}T params x {s.weight_bits} bits = {_gb(s.estimated_weight_bytes())}; "
         f"BF16 would be {_gb(s.estimated_weight_bytes(16))}"),
        ("weights per GPU", _gb(plan.weights_per_gpu), f"/ {r.gpus} GPUs"),
        ("usable per GPU", _gb(plan.usable_per_gpu), f"{r.hbm_gb:g} GB x utilization {r.gpu_memory_utilization}"),
        ("activations, CUDA graphs", _gb(r.activation_gb * GB), "per GPU (assumed)"),
        ("left for cache per GPU", _gb(plan.kv_budget_per_gpu), "usable - weights - activations"),
        ("cache per token", f"{plan.kv_per_token / 1e3:,.1f} KB",
         f"{s.full_attention_layers} DSA layers x (latent {s.kv_latent_dim} + rope {s.rope_dim}) {r.kv_dtype} + "
         f"{s.index_key_dim}-dim FP8 index key"),
        ("cache per sequence per GPU", _gb(plan.kv_per_sequence_per_gpu),
         f"{r.context:,} tokens; replicated over TP, split over {r.nodes} PP stage(s)"),
        ("KDA state per sequence per GPU", f"{plan.state_per_sequence_per_gpu / 1e6:,.1f} MB",
         f"{s.linear_attention_layers} layers, constant in length"),
        ("full-context sequences that fit", str(plan.sequences), f"asked for {r.concurrency}"),
        ("longest single sequence", f"{plan.max_context_one_sequence:,} tokens", ""),
    ]  # fmt: skip
    for row in rows:
        table.add_row(*row)
    console = Console()
    console.print(table)
    style = "green" if plan.verdict == "fits" else "yellow" if plan.verdict != "weights-do-not-fit" else "red"
    console.print(f"[bold {style}]verdict: {VERDICTS[plan.verdict]}[/]")
    for tip in plan.suggestions:
        console.print(f"  what would fit: {tip}")
    console.print("[dim]assumptions: " + "; ".join(s.assumptions) + "[/]")
