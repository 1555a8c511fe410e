"""The `vllm serve` command line for a plan: one pure function, tested exactly."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServeOptions:
    weights: Path
    served_name: str
    tensor_parallel: int
    pipeline_parallel: int = 1
    expert_parallel: bool = True
    max_model_len: int = 1_048_576
    gpu_memory_utilization: float = 0.92
    host: str = "127.0.0.1"
    port: int = 8000
    kv_dtype: str = "auto"
    parsers: tuple[str, str] | None = ("kimi_k3", "kimi_k3")  # (tool-call, reasoning); None: no Kimi parser
    ray: bool = False
    max_num_seqs: int | None = None
    trust_remote_code: bool = False
    spec_tokens: int = 0  # MTP speculative tokens; 0: off


def vllm_argv(opts: ServeOptions, vllm: str = "vllm") -> list[str]:
    argv = [vllm, "serve", str(opts.weights), "--served-model-name", opts.served_name,
            "--host", opts.host, "--port", str(opts.port),
            "--tensor-parallel-size", str(opts.tensor_parallel)]  # fmt: skip
    if opts.pipeline_parallel > 1:
        argv += ["--pipeline-parallel-size", str(opts.pipeline_parallel)]
    if opts.expert_parallel:
        argv.append("--enable-expert-parallel")
    argv += ["--max-model-len", str(opts.max_model_len), "--gpu-memory-utilization", f"{opts.gpu_memory_utilization:g}"]
    if opts.kv_dtype != "auto":
        argv += ["--kv-cache-dtype", opts.kv_dtype]
    if opts.max_num_seqs:
        argv += ["--max-num-seqs", str(opts.max_num_seqs)]
    if opts.parsers:
        tool_parser, reasoning_parser = opts.parsers
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", tool_parser, "--reasoning-parser", reasoning_parser]
    if opts.spec_tokens > 0:
        spec = {"method": "mtp", "num_speculative_tokens": opts.spec_tokens}
        argv += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    if opts.trust_remote_code:
        argv.append("--trust-remote-code")
    if opts.ray:
        argv += ["--distributed-executor-backend", "ray"]
    return argv


def ray_steps(head_ip: str, nodes: int, port: int = 6379) -> list[str]:
    """What to run on each node before `vllm serve` on the head (multi-node uses Ray, as vLLM does)."""
    steps = [f"on the head node ({head_ip}): ray start --head --port {port}"]
    steps += [f"on worker node {i}: ray start --address {head_ip}:{port}" for i in range(1, nodes)]
    steps.append("check: ray status (expect all nodes and their GPUs), then run kimi engine serve on the head")
    return steps
