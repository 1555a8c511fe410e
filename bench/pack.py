"""`kimi pack` against repomix, gitingest, code2prompt, files-to-prompt and Aider's repo map.

Corpora: the sdists of flask, requests and SQLAlchemy from PyPI, each committed into a fresh git repo
under bench/corpora/, plus any folder given with --tree (issue 32 used a site-packages of ~14.7k files:
`pip install --target DIR --no-deps torch==2.13.0+cpu` from its CPU wheel, then `pip install --target DIR
sympy networkx jinja2 fsspec filelock typing-extensions mpmath markupsafe`). Peers come from
bench/setup_peers.sh (bench/.peers/). Whole processes, one alternating run: each round runs kimi cold
(empty cache), kimi warm, then every peer, so all see the same machine; medians of the rounds, and the
ratio to repomix as the median of the per-round ratios.
Targets: cold >= 3x faster than repomix on flask and requests, >= 2x on SQLAlchemy and the big tree;
warm <= 0.3 s; refresh after a one-file edit <= 50 ms; peak RSS <= 200 MB (SQLAlchemy), <= 400 MB (tree).
Usage: python3 bench/pack.py [RUNS] [--tree PATH ...] [--only-trees] [--peers repomix,...]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from common import commit_all, kimi_bin, median, table

HERE = Path(__file__).resolve().parent
CORPORA = HERE / "corpora"
PEERS = HERE / ".peers"
SDISTS = ("flask", "requests", "SQLAlchemy")
BUDGET = 629_145  # 60% of 1,048,576
CLAIMS = {  # how each tool reports the size of what it produced
    "repomix": re.compile(r"Total Tokens:\s*([\d,]+)"),
    "gitingest": re.compile(r"Estimated tokens:\s*([\d.,]+\s*[kKmM]?)"),
    "code2prompt (PyPI)": re.compile(r"Token count:\s*([1-9][\d,]*)"),
}
OFFLINE = re.compile(r"Failed to download tiktoken|Error counting tokens")


def prepare() -> dict[str, Path]:
    CORPORA.mkdir(exist_ok=True)
    out: dict[str, Path] = {}
    for name in SDISTS:
        existing = [p for p in CORPORA.glob(f"{name.lower()}-*") if p.is_dir()]
        if not existing:
            dl = CORPORA / "sdists"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-binary",
                    ":all:",
                    "--no-deps",
                    "-d",
                    str(dl),
                    name,
                ],
                check=True,
            )
            archive = next(dl.glob(f"{name.lower()}-*.tar.gz"))
            with tarfile.open(archive) as tar:
                tar.extractall(CORPORA, filter="data")
            existing = [p for p in CORPORA.glob(f"{name.lower()}-*") if p.is_dir()]
        root = existing[0]
        if not (root / ".git").exists():
            commit_all(root, "sdist")
        out[name] = root
    return out


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, str, int]:
    """Wall seconds, combined output, and peak RSS (KiB) of one whole process."""
    wrapped = ["/usr/bin/time", "-f", "MAXRSS=%M", *argv] if Path("/usr/bin/time").exists() else argv
    started = time.perf_counter()
    proc = subprocess.run(wrapped, env=env, cwd=cwd, capture_output=True, text=True, errors="replace")
    elapsed = time.perf_counter() - started
    rss = int(m.group(1)) if (m := re.search(r"MAXRSS=(\d+)", proc.stderr)) else 0
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {proc.stderr[-500:]}")
    return elapsed, proc.stdout + proc.stderr, rss


def clean(root: Path) -> None:
    """Remove what peers leave in the corpus (aider's tag cache), so every tool sees the same tree."""
    for leftover in root.glob(".aider*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink()


def kimi_once(root: Path) -> tuple[float, float, float, int]:
    """One cold pack (empty cache) and one warm one: (cold s, warm s, cold peak RSS KiB, tokens packed)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        argv = [kimi_bin(), "pack", str(root), "--budget", str(BUDGET), "--format", "json", "-o", os.devnull]
        cold, out, peak = timed(argv, env)
        warm = timed(argv, env)[0]
    claim = int(m.group(1).replace(",", "")) if (m := re.search(r"\(([\d,]+) tokens", out)) else 0
    return cold, warm, peak, claim


def refresh_in_process(root: Path, runs: int) -> float:
    from kimi_cli.context.packer import RepoPacker

    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        packer = RepoPacker(root)
        packer.pack("", BUDGET)
        target = next(p for p in sorted(root.rglob("*.py")) if ".git" not in p.parts)
        original = target.read_text()
        times = []
        try:
            for i in range(runs):
                target.write_text(original + f"\n# edit {i}\n")
                started = time.perf_counter()
                packer.pack("", BUDGET, persist=False)
                times.append(time.perf_counter() - started)
        finally:
            target.write_text(original)
            os.environ.pop("XDG_CACHE_HOME", None)
    return median(times)


def peer_commands(root: Path, out: Path) -> dict[str, list[str]]:
    venv = PEERS / "venv" / "bin"
    cmds = {
        "repomix": [str(PEERS / "npm" / "node_modules" / ".bin" / "repomix"), str(root), "-o", str(out)],
        "gitingest": [str(venv / "gitingest"), str(root), "-o", str(out)],
        "code2prompt (PyPI)": [str(venv / "code2prompt"), "-p", str(root), "-o", str(out), "--tokens"],
        "files-to-prompt": ["sh", "-c", f'"{venv / "files-to-prompt"}" "{root}" > "{out}"'],
        "aider repo map (8k)": [
            str(venv / "aider"),
            "--show-repo-map",
            "--map-tokens",
            "8192",
            "--no-gitignore",
            "--no-check-update",
            "--no-analytics",
            "--model",
            "gpt-4o",
            "--yes-always",
        ],
    }
    return {k: v for k, v in cmds.items() if Path(v[0]).exists() or v[0] == "sh"}


def peer_once(name: str, argv: list[str], root: Path, home: str) -> tuple[float, str, int]:
    """One run of a peer: (seconds, what it claims, peak RSS KiB); nan when it failed."""
    env = {**os.environ, "OPENAI_API_KEY": "bench-no-network", "HOME": home}
    clean(root)  # aider's tag cache would make its later runs warm
    try:
        t, text, peak = timed(argv, env, cwd=root)
    except (RuntimeError, OSError) as exc:
        return float("nan"), f"failed: {str(exc)[:80]}", 0
    pattern = CLAIMS.get(name)
    claim = "—"
    if pattern is not None and (m := pattern.search(text)):
        claim = m.group(1).strip()
    elif OFFLINE.search(text):
        claim = "none: its tokenizer download fails offline"
    return t, claim, peak


def side_by_side(root: Path, runs: int, only: set[str] | None) -> str:
    """kimi cold, kimi warm and each peer in turn, `runs` rounds; then the in-process refresh."""
    ours: dict[str, list[float]] = {"cold": [], "warm": [], "rss": []}
    peers: dict[str, dict[str, list[float]]] = {}
    claims: dict[str, str] = {}
    tokens = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.txt"
        commands = {k: v for k, v in peer_commands(root, out).items() if only is None or k in only}
        for _ in range(runs):
            cold, warm, peak, tokens = kimi_once(root)
            ours["cold"].append(cold)
            ours["warm"].append(warm)
            ours["rss"].append(peak / 1024)
            for name, argv in commands.items():
                t, claim, peak = peer_once(name, argv, root, tmp)
                row = peers.setdefault(name, {"t": [], "rss": [], "ratio": []})
                row["t"].append(t)
                row["rss"].append(peak / 1024)
                row["ratio"].append(t / cold)
                claims[name] = claim
    clean(root)
    refresh = refresh_in_process(root, 5)
    cold = median(ours["cold"])
    rows = [
        ["`kimi pack` cold", f"{cold:.2f} s", "", f"{median(ours['rss']):.0f} MB", f"{tokens:,} (budget {BUDGET:,})"],
        ["`kimi pack` warm (cache)", f"{median(ours['warm']):.2f} s", "", "", ""],
        ["refresh after a one-file edit (in process)", f"{refresh * 1000:.0f} ms", "", "", ""],
    ]
    for name, row in peers.items():
        good = [t for t in row["t"] if t == t]
        ratios = [r for r in row["ratio"] if r == r]
        rows.append([
            name, f"{median(good):.2f} s" if good else "—",
            f"{median(ratios):.2f}x kimi cold" if ratios else "", f"{median(row['rss']):.0f} MB" if good else "",
            claims.get(name, ""),
        ])  # fmt: skip
    headers = ["tool", f"median of {runs}", "ratio (median of per-round ratios)", "peak RSS", "tokens claimed"]
    return table(headers, rows)


def main(runs: int = 3, trees: list[Path] | None = None, only: set[str] | None = None, sdists: bool = True) -> str:
    corpora = list(prepare().values()) if sdists else []
    corpora += [t.resolve() for t in trees or []]
    shutil.rmtree(HERE / "out", ignore_errors=True)
    return "\n\n".join(f"### {root.name}\n\n" + side_by_side(root, runs, only) for root in corpora)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="?", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append", default=[], help="another folder to pack")
    parser.add_argument("--only-trees", action="store_true", help="leave out the three sdists")
    parser.add_argument("--peers", help="comma-separated peers to run (default: every one installed)")
    args = parser.parse_args()
    chosen = set(args.peers.split(",")) if args.peers else None
    print(main(args.runs, args.tree, chosen, sdists=not args.only_trees))
