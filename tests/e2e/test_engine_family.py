"""Knowing the model family from config.json: K3 gets the kimi_k3 parsers, native code, MTP and its real plan."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kimi_cli.engine.family import detect_family
from kimi_cli.engine.spec import spec_from_config
from kimi_cli.engine.vllm_args import ServeOptions, vllm_argv

from support import require, run_kimi


def require_vllm() -> None:
    import importlib.util

    found = importlib.util.find_spec("vllm") is not None
    require("vllm", found, "the `engine` extra (pip install -e '.[engine]'), 9 GB; .ci/run lists it in KIMI_CI_WITHOUT")


K3_CONFIG = {
    "architectures": ["KimiK3ForConditionalGeneration"],
    "model_type": "kimi_k3",
    "text_config": {
        "model_type": "kimi_linear",
        "num_hidden_layers": 8,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "vocab_size": 1000,
        "intermediate_size": 512,
        "moe_intermediate_size": 64,
        "num_experts": 16,
        "num_experts_per_token": 4,
        "num_shared_experts": 1,
        "first_k_dense_replace": 1,
        "kv_lora_rank": 64,
        "qk_rope_head_dim": 16,
        "max_position_embeddings": 131072,
        "num_nextn_predict_layers": 1,
        "linear_attn_config": {"num_heads": 4, "head_dim": 32, "kda_layers": [0, 1, 2, 4, 5, 6],
                               "full_attn_layers": [3, 7]},
    },
    "vision_config": {"hidden_size": 128},
    "quantization_config": {"format": "mxfp4-pack-quantized"},
}  # fmt: skip


def test_a_k3_config_is_kimi_k3_native_with_mtp() -> None:
    family = detect_family(K3_CONFIG)
    assert family.name == "kimi_k3" and family.parsers == ("kimi_k3", "kimi_k3")
    assert not family.needs_remote_code and family.mtp_layers == 1


@pytest.mark.parametrize(
    ("config", "name", "parsers", "remote"),
    [
        ({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2"}, "kimi_k2", ("kimi_k2", "kimi_k2"),
         False),
        ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "other", None, False),
        ({"architectures": ["MyOwnForCausalLM"], "model_type": "mine"}, "other", None, True),
        ({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
          "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}}, "kimi_k2", ("kimi_k2", "kimi_k2"),
         True),
    ],
)  # fmt: skip
def test_other_families(config: dict, name: str, parsers: tuple | None, remote: bool) -> None:
    family = detect_family(config)
    assert (family.name, family.parsers, family.needs_remote_code) == (name, parsers, remote)


def test_the_planner_reads_the_k3_layout_from_the_nested_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(K3_CONFIG))
    spec = spec_from_config(tmp_path / "config.json")
    assert (spec.layers, spec.linear_attention_layers, spec.full_attention_layers) == (8, 6, 2)
    assert (spec.routed_experts, spec.active_experts, spec.shared_experts, spec.dense_layers) == (16, 4, 1, 1)
    assert (spec.kv_latent_dim, spec.rope_dim, spec.max_context, spec.mtp_layers) == (64, 16, 131072, 1)
    assert spec.linear_heads == 4 and spec.linear_head_dim == 32 and spec.weight_bits == 4.25


def test_serve_dry_run_on_k3_weights_builds_the_native_command(tmp_path: Path, repo: Path, env: dict) -> None:
    weights = tmp_path / "k3"
    weights.mkdir()
    (weights / "config.json").write_text(json.dumps(K3_CONFIG))
    (weights / "tiktoken.model").write_text("x")
    (weights / "model-00001.safetensors").write_bytes(b"\\0")
    proc = run_kimi(["engine", "serve", str(weights), "--gpu", "h200", "--gpus-per-node", "1", "--dry-run",
                     "--force", "--spec-tokens", "2"], repo, env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    command = next(line for line in proc.stdout.splitlines() if line.startswith("$ "))
    argv = shlex.split(command[2:])  # the printed line, read back as a shell reads a pasted line
    assert argv[:3] == [argv[0], "serve", str(weights)] and argv[0].endswith("vllm")
    options = " ".join(argv[3:])
    assert "--tool-call-parser kimi_k3 --reasoning-parser kimi_k3" in options
    assert "--trust-remote-code" not in argv and "--enable-expert-parallel" in argv
    assert argv[argv.index("--max-model-len") + 1] == "131072"
    spec = argv[argv.index("--speculative-config") + 1]
    assert json.loads(spec) == {"method": "mtp", "num_speculative_tokens": 2}


def test_vllm_0_33_own_parser_accepts_our_argv() -> None:
    require_vllm()
    from vllm.platforms import current_platform

    current_platform.device_type = "cpu"  # vLLM's parser needs a device type; this machine has no GPU
    from vllm.entrypoints.common.cli_args import make_arg_parser  # moved here in 0.33
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    opts = ServeOptions(Path("/w"), "m", 8, spec_tokens=1)
    args = parser.parse_args(["/w", *vllm_argv(opts)[3:]])
    assert args.tensor_parallel_size == 8 and args.tool_call_parser == "kimi_k3"


def test_vllm_0_33_kimi_k3_parser_turns_a_k3_completion_into_our_tool_call() -> None:
    require_vllm()
    from vllm.tool_parsers.kimi_k3_tool_parser import KimiK3ToolParser

    class ThreeTokens:
        """All the parser asks of a tokenizer: K3's XTML special tokens."""

        def get_vocab(self) -> dict[str, int]:
            return {"<|open|>": 1, "<|close|>": 2, "<|sep|>": 3}

    completion = (
        "I will fix the sign.<|open|>tools<|sep|>"
        '<|open|>call tool="StrReplaceFile" index="1"<|sep|>'
        '<|open|>argument key="path" type="string"<|sep|>calc.py<|close|>argument<|sep|>'
        '<|open|>argument key="edit" type="object"<|sep|>{"old": "a - b", "new": "a + b"}<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    )
    info = KimiK3ToolParser(ThreeTokens()).extract_tool_calls(completion, None)  # type: ignore[arg-type]
    assert info.tools_called and info.content == "I will fix the sign."
    (call,) = info.tool_calls
    assert call.function.name == "StrReplaceFile"
    assert json.loads(call.function.arguments) == {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}


vllm_test = pytest.mark.engine
test_vllm_0_33_own_parser_accepts_our_argv = vllm_test(test_vllm_0_33_own_parser_accepts_our_argv)
test_vllm_0_33_kimi_k3_parser_turns_a_k3_completion_into_our_tool_call = vllm_test(
    test_vllm_0_33_kimi_k3_parser_turns_a_k3_completion_into_our_tool_call
)


def test_no_thinking_asks_a_local_engine_to_skip_thinking(repo: Path, env: dict) -> None:
    from scripted_server import ScriptedModelServer

    with ScriptedModelServer([{"text": "ok"}, {"text": "ok"}]) as server:
        env = {**env, "KIMI_PROVIDER": "local", "KIMI_BASE_URL": server.base_url}
        assert run_kimi(["-p", "hi", "--no-thinking", "--no-pack"], repo, env).returncode == 0
        assert run_kimi(["-p", "hi", "--no-pack"], repo, env).returncode == 0
    assert server.requests[0]["chat_template_kwargs"] == {"thinking": False}
    assert "chat_template_kwargs" not in server.requests[1]
