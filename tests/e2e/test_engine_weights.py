"""`plan` and `serve` read a model one way: the checkpoint's own size when its files are there, the config's
estimate otherwise; `serve --dry-run` previews without shards; the README's steps and the plan's hints fit;
a public host without a key is warned about; `status` says when nothing is listening."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kimi_cli.engine.model import resolve_model
from kimi_cli.engine.spec import KIMI_K3_1_PRO, spec_from_config
from kimi_cli.engine.weights import checkpoint_size

from support import ROOT_DIR, TESTS_DIR, free_port, kimi_executable, run_kimi

FAKE = str(TESTS_DIR / "fake_vllm.py")
KDA = [i for i in range(93) if (i + 1) % 4 != 0][:69]

# A config.json written from the seed's figures (DESIGN.md, "Facts about the model"): 93 layers, 69 KDA + 24
# DSA, hidden 7168, 96 heads, 896 routed experts (16 active, 2 shared), expert hidden 3072 in a latent MoE
# of 3584, 1M context, MXFP4. Counted at the hidden size, its experts made 5.48T parameters (2.9 TB).
SEED_CONFIG = {
    "architectures": ["KimiK3ForConditionalGeneration"],
    "model_type": "kimi_k3",
    "text_config": {
        "model_type": "kimi_linear", "num_hidden_layers": 93, "hidden_size": 7168, "num_attention_heads": 96,
        "vocab_size": 163_840, "intermediate_size": 18_432, "moe_intermediate_size": 3072, "moe_latent_size": 3584,
        "num_experts": 896, "num_experts_per_token": 16, "num_shared_experts": 2, "first_k_dense_replace": 1,
        "kv_lora_rank": 512, "qk_rope_head_dim": 64, "max_position_embeddings": 1_048_576,
        "index_n_heads": 32, "index_head_dim": 128, "index_topk": 2048,
        "linear_attn_config": {"num_heads": 96, "head_dim": 128, "kda_layers": KDA,
                               "full_attn_layers": [i for i in range(93) if i not in KDA]},
    },
    "quantization_config": {"format": "mxfp4-pack-quantized"},
}  # fmt: skip


def seed_folder(folder: Path, shards: int = 0, present: int | None = None, total: float = 1.4e12) -> Path:
    """The seed's config, a tokenizer and `shards` sparse shard files summing to `total` bytes (none written
    to disk: truncate makes holes); `present` of them exist, the index names them all."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(SEED_CONFIG))
    (folder / "tiktoken.model").write_text("x")
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    if shards:
        index = {"metadata": {"total_size": int(total)}, "weight_map": {f"w{i}": n for i, n in enumerate(names)}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    for name in names[: shards if present is None else present]:
        with open(folder / name, "wb") as fh:
            fh.truncate(int(total) // shards)
    return folder


def plan_json(args: list[str], env: dict | None = None) -> dict:
    """`kimi engine plan ARGS --json`: a whole process when `env` is given, else the same app in process."""
    if env is not None:
        proc = run_kimi(["engine", "plan", *args, "--json"], Path.cwd(), env)
        assert proc.returncode in (0, 3), proc.stderr
        return json.loads(proc.stdout)
    from typer.testing import CliRunner

    from kimi_cli.engine.cli import engine_app

    result = CliRunner().invoke(engine_app, ["plan", *args, "--json"])
    assert result.exit_code in (0, 3), result.output
    return json.loads(result.stdout)


def dry_run(target: str, args: list[str], env: dict) -> subprocess.CompletedProcess[str]:
    return run_kimi(["engine", "serve", target, *args, "--dry-run"], Path.cwd(), env)


def served_gb(proc: subprocess.CompletedProcess[str]) -> float:
    match = re.search(r"weights ([\d,.]+) GB \(", proc.stdout)
    assert match, proc.stdout
    return float(match.group(1).replace(",", ""))


def test_the_seed_config_counts_its_experts_at_the_latent_size(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(SEED_CONFIG))
    spec = spec_from_config(tmp_path / "config.json")
    assert spec.total_params == pytest.approx(KIMI_K3_1_PRO.total_params, rel=0.03)  # was 5.48T
    assert spec.estimated_weight_bytes() == pytest.approx(1.49e12, rel=0.03)  # was 2.9 TB
    assert (spec.linear_attention_layers, spec.full_attention_layers, spec.latent_moe_dim) == (69, 24, 3584)


def test_the_size_comes_from_the_shards_then_the_index_then_the_config(tmp_path: Path) -> None:
    full = checkpoint_size(seed_folder(tmp_path / "full", shards=4, total=1.4e12))
    assert full is not None and (full.total, full.shards) == (1_400_000_000_000, 4) and "shard files" in full.how
    partial = checkpoint_size(seed_folder(tmp_path / "partial", shards=4, present=1, total=1.3e12))
    assert partial is not None and partial.total == 1_300_000_000_000 and "total_size" in partial.how
    assert checkpoint_size(seed_folder(tmp_path / "none")) is None
    estimated = resolve_model(str(tmp_path / "none")).spec
    assert estimated.checkpoint_bytes is None and estimated.weight_bytes() == pytest.approx(1.49e12, rel=0.03)


@pytest.mark.parametrize("shards", [4, 0], ids=["shards on disk", "config only"])
def test_plan_and_serve_dry_run_agree_on_two_h200_nodes(tmp_path: Path, env: dict, shards: int) -> None:
    weights = seed_folder(tmp_path / "k3", shards=shards)
    hardware = ["--gpu", "h200", "--nodes", "2"]
    plan = plan_json(["--weights", str(weights), *hardware], env)
    assert plan["verdict"] == "fits", plan
    serve = dry_run(str(weights), hardware, env)
    assert serve.returncode == 0, serve.stderr  # the old serve: "do not fit: --nodes 4", exit 2
    assert served_gb(serve) == pytest.approx(plan["weights_total_bytes"] / 1e9, abs=0.05)
    assert f"plan: {plan['verdict']} ({plan['sequences']} sequence(s)" in serve.stdout
    if shards:
        assert plan["weights_total_bytes"] == 1.4e12 and "4 shard files" in serve.stdout
    else:
        assert "estimated from the config" in serve.stdout and "dry run:" in serve.stderr
    command = shlex.split(next(line for line in serve.stdout.splitlines() if line.startswith("$ "))[2:])
    assert command[1:3] == ["serve", str(weights.resolve())]
    assert command[command.index("--pipeline-parallel-size") + 1] == "2"


def test_serve_dry_run_from_a_model_id_or_a_config_alone(tmp_path: Path, env: dict) -> None:
    by_id = dry_run("moonshotai/Kimi-K3.1-Pro", ["--gpu", "b300"], env)
    assert by_id.returncode == 0, by_id.stderr
    assert "$ vllm serve moonshotai/Kimi-K3.1-Pro --served-model-name kimi-k3.1-pro" in by_id.stdout
    assert served_gb(by_id) == plan_json(["--gpu", "b300"], env)["weights_total_bytes"] / 1e9
    config = tmp_path / "cfg" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(SEED_CONFIG))
    alone = dry_run(str(config), ["--gpu", "h200", "--nodes", "2"], env)
    assert alone.returncode == 0, alone.stderr
    assert f"$ vllm serve {config.parent.resolve()} " in alone.stdout
    other = dry_run("someone/other-model", ["--config", str(config), "--gpu", "h200", "--nodes", "2"], env)
    assert other.returncode == 0 and "--served-model-name someone/other-model" in other.stdout
    unknown = dry_run("someone/other-model", [], env)
    assert unknown.returncode == 2 and "--config PATH" in unknown.stderr


def test_serve_without_dry_run_launches_only_weights_on_disk(tmp_path: Path, env: dict) -> None:
    for target in ("kimi-k3.1-pro", str(seed_folder(tmp_path / "k3", shards=4, present=3))):
        proc = run_kimi(["engine", "serve", target, "--gpu", "h200", "--nodes", "2", "--vllm-bin", FAKE],
                        Path.cwd(), env)  # fmt: skip
        assert proc.returncode == 2, proc.stdout
        assert "only weights on disk" in proc.stderr or "shards named in the index are missing" in proc.stderr


def flags_of(tip: str) -> list[str]:
    return shlex.split(tip.split(":", 1)[0])


@pytest.mark.parametrize(
    "asked",
    [["--gpu", "b200"], ["--gpu", "h200"], ["--gpu", "h200", "--nodes", "2", "--concurrency", "8"],
     ["--hbm-gb", "100", "--nodes", "2"], ["--gpu", "b200", "--gpu-util", "0.80", "--context", "131072"],
     ["--gpu", "h200", "--nodes", "2", "--gpu-util", "0.70"]],
)  # fmt: skip
def test_every_hint_fits_when_pasted(asked: list[str]) -> None:
    plan = plan_json(asked)
    assert plan["verdict"] != "fits" and plan["suggestions"]
    for tip in plan["suggestions"]:
        again = plan_json([*asked, *flags_of(tip)])
        claimed = re.search(r"(\d+) sequence|one sequence", tip)
        assert claimed, tip
        wanted = 1 if claimed.group(0) == "one sequence" else int(claimed.group(1))
        assert again["verdict"] in ("fits", "fits-fewer") and again["sequences"] == wanted, (tip, again)


def test_one_b200_node_names_every_option_that_fits() -> None:
    tips = plan_json(["--gpu", "b200"])["suggestions"]
    assert [flags_of(t)[0] for t in tips] == ["--nodes", "--gpu", "--hbm-gb"]
    util = plan_json(["--gpu", "h200", "--nodes", "2", "--gpu-util", "0.70"])["suggestions"]
    assert any(t.startswith("--gpu-util 0.77:") for t in util), util  # utilisation alone fits here


def readme_commands() -> list[str]:
    text = (ROOT_DIR / "engine" / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()
            if line.startswith(("kimi engine plan", "kimi engine serve")) and "..." not in line]  # fmt: skip


def test_the_readme_steps_work(env: dict) -> None:
    """Every plan the README's steps run fits, and each serve previews (its weights are not here)."""
    commands = readme_commands()
    assert len(commands) >= 5
    for command in commands:
        argv = shlex.split(command)[1:]
        if argv[1] == "serve":
            argv.append("--dry-run")
        elif "--weights" in argv:
            argv[argv.index("--weights") : argv.index("--weights") + 2] = []  # the seed's own size stands in
        proc = run_kimi(argv, Path.cwd(), {**env, "VLLM_API_KEY": "k"})
        assert proc.returncode == 0, (command, proc.stdout[-600:], proc.stderr)
        if argv[1] == "plan":
            assert "verdict: FITS" in proc.stdout, command


def test_a_public_host_without_a_key_is_warned_about(env: dict) -> None:
    args = ["--gpu", "b300", "--host", "0.0.0.0"]
    open_ = dry_run("kimi-k3.1-pro", args, env)
    assert open_.returncode == 0 and "warning: --host 0.0.0.0" in open_.stderr and "VLLM_API_KEY" in open_.stderr
    keyed = run_kimi(["engine", "serve", "kimi-k3.1-pro", *args, "--dry-run"], Path.cwd(),
                     {**env, "VLLM_API_KEY": "sk-engine-key-4242"})  # fmt: skip
    assert keyed.returncode == 0 and "warning" not in keyed.stderr
    assert "sk-engine-key-4242" not in keyed.stdout + keyed.stderr  # never on the command line
    for host in ("127.0.0.1", "localhost", "::1"):
        assert "warning" not in dry_run("kimi-k3.1-pro", ["--gpu", "b300", "--host", host], env).stderr


def test_serve_with_a_key_waits_for_the_keyed_models_endpoint(tmp_path: Path, env: dict) -> None:
    """vLLM with VLLM_API_KEY answers 401 on /v1 without it: serve must send it, or it never sees the model."""
    weights = tmp_path / "w"
    weights.mkdir()
    (weights / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 100}))
    (weights / "tokenizer.json").write_text("{}")
    (weights / "model.safetensors").write_bytes(b"\0")
    port = free_port()
    proc = subprocess.Popen(
        [*kimi_executable(), "engine", "serve", str(weights), "--vllm-bin", FAKE, "--port", str(port), "--gpu",
         "h100", "--gpus-per-node", "1", "--context", "2048", "--timeout", "20", "--name", "tiny", "--host",
         "0.0.0.0"],
        env={**env, "VLLM_API_KEY": "sk-engine-key", "FAKE_VLLM_DELAY": "0.3"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        deadline, lines = time.monotonic() + 30, []
        while time.monotonic() < deadline and not any("ready at" in line for line in lines):
            lines.append(proc.stdout.readline())
        assert any("ready at" in line for line in lines), lines
        status = run_kimi(["engine", "status", "--url", f"http://127.0.0.1:{port}", "--json"], Path.cwd(),
                          {**env, "VLLM_API_KEY": "sk-engine-key"})  # fmt: skip
        assert status.returncode == 0 and json.loads(status.stdout)["models"] == ["tiny"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert "warning" not in err and "sk-engine-key" not in "".join(lines)


def test_status_says_nothing_is_listening(env: dict) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    proc = run_kimi(["engine", "status", "--url", url], Path.cwd(), env)
    assert proc.returncode == 1
    assert f"nothing is listening on {url}: start it with `kimi engine serve" in proc.stdout
    assert "NOT healthy" not in proc.stdout and "models:" not in proc.stdout
    data = json.loads(run_kimi(["engine", "status", "--url", url, "--json"], Path.cwd(), env).stdout)
    assert (data["healthy"], data["state"], data["detail"]) == (False, "nothing-listening", "connection refused")


def test_status_tells_a_loading_server_from_a_healthy_one(env: dict) -> None:
    port = free_port()
    fake = subprocess.Popen(["python3", FAKE, "--port", str(port)], env={**env, "FAKE_VLLM_MODE": "never"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        from support import wait_until

        wait_until(lambda: "HTTP 503" in run_kimi(["engine", "status", "--url", url], Path.cwd(), env).stdout,
                   timeout=20, what="the fake engine to answer 503")  # fmt: skip
        proc = run_kimi(["engine", "status", "--url", url], Path.cwd(), env)
        assert proc.returncode == 1 and "answers, but /health says HTTP 503: still loading" in proc.stdout
    finally:
        fake.send_signal(signal.SIGTERM)
        fake.wait(timeout=10)
