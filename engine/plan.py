"""The memory arithmetic of serving a model: weights, KV cache, linear-attention state, and a verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from kimi_cli.engine.spec import ModelSpec

GPU_HBM_GB = {"b300": 288.0, "b200": 180.0, "gb200": 186.0, "h200": 141.0, "h100": 80.0, "a100": 80.0,
              "l40s": 48.0, "mi300x": 192.0}  # fmt: skip
KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}
GB = 1e9


@dataclass(frozen=True)
class PlanRequest:
    spec: ModelSpec
    hbm_gb: float
    gpus_per_node: int = 8
    nodes: int = 1
    context: int = 1_048_576
    concurrency: int = 1
    kv_dtype: str = "bf16"
    gpu_memory_utilization: float = 0.92
    activation_gb: float = 4.0
    gpu_name: str = "custom"

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass
class Plan:
    request: PlanRequest
    weights_total: float
    weights_per_gpu: float
    usable_per_gpu: float
    kv_budget_per_gpu: float
    kv_per_token: float
    kv_per_sequence_per_gpu: float
    state_per_sequence_per_gpu: float
    sequences: int
    max_context_one_sequence: int
    verdict: str  # fits | fits-fewer | context-too-long | weights-do-not-fit
    suggestions: list[str] = field(default_factory=list)

    @property
    def tensor_parallel(self) -> int:
        return self.request.gpus_per_node

    @property
    def pipeline_parallel(self) -> int:
        return self.request.nodes


def make_plan(req: PlanRequest, suggest: bool = True) -> Plan:
    """The arithmetic and the verdict; with `suggest`, also what would fit instead."""
    spec = req.spec
    tp, pp = req.gpus_per_node, req.nodes
    weights_total = spec.weight_bytes()
    weights_per_gpu = weights_total / req.gpus  # experts spread by EP, the rest by TP, layers by PP
    usable = req.hbm_gb * GB * req.gpu_memory_utilization
    budget = usable - weights_per_gpu - req.activation_gb * GB
    kv_token = spec.kv_bytes_per_token(KV_BYTES[req.kv_dtype])
    # The MLA latent cache is replicated on every tensor-parallel rank; pipeline stages split the layers.
    kv_seq = kv_token * req.context / pp
    state_seq = spec.linear_state_bytes() / (tp * pp)
    per_seq = kv_seq + state_seq
    sequences = max(0, int(budget // per_seq)) if per_seq > 0 else 0
    max_ctx = int(max(0.0, budget - state_seq) * pp / kv_token) if kv_token > 0 and budget > 0 else 0
    if budget <= 0:
        verdict = "weights-do-not-fit"
    elif sequences == 0:
        verdict = "context-too-long"
    elif sequences < req.concurrency:
        verdict = "fits-fewer"
    else:
        verdict = "fits"
    plan = Plan(
        req,
        weights_total,
        weights_per_gpu,
        usable,
        budget,
        kv_token,
        kv_seq,
        state_seq,
        sequences,
        min(max_ctx, spec.max_context),
        verdict,
    )
    if suggest:
        plan.suggestions = _suggestions(plan)
    return plan


MAX_SUGGESTED_UTIL = 0.98  # above this, what vLLM and CUDA hold outside the budget may not fit


def _suggestions(plan: Plan) -> list[str]:
    """Every change that would fit what was asked, each starting with the flags to add (a test re-plans
    each one): more nodes, a bigger GPU, more of each GPU (utilisation, or GPUs that expose more HBM),
    and, once the weights fit, a shorter context or an FP8 cache."""
    req = plan.request
    if plan.verdict == "fits":
        return []
    tips: list[str] = []
    for nodes in range(req.nodes + 1, req.nodes + 8):
        bigger = make_plan(replace(req, nodes=nodes), suggest=False)
        if bigger.sequences >= req.concurrency:
            tips.append(f"--nodes {nodes}: {bigger.sequences} sequences of {req.context:,} tokens fit")
            break
    for name, hbm in sorted(GPU_HBM_GB.items(), key=lambda item: item[1]):
        if req.gpu_name in GPU_HBM_GB and hbm > req.hbm_gb:  # (--hbm-gb, when given, outranks --gpu)
            other = make_plan(replace(req, hbm_gb=hbm, gpu_name=name), suggest=False)
            if other.sequences >= req.concurrency:
                tips.append(
                    f"--gpu {name}: {other.sequences} sequences of {req.context:,} tokens fit ({hbm:g} GB each)"
                )
                break
    tips += _memory_tips(plan)
    if plan.verdict != "weights-do-not-fit":
        if 1024 <= plan.max_context_one_sequence < req.context:
            longest = plan.max_context_one_sequence
            tips.append(f"--context {longest}: one sequence of {longest:,} tokens fits")  # pasteable: no commas
        if req.kv_dtype != "fp8":
            fp8 = make_plan(replace(req, kv_dtype="fp8"), suggest=False)
            if fp8.sequences > plan.sequences:
                tips.append(f"--kv-dtype fp8: {fp8.sequences} sequences of {req.context:,} tokens fit")
    return tips


def _memory_tips(plan: Plan) -> list[str]:
    """More of each GPU: a higher --gpu-util when that alone fits what was asked, and the HBM per GPU
    that would (for GPUs that expose more than the table says: --hbm-gb)."""
    req = plan.request
    per_seq = plan.kv_per_sequence_per_gpu + plan.state_per_sequence_per_gpu
    need = plan.weights_per_gpu + req.activation_gb * GB + per_seq * req.concurrency  # bytes per GPU
    tips: list[str] = []
    util = math.ceil(need / (req.hbm_gb * GB) * 100) / 100
    if req.gpu_memory_utilization < util <= MAX_SUGGESTED_UTIL:
        tips.append(f"--gpu-util {util:.2f}: {req.concurrency} sequence(s) of {req.context:,} tokens fit "
                    "(if nothing else uses the GPUs)")  # fmt: skip
    hbm = math.ceil(need / (req.gpu_memory_utilization * GB))
    if hbm > req.hbm_gb:
        tips.append(f"--hbm-gb {hbm}: GPUs that expose {hbm} GB each fit {req.concurrency} sequence(s) of "
                    f"{req.context:,} tokens at --gpu-util {req.gpu_memory_utilization:g}")  # fmt: skip
    return tips
