"""`kimi engine status`: health, models, and the scheduler and cache figures from Prometheus /metrics."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from kimi_cli.engine.supervisor import get_json, probe

METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format, summed over label sets."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = METRIC_LINE.match(line.strip())
        if match:
            try:
                out[match.group(1)] = out.get(match.group(1), 0.0) + float(match.group(3))
            except ValueError:
                continue
    return out


def _first(metrics: dict[str, float], *names: str) -> float | None:
    return next((metrics[n] for n in names if n in metrics), None)


@dataclass
class EngineStatus:
    url: str
    healthy: bool
    state: str = "healthy"  # healthy | unhealthy | nothing-listening | unreachable (supervisor.probe)
    detail: str = ""  # HTTP 503, connection refused, the timeout...
    models: list[str] = field(default_factory=list)
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None  # 0..1
    prefix_cache_hit_rate: float | None = None  # 0..1

    def as_dict(self) -> dict[str, object]:
        return dict(vars(self))


def engine_status(base_url: str, key: str | None = None) -> EngineStatus:
    root = base_url.rstrip("/").removesuffix("/v1")
    state, detail = probe(root)
    status = EngineStatus(url=root, healthy=state == "healthy", state=state, detail=detail)
    if state in ("nothing-listening", "unreachable"):
        return status  # nothing to ask for models or metrics
    models = get_json(f"{root}/v1/models", key=key)
    if isinstance(models, dict):
        status.models = [str(m.get("id")) for m in models.get("data", []) if isinstance(m, dict)]
    try:
        with urllib.request.urlopen(f"{root}/metrics", timeout=3) as resp:
            metrics = parse_metrics(resp.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError):
        return status
    status.running = _first(metrics, "vllm:num_requests_running")
    status.waiting = _first(metrics, "vllm:num_requests_waiting")
    status.kv_cache_usage = _first(metrics, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    hits = _first(metrics, "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits")
    queries = _first(metrics, "vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries")
    if hits is not None and queries:
        status.prefix_cache_hit_rate = hits / queries
    else:
        status.prefix_cache_hit_rate = _first(metrics, "vllm:gpu_prefix_cache_hit_rate")
    return status
