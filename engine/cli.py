"""`kimi engine plan|serve|status|stop|bench`."""

from __future__ import annotations

import json
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

engine_app = typer.Typer(
    name="engine",
    help="Plan, launch and check a local vLLM engine for Kimi K3.1 Pro (or any model with a config.json).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",  # one help style for every command (kimi_cli/cli/subcommands.py)
)

GpuOpt = Annotated[
    str, typer.Option("--gpu", help="b200 | b300 | gb200 | h200 | h100 | a100 | l40s | mi300x.", metavar="NAME")
]
HbmOpt = Annotated[float | None, typer.Option("--hbm-gb", help="HBM per GPU in GB, for other GPUs.", metavar="GB")]
PerNodeOpt = Annotated[
    int, typer.Option("--gpus-per-node", help="GPUs per node (tensor/expert parallel).", metavar="N")
]
NodesOpt = Annotated[int, typer.Option("--nodes", help="Nodes (pipeline parallel across them, via Ray).", metavar="N")]
ContextOpt = Annotated[int, typer.Option("--context", help="Context length per sequence, in tokens.", metavar="N")]
KvOpt = Annotated[str, typer.Option("--kv-dtype", help="KV cache dtype: bf16 | fp8.", metavar="DTYPE")]
UtilOpt = Annotated[float, typer.Option("--gpu-util", help="vLLM gpu_memory_utilization.", metavar="RATIO")]


def _request(
    spec: Any,
    gpu: str,
    hbm_gb: float | None,
    per_node: int,
    nodes: int,
    context: int,
    concurrency: int,
    kv: str,
    util: float,
) -> Any:
    from kimi_cli.engine.plan import GPU_HBM_GB, KV_BYTES, PlanRequest

    gpu = gpu.strip().lower()
    if hbm_gb is None and gpu not in GPU_HBM_GB:
        _fail(_unknown_gpu(gpu, list(GPU_HBM_GB)), 2)
    if kv not in KV_BYTES:
        _fail(f"--kv-dtype must be one of {', '.join(KV_BYTES)}", 2)
    return PlanRequest(
        spec,
        hbm_gb or GPU_HBM_GB[gpu],
        per_node,
        nodes,
        min(context, spec.max_context),
        concurrency,
        kv,
        util,
        gpu_name=gpu if hbm_gb is None else f"{hbm_gb:g} GB GPU",
    )


def _model(target: str, config: Path | None = None) -> Any:
    """The model `plan` and `serve` are about, read one way (kimi_cli.engine.model); exit 2 when unreadable."""
    from kimi_cli.engine.model import resolve_model
    from kimi_cli.errors import KimiError

    try:
        return resolve_model(target, config)
    except KimiError as exc:
        _fail(str(exc), int(exc.exit_code))


def _unknown_gpu(gpu: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(gpu, known, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown GPU {gpu!r}: {hint}known: {', '.join(known)} (any case); for another GPU give --hbm-gb N"


def _fail(message: str, code: int = 1) -> None:
    typer.echo(f"kimi engine: {message}", err=True)
    raise typer.Exit(code)


@engine_app.command("plan")
def plan_command(
    gpu: GpuOpt = "b200",
    hbm_gb: HbmOpt = None,
    gpus_per_node: PerNodeOpt = 8,
    nodes: NodesOpt = 1,
    context: ContextOpt = 1_048_576,
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="Full-context sequences wanted at once.", metavar="N")
    ] = 1,
    kv_dtype: KvOpt = "bf16",
    gpu_util: UtilOpt = 0.92,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Plan this config.json (and the shards beside it, if any).", metavar="PATH"),
    ] = None,
    weights: Annotated[
        Path | None,
        typer.Option(
            "--weights", help="Plan the checkpoint in this folder (its config.json, its shards' size).", metavar="PATH"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Will it fit? Weights, KV cache and linear-attention state per GPU, and a verdict."""
    from kimi_cli.engine.model import KIMI_K3_1_PRO
    from kimi_cli.engine.plan import make_plan
    from kimi_cli.engine.plan_view import plan_json, print_plan

    if weights is not None and not (weights / "config.json").is_file() and config is None:
        _fail(f"{weights} has no config.json", 2)
    # The same reading as serve's: the folder's shard files (or its index) when present, else the config.
    model = _model(str(weights) if weights is not None else str(config or KIMI_K3_1_PRO.name),
                   config if weights is not None else None)  # fmt: skip
    req = _request(model.spec, gpu, hbm_gb, gpus_per_node, nodes, context, concurrency, kv_dtype, gpu_util)
    plan = make_plan(req)
    if as_json:
        typer.echo(json.dumps(plan_json(plan), indent=1))
    else:
        print_plan(plan)
    raise typer.Exit(0 if plan.verdict in ("fits", "fits-fewer") else 3)


@engine_app.command("serve")
def serve_command(
    weights: Annotated[
        str,
        typer.Argument(
            help="Folder with config.json, the tokenizer and the shards; with --dry-run also a config.json or a "
            "model id (kimi-k3.1-pro, or any id with --config).",
            metavar="WEIGHTS",
        ),
    ],
    config: Annotated[
        Path | None, typer.Option("--config", help="The model's config.json, if not in WEIGHTS.", metavar="PATH")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Served model name (default: the model's).", metavar="NAME")
    ] = None,
    gpu: GpuOpt = "b200",
    hbm_gb: HbmOpt = None,
    gpus_per_node: PerNodeOpt = 8,
    nodes: NodesOpt = 1,
    context: ContextOpt = 1_048_576,
    kv_dtype: KvOpt = "bf16",
    gpu_util: UtilOpt = 0.92,
    host: Annotated[str, typer.Option("--host", metavar="HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="N")] = 8000,
    head_ip: Annotated[
        str, typer.Option("--head-ip", help="Multi-node: the Ray head's address.", metavar="IP")
    ] = "HEAD_IP",
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the server.", metavar="SECONDS")
    ] = 3600,
    vllm_bin: Annotated[str, typer.Option("--vllm-bin", help="The vllm executable.", metavar="PATH")] = "vllm",
    force: Annotated[bool, typer.Option("--force", help="Launch even if the plan says it will not fit.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the command and stop.")] = False,
    trust_remote_code: Annotated[
        bool, typer.Option("--trust-remote-code", help="Run code shipped with the weights (only if you trust them).")
    ] = False,
    spec_tokens: Annotated[
        int,
        typer.Option(
            "--spec-tokens", help="MTP speculative tokens when the checkpoint has MTP heads; 0: off.", metavar="N"
        ),
    ] = 1,
) -> None:
    """Validate the weights, plan, launch `vllm serve`, wait until it answers, and supervise it."""
    from kimi_cli.engine.plan import make_plan
    from kimi_cli.engine.vllm_args import ServeOptions, ray_steps, vllm_argv
    from kimi_cli.engine.weights import validate_weights
    from kimi_cli.errors import KimiError

    model = _model(weights, config)
    spec, family = model.spec, model.family
    if model.folder is None or not model.folder.is_dir():
        if not dry_run:  # nothing is ever downloaded: vLLM would fetch the whole checkpoint itself
            _fail(f"{weights} is not a weights folder: serve launches only weights on disk (download them to a "
                  "folder first; --dry-run previews the command)", 2)  # fmt: skip
        shards: list[str] = []
    else:
        try:
            shards = validate_weights(model.folder)
        except KimiError as exc:
            if not dry_run:
                _fail(str(exc), int(exc.exit_code))
            typer.echo(f"dry run: {exc}", err=True)  # a preview before the download: the plan still holds
            shards = []
    remote = trust_remote_code or family.needs_remote_code
    typer.echo(
        f"model family {family.name}: parsers {'/'.join(family.parsers) if family.parsers else 'none'}; "
        f"{family.why}" + ("; running code from the weights (--trust-remote-code)" if remote else "")
    )
    if trust_remote_code and not family.needs_remote_code:
        typer.echo("warning: --trust-remote-code runs code from the weights folder, which vLLM does not need here",
                   err=True)  # fmt: skip
    plan = make_plan(_request(spec, gpu, hbm_gb, gpus_per_node, nodes, context, 1, kv_dtype, gpu_util))
    found = f"{len(shards)} shards found; " if shards else ""
    typer.echo(
        f"{found}weights {plan.weights_total / 1e9:,.1f} GB ({model.weights_how}); plan: {plan.verdict} "
        f"({plan.sequences} sequence(s) of {plan.request.context:,} tokens)"
    )
    if plan.verdict == "weights-do-not-fit" and not force:
        _fail("the plan says the weights do not fit: " + "; ".join(plan.suggestions or ["see kimi engine plan"]), 2)
    _warn_open_host(host, port)
    opts = ServeOptions(
        weights=model.folder.resolve() if model.folder is not None and model.folder.is_dir() else model.target,
        served_name=name or spec.name,
        tensor_parallel=gpus_per_node,
        pipeline_parallel=nodes,
        expert_parallel=spec.routed_experts > 0,
        max_model_len=plan.request.context,
        gpu_memory_utilization=gpu_util,
        host=host,
        port=port,
        kv_dtype="fp8" if kv_dtype == "fp8" else "auto",
        parsers=family.parsers,  # Kimi's parsers need Kimi's special tokens: other models go without
        ray=nodes > 1,
        trust_remote_code=remote,
        spec_tokens=spec_tokens if family.mtp_layers > 0 else 0,
    )
    argv = vllm_argv(opts, vllm_bin)
    if nodes > 1:
        typer.echo("multi-node: before serving, on each node:")
        for step in ray_steps(head_ip, nodes):
            typer.echo(f"  {step}")
    typer.echo("$ " + shlex.join(argv))  # quoted: the line pastes into a shell as it is (JSON options too)
    if dry_run:
        return
    raise typer.Exit(_supervise(argv, host, port, opts.served_name, timeout))


def _warn_open_host(host: str, port: int) -> None:
    """A server that listens beyond this machine without a key serves anyone who reaches the port."""
    import os

    from kimi_cli.engine.supervisor import is_loopback
    from kimi_cli.hostsafe.secrets import named

    if is_loopback(host) or os.environ.get("VLLM_API_KEY"):
        return
    typer.echo(
        f"warning: --host {host} listens beyond this machine and no API key is set: anyone who reaches port "
        f"{port} can use the model. Set VLLM_API_KEY before serving (vLLM then requires it on /v1; "
        f"`kimi --provider local` sends {named('local')}, so give it the same value)",
        err=True,
    )


def _supervise(argv: list[str], host: str, port: int, served_name: str, timeout: float) -> int:
    from rich.console import Console

    from kimi_cli.engine.supervisor import EngineError, EngineSupervisor

    console = Console(stderr=True)
    sup = EngineSupervisor(argv, host, port, served_name)
    stopping = {"now": False}

    def on_signal(signum: int, _frame: object) -> None:
        stopping["now"] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        sup.start()
        with console.status("starting") as status:
            served = sup.wait_ready(timeout, lambda stage, t: status.update(f"{stage} · {t:.0f} s"))
        typer.echo(f"ready at {served.base_url} (model {served.model}); logs: {served.log}")
        typer.echo("use it with: kimi --provider local   (Ctrl-C or kimi engine stop to end)")
        assert sup.proc is not None
        code = sup.proc.wait()
        typer.echo(f"the server exited with code {code}:\n{sup.log_tail()}", err=True)
        return 1
    except EngineError as exc:
        typer.echo(f"kimi engine: {exc}", err=True)
        return 1
    except KeyboardInterrupt:
        typer.echo("stopping the engine…", err=True)
        sup.stop()
        return 0


@engine_app.command("status")
def status_command(
    url: Annotated[
        str | None, typer.Option("--url", help="Engine URL (default: the one serve recorded).", metavar="URL")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Health, served models, running and waiting requests, KV-cache use and prefix-cache hit rate."""
    from kimi_cli.engine.status import engine_status
    from kimi_cli.util.sanitize import visible  # model ids and errors are the server's text

    status = engine_status(url or _served_url(), _local_key())
    if as_json:
        typer.echo(json.dumps(status.as_dict(), indent=1))
        raise typer.Exit(0 if status.healthy else 1)
    if status.state == "nothing-listening":
        recorded = "" if url else " (the URL `kimi engine serve` last recorded, or the default)"
        typer.echo(f"nothing is listening on {status.url}{recorded}: start it with `kimi engine serve WEIGHTS`, "
                   "or give the engine's address with --url")  # fmt: skip
        raise typer.Exit(1)
    if status.state == "unreachable":
        typer.echo(visible(f"{status.url} did not answer: {status.detail}", one_line=True))
        raise typer.Exit(1)

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v:.1f}%"

    if status.healthy:
        typer.echo(f"{status.url}: healthy")
    else:
        typer.echo(f"{status.url}: answers, but /health says {status.detail}: still loading the weights? "
                   "its log is in ~/.kimi/engine/")  # fmt: skip
    typer.echo(visible(f"models: {', '.join(status.models) or '—'}", one_line=True))
    typer.echo(
        f"requests running {status.running if status.running is not None else '—'}, waiting "
        f"{status.waiting if status.waiting is not None else '—'}"
    )
    typer.echo(f"KV cache used {pct(status.kv_cache_usage)}, prefix-cache hit rate {pct(status.prefix_cache_hit_rate)}")
    raise typer.Exit(0 if status.healthy else 1)


def _local_key() -> str | None:
    """The key for an engine's /v1: the one vLLM was started with, else the local provider's."""
    import os

    from kimi_cli.engine.supervisor import engine_key
    from kimi_cli.hostsafe.secrets import key_variables

    return engine_key() or next((os.environ[v] for v in key_variables("local") if os.environ.get(v)), None)


@engine_app.command("stop")
def stop_command() -> None:
    """Stop the engine that `kimi engine serve` started."""
    from kimi_cli.engine.supervisor import engine_dir, stop_group

    served = engine_dir() / "served.json"
    if not served.is_file():
        _fail("no engine is recorded as running", 1)
    data = json.loads(served.read_text())
    stopped = stop_group(int(data["pid"]))
    served.unlink(missing_ok=True)
    typer.echo("stopped" if stopped else "it was not running any more")


@engine_app.command("bench")
def bench_command(
    url: Annotated[str | None, typer.Option("--url", help="Any OpenAI-compatible base URL.", metavar="URL")] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model (default: the first one served).", metavar="NAME")
    ] = None,
    context: Annotated[str, typer.Option("--context", help="Prompt sizes, e.g. 1k,32k,128k.", metavar="N")] = "1k,32k",
    concurrency: Annotated[
        str, typer.Option("--concurrency", help="Parallel requests, e.g. 1,8.", metavar="N")
    ] = "1,8",
    requests: Annotated[int, typer.Option("--requests", help="Requests per row (median over them).", metavar="N")] = 4,
    max_tokens: Annotated[int, typer.Option("--max-tokens", metavar="N")] = 128,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the rows as JSON here.")] = None,
) -> None:
    """Time to first token, decode tokens/s and prefix-cache reuse, as medians, per context and concurrency."""
    import asyncio

    from kimi_cli.engine.bench import parse_size, run_bench
    from kimi_cli.engine.supervisor import get_json

    base = (url or _served_url()).rstrip("/")
    key = _local_key() or "EMPTY"
    if model is None:
        listed = get_json(f"{base}/models", key=key)
        data = listed.get("data", []) if isinstance(listed, dict) else []
        ids = [m.get("id") for m in data if isinstance(m, dict)]
        if not ids:
            _fail(f"{base}/models lists no model; pass --model", 1)
        model = str(ids[0])
    try:
        contexts = [parse_size(c) for c in context.split(",")]
        levels = [int(c) for c in concurrency.split(",")]
    except ValueError:
        _fail("--context and --concurrency take comma-separated numbers (1k, 32k, 1m)", 2)
    started = time.perf_counter()
    try:
        rows = asyncio.run(run_bench(base, model, contexts, levels, requests, max_tokens, key))
    except Exception as exc:
        _fail(f"bench against {base} failed: {type(exc).__name__}: {exc}", 5)
    from rich.console import Console
    from rich.table import Table

    from kimi_cli.util.sanitize import visible_text  # the model id may be the server's text: never markup or escapes

    table = Table(title=visible_text(f"{model} at {base} ({time.perf_counter() - started:.1f} s)", one_line=True))
    for col in ("context", "concurrency", "requests", "TTFT (median)", "decode tok/s (median)", "prefix cache hit"):
        table.add_column(col, justify="right")
    for r in rows:
        hit = "—" if r["prefix_cache_hit_rate"] is None else f"{100 * r['prefix_cache_hit_rate']:.0f}%"
        table.add_row(
            f"{r['context']:,}",
            str(r["concurrency"]),
            str(r["requests"]),
            f"{r['ttft_s'] * 1000:.0f} ms",
            f"{r['decode_tokens_per_s']:.1f}",
            hit,
        )
    Console().print(table)
    if json_out is not None:
        json_out.write_text(json.dumps(rows, indent=1))
    sys.stdout.flush()


def _served_url() -> str:
    from kimi_cli.engine.supervisor import engine_dir

    try:
        return str(json.loads((engine_dir() / "served.json").read_text())["base_url"])
    except (OSError, ValueError, KeyError):
        return "http://127.0.0.1:8000/v1"
