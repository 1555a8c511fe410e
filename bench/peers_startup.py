"""Start-up side by side (issue 47): kimi against Claude Code, Codex CLI and kimi-cli, each against the same scripted
server in its own API (bench/peer_server.py), in the same git-initialised Flask 3.1.3 sdist, alternating run by run.

Figures per agent: a trivial headless task ("say hi"; kimi with its pack cached from a first run, the sandbox and
the session as they are), `--version`, `--help`; wall seconds, CPU seconds (user + system of the process and the
children it waited for, from wait4) and peak RSS; the bytes of each request the trivial task sent, and the K3.1
price (kimi_cli/llm/models.toml) of a 20-step session whose requests all carry that first request: the first at
the input price, the other 19 at the cached-input price (the prefix a provider caches). The steps' own additions
are left out of that price: they are the same files for every agent.

On a loaded machine the wall times swing with the load; CPU is the steadier figure and the one to compare.
Peers: `npm install --prefix bench/.peers/npm @anthropic-ai/claude-code @openai/codex` and bench/setup_peers.sh
(kimi-cli); a missing peer is left out. kimi with its bytecode compiled (PYTHONDONTWRITEBYTECODE unset).
Usage: python3 bench/peers_startup.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

from common import ROOT, commit_all, kimi_bin, median, table

NPM = ROOT / "bench" / ".peers" / "npm" / "node_modules" / ".bin"
KIMI_CLI = ROOT / "bench" / ".peers" / "kimi-cli" / "bin" / "kimi"
TASK = "say hi"


def flask_tree(work: Path) -> Path:
    """Flask 3.1.3's sdist (pip download --no-binary :all: --no-deps), unpacked and committed."""
    cached = ROOT / "bench" / "corpora" / "flask-3.1.3"
    tree = work / "flask-3.1.3"
    if cached.is_dir():
        shutil.copytree(cached, tree)
    else:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                        "flask==3.1.3", "-d", str(work)], check=True)  # fmt: skip
        with tarfile.open(work / "flask-3.1.3.tar.gz") as tar:
            tar.extractall(work, filter="data")
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    commit_all(tree, "flask")
    return tree


def agents(work: Path, url: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each agent's trivial-task command and environment (its own HOME under `work`)."""
    found: dict[str, tuple[list[str], dict[str, str]]] = {}
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    home = work / "home-kimi"
    (home / ".kimi").mkdir(parents=True)
    (home / ".kimi" / "config.toml").write_text("context_length = 16000000\n")
    found["kimi"] = ([kimi_bin(), "-p", TASK], {**base, "HOME": str(home), "KIMI_PROVIDER": "openai",
                     "KIMI_BASE_URL": f"{url}/v1", "KIMI_API_KEY": "bench-key"})  # fmt: skip
    if (NPM / "claude").exists():
        home = work / "home-claude"
        home.mkdir()
        quiet = {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        claude_env = {**base, "HOME": str(home), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "bench-key", **quiet}
        found["Claude Code"] = ([str(NPM / "claude"), "-p", TASK], claude_env)
    if (NPM / "codex").exists():
        home = work / "home-codex"
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "bench"\n[model_providers.bench]\nname = "bench"\n'
            f'base_url = "{url}/v1"\nwire_api = "responses"\nenv_key = "BENCH_KEY"\n'
        )
        found["Codex CLI"] = ([str(NPM / "codex"), "exec", "--skip-git-repo-check", TASK],
                              {**base, "HOME": str(home), "BENCH_KEY": "bench-key"})  # fmt: skip
    if KIMI_CLI.exists():
        home = work / "home-kimi-cli"
        (home / ".kimi").mkdir(parents=True)
        (home / ".kimi" / "config.toml").write_text(
            'default_model = "scripted"\n\n[models.scripted]\nprovider = "scripted"\nmodel = "kimi-test"\n'
            "max_context_size = 262144\n\n[providers.scripted]\n"
            f'type = "openai_legacy"\nbase_url = "{url}/v1"\napi_key = "bench-key"\n'
        )
        found["kimi-cli 1.51"] = ([str(KIMI_CLI), "--print", "--yolo", "-p", TASK], {**base, "HOME": str(home)})
    return found


def one(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (with the children it waited for) and peak RSS in MB of one whole process."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = 0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def price_20_steps(first_request: str) -> float:
    """Dollars at K3.1 prices for 20 requests that each carry `first_request` (the first uncached)."""
    from kimi_cli.context.tokens import TokenCounter

    prices = tomllib.loads((ROOT / "kimi_cli" / "llm" / "models.toml").read_text())["models"]["kimi-k3.1-pro"]
    tokens = TokenCounter(Path(tempfile.mkdtemp()) / "t.sqlite", factor=1.0).raw(first_request)
    return tokens * (prices["price_input"] + 19 * prices["price_cached_input"]) / 1e6


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    work = Path(tempfile.mkdtemp(prefix="kimi-peers-"))
    log, port = work / "requests.jsonl", work / "port"
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "peer_server.py"), "--port-file", str(port),
                               "--log", str(log)])  # fmt: skip
    try:
        while not port.exists() or not port.read_text():
            time.sleep(0.05)
        tree = flask_tree(work)
        found = agents(work, port.read_text())
        for argv, env in found.values():  # twice each: kimi's pack is cached (its budget once the window is known)
            for _ in range(2):
                subprocess.run(argv, cwd=tree, env=env, capture_output=True)
        figures: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        sent: dict[str, list[dict[str, object]]] = {}
        for _ in range(rounds):
            for name, (argv, env) in found.items():
                for what, args in (("trivial", argv), ("--version", [argv[0], "--version"]),
                                   ("--help", [argv[0], "--help"])):  # fmt: skip
                    before = log.stat().st_size if log.exists() else 0
                    figures.setdefault((name, what), []).append(one(args, env, tree))
                    if what == "trivial":
                        with open(log) as fh:
                            fh.seek(before)
                            sent[name] = [json.loads(line) for line in fh if line.strip()]
        rows = []
        for name in found:
            row = [name]
            for what in ("trivial", "--version", "--help"):
                runs = figures[(name, what)]
                row.append(f"{median([r[0] for r in runs]):.3f} / {median([r[1] for r in runs]):.3f}")
            row.append(f"{median([r[2] for r in figures[(name, 'trivial')]]):.0f}")
            posts = [r for r in sent.get(name, []) if "messages" in str(r["path"]) or "responses" in str(r["path"])
                     or "chat/completions" in str(r["path"])]  # fmt: skip
            row.append(", ".join(f"{int(r['bytes']):,}" for r in posts) or "-")
            row.append(f"${price_20_steps(str(posts[0]['body'])):.3f}" if posts else "-")
            rows.append(row)
        print(f"{rounds} alternating rounds; medians; wall s / CPU s (user + system, with waited-for children)")
        print(table(["agent", "trivial -p", "--version", "--help", "peak RSS MB (trivial)", "bytes per request",
                     "K3.1 price, 20 steps of that request"], rows))  # fmt: skip
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
