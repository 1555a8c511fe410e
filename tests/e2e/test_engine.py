"""The local engine: planner figures and verdicts, the vllm argv, weights checks, supervision, status, bench."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kimi_cli.engine.plan import GPU_HBM_GB, PlanRequest, make_plan
from kimi_cli.engine.spec import KIMI_K3_1_PRO, spec_from_config
from kimi_cli.engine.status import parse_metrics
from kimi_cli.engine.vllm_args import ServeOptions, vllm_argv
from kimi_cli.engine.weights import validate_weights
from kimi_cli.errors import ConfigError

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, free_port, run_kimi, wait_until


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


FAKE = str(TESTS_DIR / "fake_vllm.py")


def plan(gpu: str, nodes: int = 1, **kw: object):  # type: ignore[no-untyped-def]
    return make_plan(PlanRequest(KIMI_K3_1_PRO, GPU_HBM_GB[gpu], nodes=nodes, gpu_name=gpu, **kw))  # type: ignore[arg-type]


def test_known_answers_bf16_and_mxfp4_sizes() -> None:
    assert KIMI_K3_1_PRO.estimated_weight_bytes(16) == pytest.approx(5.6e12, rel=0.01)
    assert KIMI_K3_1_PRO.weight_bytes() == pytest.approx(1.4e12, rel=0.01)
    assert KIMI_K3_1_PRO.estimated_weight_bytes() == pytest.approx(1.4e12, rel=0.10)


def test_one_8xh200_node_does_not_hold_the_weights() -> None:
    p = plan("h200")
    assert p.verdict == "weights-do-not-fit"
    assert p.weights_per_gpu > 141e9
    assert any("--nodes 2" in tip for tip in p.suggestions)


def test_two_8xh200_nodes_fit_a_full_context_sequence() -> None:
    p = plan("h200", nodes=2)
    assert p.verdict == "fits" and p.sequences >= 1 and p.pipeline_parallel == 2


def test_fits_fewer_suggests_more_nodes_and_fp8() -> None:
    p = plan("h200", nodes=2, concurrency=8)
    assert p.verdict == "fits-fewer"
    assert any(t.startswith("--nodes") for t in p.suggestions) and any("fp8" in t for t in p.suggestions)
    assert plan("h200", nodes=2, kv_dtype="fp8").sequences > p.sequences


def test_context_too_long_says_what_context_fits() -> None:
    p = make_plan(PlanRequest(KIMI_K3_1_PRO, 100.0, nodes=2, gpu_name="custom"))
    assert p.verdict == "context-too-long"
    assert 0 < p.max_context_one_sequence < 1_048_576
    assert any(t.startswith("--context") for t in p.suggestions)


def test_spec_from_a_small_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "num_attention_heads": 4,
                "intermediate_size": 128,
                "vocab_size": 1000,
                "max_position_embeddings": 2048,
            }
        )
    )
    spec = spec_from_config(cfg)
    assert spec.layers == 2 and spec.max_context == 2048 and spec.weight_bits == 16
    assert spec.total_params == 2 * (4 * 64 * 64 + 3 * 64 * 128) + 2 * 1000 * 64
    p = make_plan(PlanRequest(spec, 80.0, gpus_per_node=1, context=2048))
    assert p.verdict == "fits"


def test_vllm_argv_is_exact() -> None:
    opts = ServeOptions(Path("/w"), "kimi-k3.1-pro", 8, 2, True, 1_048_576, 0.92, "0.0.0.0", 8000, "fp8",
                        ("kimi_k3", "kimi_k3"), True, spec_tokens=2)  # fmt: skip
    assert vllm_argv(opts) == [
        "vllm", "serve", "/w", "--served-model-name", "kimi-k3.1-pro", "--host", "0.0.0.0", "--port", "8000",
        "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--enable-expert-parallel",
        "--max-model-len", "1048576", "--gpu-memory-utilization", "0.92", "--kv-cache-dtype", "fp8",
        "--enable-auto-tool-choice", "--tool-call-parser", "kimi_k3", "--reasoning-parser", "kimi_k3",
        "--speculative-config", '{"method":"mtp","num_speculative_tokens":2}',
        "--distributed-executor-backend", "ray",
    ]  # fmt: skip


def test_remote_code_is_only_passed_when_asked_for() -> None:
    plain = vllm_argv(ServeOptions(Path("/w"), "m", 8, parsers=None))
    assert "--trust-remote-code" not in plain and "--tool-call-parser" not in plain
    assert "--trust-remote-code" in vllm_argv(ServeOptions(Path("/w"), "m", 8, trust_remote_code=True))


def make_weights(folder: Path, shards: int = 2, missing: int = 0) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100})
    )
    (folder / "tokenizer.json").write_text("{}")
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {f"w{i}": n for i, n in enumerate(names)}})
    )
    for name in names[missing:]:
        (folder / name).write_bytes(b"\0")
    return folder


def test_weights_check_names_what_is_missing(tmp_path: Path) -> None:
    assert len(validate_weights(make_weights(tmp_path / "ok"))) == 2
    with pytest.raises(ConfigError, match="1 of 3 shards named in the index are missing: model-00001-of-00003"):
        validate_weights(make_weights(tmp_path / "partial", shards=3, missing=1))
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(ConfigError, match=r"config\.json is missing.*no tokenizer file"):
        validate_weights(bare)


def serve(weights: Path, env: dict, mode: str, port: int, timeout: float = 20, **extra: str) -> subprocess.Popen:
    full = {**env, "FAKE_VLLM_MODE": mode, **extra}
    return subprocess.Popen(
        [*kimi_cmd(), "engine", "serve", str(weights), "--vllm-bin", FAKE, "--port", str(port), "--gpu", "h100",
         "--gpus-per-node", "1", "--context", "2048", "--timeout", str(timeout), "--name", "tiny"],
        env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def kimi_cmd() -> list[str]:
    from support import kimi_executable

    return kimi_executable()


def test_serve_waits_for_late_health_then_stops_cleanly_on_sigterm(tmp_path: Path, env: dict, home: Path) -> None:
    port, pidfile = free_port(), tmp_path / "fake.pid"
    proc = serve(make_weights(tmp_path / "w"), env, "ok", port, FAKE_VLLM_DELAY="2", FAKE_VLLM_PIDFILE=str(pidfile))
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "ready at" in line:
            break
    assert any(f"ready at http://127.0.0.1:{port}/v1" in line for line in lines), lines
    served = json.loads((home / ".kimi" / "engine" / "served.json").read_text())
    assert served["model"] == "tiny" and served["base_url"].endswith(f":{port}/v1")
    fake_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    wait_until(lambda: not alive(fake_pid), what="the engine process to be gone")


@pytest.mark.parametrize(("mode", "diagnosis"), [("oom", "kimi engine plan"), ("port", "another --port")])
def test_serve_failure_prints_log_tail_and_diagnosis(tmp_path: Path, env: dict, mode: str, diagnosis: str) -> None:
    proc = serve(make_weights(tmp_path / "w"), env, mode, free_port())
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "last lines of" in err and diagnosis in err


def test_serve_gives_up_when_health_never_comes(tmp_path: Path, env: dict) -> None:
    pidfile = tmp_path / "fake.pid"
    proc = serve(make_weights(tmp_path / "w"), env, "never", free_port(), timeout=3, FAKE_VLLM_PIDFILE=str(pidfile))
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "within 3 s" in err
    wait_until(lambda: not alive(int(pidfile.read_text())), what="the engine process to be gone")


def test_serve_refuses_incomplete_weights(tmp_path: Path, env: dict) -> None:
    proc = serve(make_weights(tmp_path / "w", shards=2, missing=1), env, "ok", free_port())
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "shards named in the index are missing" in err


def test_parse_metrics_sums_label_sets() -> None:
    text = 'a{x="1"} 1\na{x="2"} 2.5\n# comment\nb 3\n'
    assert parse_metrics(text) == {"a": 3.5, "b": 3.0}


def test_status_reads_health_models_and_metrics(env: dict, server: ScriptedModelServer) -> None:
    proc = run_kimi(["engine", "status", "--url", server.base_url, "--json"], Path.cwd(), env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["healthy"] is True and data["models"] == ["kimi-test"]
    assert (data["running"], data["waiting"], data["kv_cache_usage"]) == (1.0, 2.0, 0.25)
    assert data["prefix_cache_hit_rate"] == 0.75


def test_bench_reports_ttft_decode_and_cache(tmp_path: Path, env: dict) -> None:
    answer = {
        "text": "x" * 400,
        "chunk_size": 4,
        "delay": 0.001,
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 500},
    }
    with ScriptedModelServer(default=answer) as srv:
        out = tmp_path / "bench.json"
        proc = run_kimi(
            [
                "engine",
                "bench",
                "--url",
                srv.base_url,
                "--context",
                "1k,4k",
                "--concurrency",
                "1,2",
                "--requests",
                "2",
                "--json",
                str(out),
            ],
            Path.cwd(),
            env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        rows = json.loads(out.read_text())
        assert [(r["context"], r["concurrency"]) for r in rows] == [(1000, 1), (1000, 2), (4000, 1), (4000, 2)]
        assert all(r["ttft_s"] > 0 and r["decode_tokens_per_s"] > 0 for r in rows)
        assert rows[0]["prefix_cache_hit_rate"] == 0.5
        assert "TTFT" in proc.stdout
        long_prompt = max(len(r["messages"][0]["content"]) for r in srv.requests)
        assert long_prompt > 10_000  # the 4k-token prompts were really sent


def test_local_provider_uses_what_serve_recorded(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    (home / ".kimi" / "engine").mkdir(parents=True)
    (home / ".kimi" / "engine" / "served.json").write_text(
        json.dumps({"base_url": server.base_url, "model": "tiny-served", "pid": 1, "log": ""})
    )
    server.add({"text": "from the local engine"})
    proc = run_kimi(["-p", "hi", "--provider", "local", "--no-pack"], repo, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "from the local engine"
    assert server.requests[0]["model"] == "tiny-served"


def test_plan_cli_prints_the_table_and_exit_code(env: dict) -> None:
    ok = run_kimi(["engine", "plan", "--gpu", "h200", "--nodes", "2"], Path.cwd(), env)
    assert ok.returncode == 0 and "verdict: FITS" in ok.stdout and "BF16 would be 5,600.0 GB" in ok.stdout
    bad = run_kimi(["engine", "plan", "--gpu", "h200", "--json"], Path.cwd(), env)
    assert bad.returncode == 3 and json.loads(bad.stdout)["verdict"] == "weights-do-not-fit"
    unknown = run_kimi(["engine", "plan", "--gpu", "tpu"], Path.cwd(), env)
    assert unknown.returncode == 2 and "--hbm-gb" in unknown.stderr
