"""kimi's o200k token estimate against a real server's own count, per kind of text (issue 41).

Where a server cannot count for itself (Moonshot's API has no /tokenize), kimi estimates with the bundled
o200k tokenizer and adds the model table's `token_margin` (kimi_cli/llm/models.toml). This measures how far
the estimate runs from another model's tokenizer: llama.cpp's llama-server with SmolLM2-135M-Instruct (a
49k-token byte-level BPE, the model of the interop tests), asked through its own POST /tokenize.

Texts: code (kimi's own context package), prose (docs/*.md), pretty JSON (the headless result schema),
compact JSON (kimi's real tools block, from `kimi prompt --format json`, as a request carries it), and CJK
(a Chinese paragraph written for this benchmark). The count is deterministic: one run is the figure.

Usage: KIMI_LLAMA_SERVER=/path/to/llama-server python3 bench/token_margin.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from common import ROOT, kimi_bin, table

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# Written for this benchmark: a paragraph about code review, in the style of a Chinese project's docs.
CJK = (
    "代码审查是团队协作中最重要的环节之一。提交者应当先在本地运行全部测试，确认没有引入新的错误，"
    "再把改动推送到远程仓库。审查者阅读改动时，既要检查逻辑是否正确，也要关注命名是否清楚、注释是否说明了原因、"
    "错误处理是否完整。对于涉及安全的修改，例如权限检查、输入校验和沙箱配置，至少需要两位成员确认。"
    "如果改动较大，最好拆分成几个小的提交，每个提交只做一件事，并写明修改的目的。合并之前，"
    "持续集成必须全部通过；合并之后，发布说明里要记录用户能看到的变化。"
) * 6


def samples(work: Path) -> dict[str, str]:
    code = "\n".join(p.read_text() for p in sorted((ROOT / "kimi_cli" / "context").glob("*.py"))[:8])
    prose = "\n".join((ROOT / "docs" / name).read_text() for name in ("context.md", "models.md", "sandbox.md"))
    pretty = (ROOT / "kimi_cli" / "frontends" / "headless" / "headless.schema.json").read_text()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    prefix = subprocess.run(
        [kimi_bin(), "prompt", "--format", "json", "--no-pack"], cwd=work, capture_output=True, text=True,
        env={**os.environ, "KIMI_API_KEY": "bench-key-not-used", "HOME": str(work / "home")}, check=True,
    )  # fmt: skip
    tools = json.loads(prefix.stdout)["tools"]
    compact = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    return {"code": code, "prose": prose, "pretty JSON": pretty, "compact JSON (tools block)": compact, "CJK": CJK}


def main() -> None:
    from llama_relay import llama_server

    from kimi_cli.context.tokens import TokenCounter

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        texts = samples(work / "ws")
        counter = TokenCounter(cache_path=work / "tokens.sqlite", factor=1.0)
        rows = []
        with llama_server(512, threads=1) as llama:
            for kind, text in texts.items():
                body = json.dumps({"content": text, "add_special": False}).encode()
                request = urllib.request.Request(llama.base + "/tokenize", data=body,
                                                 headers={"content-type": "application/json"})  # fmt: skip
                with urllib.request.urlopen(request, timeout=60) as response:
                    server = len(json.loads(response.read())["tokens"])
                estimate = counter.raw(text)
                rows.append([kind, f"{len(text):,}", f"{estimate:,}", f"{server:,}", f"{server / estimate:.3f}x"])
    print(table(["text", "chars", "o200k (kimi's estimate)", "llama-server (SmolLM2)", "server / estimate"], rows))


if __name__ == "__main__":
    main()
