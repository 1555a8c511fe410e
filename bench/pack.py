"""`kimi pack` against repomix, gitingest, code2prompt, files-to-prompt and Aider's repo map.

Corpora: the sdists of flask, requests and SQLAlchemy from PyPI, each committed into a fresh git repo
under bench/corpora/. Peers come from bench/setup_peers.sh (bench/.peers/). Whole processes, medians.
Targets: cold >= 3x faster than repomix on flask and requests, >= 2x on SQLAlchemy; warm <= 0.3 s;
refresh after a one-file edit <= 50 ms; SQLAlchemy under a 1M budget; peak RSS <= 300 MB.
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


def kimi_runs(root: Path, runs: int) -> dict[str, float]:
    clean(root)
    cold, warm, rss = [], [], []
    claim = 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache}
            argv = [kimi_bin(), "pack", str(root), "--budget", str(BUDGET), "--format", "json", "-o", os.devnull]
            t, out, peak = timed(argv, env)
            cold.append(t)
            rss.append(peak)
            warm.append(timed(argv, env)[0])
            claim = int(m.group(1).replace(",", "")) if (m := re.search(r"\(([\d,]+) tokens", out)) else 0
    return {"cold": median(cold), "warm": median(warm), "rss_mb": median(rss) / 1024, "tokens": claim}


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


def peer_runs(root: Path, runs: int) -> dict[str, tuple[float, str]]:
    results: dict[str, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.txt"
        for name, argv in peer_commands(root, out).items():
            env = {**os.environ, "OPENAI_API_KEY": "bench-no-network", "HOME": tmp}
            try:
                times, claim = [], "—"
                for _ in range(runs):
                    clean(root)  # aider's tag cache would make its later runs warm
                    t, text, _ = timed(argv, env, cwd=root)
                    times.append(t)
                    pattern = CLAIMS.get(name)
                    if pattern is not None and (m := pattern.search(text)):
                        claim = m.group(1).strip()
                    elif OFFLINE.search(text):
                        claim = "none: its tokenizer download fails offline"
                results[name] = (median(times), claim)
            except (RuntimeError, OSError) as exc:
                results[name] = (float("nan"), f"failed: {str(exc)[:80]}")
    clean(root)
    return results


def main(runs: int = 3) -> str:
    corpora = prepare()
    shutil.rmtree(HERE / "out", ignore_errors=True)
    sections = []
    for root in corpora.values():
        ours = kimi_runs(root, runs)
        refresh = refresh_in_process(root, 5)
        peers = peer_runs(root, runs)
        repomix = peers.get("repomix", (float("nan"), ""))[0]
        rows = [
            [
                "`kimi pack` cold",
                f"{ours['cold']:.2f} s",
                f"{repomix / ours['cold']:.2f}x faster than repomix" if repomix == repomix else "",
                f"{ours['tokens']:,} (packed, budget {BUDGET:,})",
            ],
            ["`kimi pack` warm (cache)", f"{ours['warm']:.2f} s", "", ""],
            ["refresh after a one-file edit (in process)", f"{refresh * 1000:.0f} ms", "", ""],
            ["`kimi pack` cold peak RSS", f"{ours['rss_mb']:.0f} MB", "", ""],
        ]
        for peer, (t, claim) in peers.items():
            ratio = f"{t / ours['cold']:.2f}x kimi cold" if t == t else ""
            rows.append([peer, f"{t:.2f} s" if t == t else "—", ratio, claim])
        sections.append(f"### {root.name}\n\n" + table(["tool", f"median of {runs}", "ratio", "tokens claimed"], rows))
    return "\n\n".join(sections)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
