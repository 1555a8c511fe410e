#!/usr/bin/env bash
# On a machine with one NVIDIA GPU and vllm installed: serve a small random-weight model through
# `kimi engine serve`, bench it, run a `kimi -p` task on it, print the figures. No download. < 8 minutes.
set -euo pipefail
out="${OUT:-$(mktemp -d)}"
work="$(mktemp -d)"
model="$work/tiny-llama"
port=8011
export HOME="$work/home" PYTHONUNBUFFERED=1
mkdir -p "$HOME"

python3 - "$model" <<'PY'
import json, sys
from pathlib import Path
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

folder = Path(sys.argv[1]); folder.mkdir(parents=True)
text = ["the quick brown fox jumps over the lazy dog " * 20, "def add(a, b): return a + b " * 20]
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel()
tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"]))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
fast.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] if m['content'] is string "
                      "else '' }}</s>{% endfor %}{% if add_generation_prompt %}<s>assistant:{% endif %}")
fast.save_pretrained(folder)
config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=8192)
torch.manual_seed(0)
LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
print("made", folder, sorted(p.name for p in folder.iterdir()))
PY

kimi engine plan --config "$model/config.json" --gpu h200 --gpus-per-node 1 --context 8192 | tee "$out/plan.txt"
kimi engine serve "$model" --name tiny --gpu h200 --gpus-per-node 1 --context 8192 --port "$port" \
  --gpu-util 0.5 --timeout 420 > "$out/serve.log" 2>&1 &
serve_pid=$!
trap 'kill -TERM $serve_pid 2>/dev/null; wait $serve_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 420); do grep -q "ready at" "$out/serve.log" && break; sleep 1; done
cat "$out/serve.log"
grep -q "ready at" "$out/serve.log" || { echo "engine did not come up"; exit 1; }

kimi engine status | tee "$out/status.txt"
kimi engine bench --context 1k,4k --concurrency 1,4 --requests 4 --max-tokens 64 --json "$out/bench.json" \
  | tee "$out/bench.txt"
mkdir -p "$work/repo" && cd "$work/repo" && git init -q && echo "print('hi')" > hi.py
kimi -p "Say hello." --provider local --no-pack --max-steps 2 --output-format json > "$out/task.json" || true
cat "$out/task.json"
# Kimi K3 step, for a machine that holds a K3 checkpoint (K3_WEIGHTS=/path): plan it from its own config.json
# and print the exact serve command (kimi_k3 parsers, no remote code, expert parallel, MTP when present).
if [ -n "${K3_WEIGHTS:-}" ] && [ -f "$K3_WEIGHTS/config.json" ]; then
  kimi engine plan --weights "$K3_WEIGHTS" --gpu "${K3_GPU:-h200}" --nodes "${K3_NODES:-2}" | tee "$out/k3-plan.txt" || true
  kimi engine serve "$K3_WEIGHTS" --gpu "${K3_GPU:-h200}" --nodes "${K3_NODES:-2}" --dry-run --force \
    | tee "$out/k3-serve.txt"
  grep -q -- "--tool-call-parser kimi_k3 --reasoning-parser kimi_k3" "$out/k3-serve.txt"
fi
echo "figures in $out"
