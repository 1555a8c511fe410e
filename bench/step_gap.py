"""Harness gap per step at 0.1, 2 and 8 MB requests: kimi against kimi-cli 1.51 on the same script.

The gap is measured inside the scripted server: from the end of one streamed reply to the moment the next
request's body has fully arrived. Everything the harness does between two requests is in it: assembling
the answer, running the tool (a ReadFile of ~48 KB), logging the step, building and sending the request.
Both tools run headless as whole processes, on a script of 170 reads of distinct files, so the request
grows by ~50 KB a step; gaps are binned by request size. Default: no packed repository (kimi-cli has none).

`--packed`: the same beside flask 3.1.3 (bench/corpora, from bench/pack.py), which kimi packs into its
system message (~1.1 MB), in two scripts: 170 ReadFile steps, and 170 WriteFile steps of new ~50 KB files
(each write step takes kimi's checkpoint snapshots before and after). kimi-cli runs the same scripts in the
same tree (it packs nothing). Targets (issue 32): read <= 15 ms, write <= 40 ms median at 2 MB.
Usage: python3 bench/step_gap.py [RUNS] [--packed]   (kimi-cli from bench/.peers/kimi-cli, setup_peers.sh)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, kimi_bin, median, table

STEPS = 170
FILE_LINES = 600
BINS = {"0.1 MB": (0.05e6, 0.2e6), "2 MB": (1.7e6, 2.3e6), "8 MB": (7.4e6, 8.6e6)}
PEER = ROOT / "bench" / ".peers" / "kimi-cli" / "bin" / "kimi"


def make_repo(repo: Path) -> None:
    repo.mkdir(parents=True)
    line = "x = 'a line of a module that the model reads, with some words in it to look like code' # pad\n"
    for i in range(STEPS):
        (repo / f"mod{i:03d}.py").write_text(f"# module {i}\n" + line * FILE_LINES)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)


def script(repo: Path, kind: str = "read") -> list[dict]:
    entries = []
    body = "y = 'a line the model writes into a new module, about as long as the ones it reads' # pad\n"
    for i in range(STEPS):
        if kind == "read":
            folder = repo / "modules" if (repo / "modules").is_dir() else repo
            args = {"path": str(folder / f"mod{i:03d}.py")}
            call = {"id": f"ReadFile:{i}", "name": "ReadFile", "arguments": args}
        else:
            args = {"path": str(repo / "written" / f"new{i:03d}.py"), "content": f"# new {i}\n" + body * 560}
            call = {"id": f"WriteFile:{i}", "name": "WriteFile", "arguments": args}
        entries.append({"text": "", "tool_calls": [call], "usage": {"prompt_tokens": 1000, "completion_tokens": 10}})
    entries.append({"text": "finished", "usage": {"prompt_tokens": 1000, "completion_tokens": 10}})
    return entries


def packed_repo(work: Path) -> Path:
    """flask 3.1.3 (bench/corpora, fetched by bench/pack.py), committed, with the 170 modules beside it in an
    ignored folder (read by the script, not packed: the pack is flask's, ~1.1 MB)."""
    import shutil

    from common import commit_all

    source = next((p for p in (ROOT / "bench" / "corpora").glob("flask-*") if p.is_dir()), None)
    if source is None:
        raise SystemExit("flask is missing from bench/corpora: run python3 bench/pack.py once (it fetches it)")
    repo = work / "packed"
    shutil.copytree(source, repo, ignore=shutil.ignore_patterns(".git"))
    commit_all(repo, "flask")
    (repo / ".git" / "info" / "exclude").write_text("modules/\n")
    line = "x = 'a line of a module that the model reads, with some words in it to look like code' # pad\n"
    (repo / "modules").mkdir()
    for i in range(STEPS):
        (repo / "modules" / f"mod{i:03d}.py").write_text(f"# module {i}\n" + line * FILE_LINES)
    return repo


def start_server(work: Path, repo: Path, kind: str = "read") -> tuple[subprocess.Popen[bytes], str, Path]:
    script_file, port_file, stats_file = work / "script.json", work / "port", work / "stats.json"
    for f in (port_file, stats_file):
        f.unlink(missing_ok=True)
    script_file.write_text(json.dumps(script(repo, kind)))
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "scripted_server.py"), str(script_file),
         "--port-file", str(port_file), "--stats-file", str(stats_file)]
    )  # fmt: skip
    while not port_file.exists() or not port_file.read_text():
        time.sleep(0.01)
    return server, port_file.read_text(), stats_file


def peer_config(home: Path, base_url: str) -> None:
    (home / ".kimi").mkdir(parents=True, exist_ok=True)
    (home / ".kimi" / "config.toml").write_text(
        'default_model = "scripted"\n\n[models.scripted]\nprovider = "scripted"\nmodel = "kimi-test"\n'
        "max_context_size = 16000000\n\n[providers.scripted]\n"
        f'type = "openai_legacy"\nbase_url = "{base_url}"\napi_key = "bench-key"\n'
    )


def one_run(
    tool: str, work: Path, repo: Path, pack: bool = False, kind: str = "read"
) -> tuple[float, list[tuple[float, int]]]:
    """Seconds from process start to the first request, and (gap, size of the next request) per step."""
    import shutil

    shutil.rmtree(repo / "written", ignore_errors=True)  # a write run starts from the same tree every time
    server, base_url, stats_file = start_server(work, repo, kind)
    home = work / f"home-{tool}-{time.monotonic_ns()}"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    if tool == "kimi":
        (home / ".kimi").mkdir()
        (home / ".kimi" / "config.toml").write_text("context_length = 16000000\n")
        env.update({"KIMI_PROVIDER": "openai", "KIMI_BASE_URL": base_url, "KIMI_API_KEY": "bench-key"})
        argv = [kimi_bin(), "-p", "read every module", "--output-format", "json", "--yolo",
                *([] if pack else ["--no-pack"])]  # fmt: skip
    else:
        peer_config(home, base_url)
        argv = [str(PEER), "--print", "--yolo", "-p", "read every module", "--work-dir", str(repo)]
    started = time.time()
    try:
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True, timeout=900)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    timeline = json.loads(stats_file.read_text())["timeline"]
    gaps = [(timeline[i + 1][0] - timeline[i][1], timeline[i + 1][2]) for i in range(len(timeline) - 1)]
    return timeline[0][0] - started, gaps


def first_request(tool: str, work: Path, runs: int) -> float:
    """Median seconds from process start to the first request on an empty repository (pack on for kimi)."""
    empty = work / "empty"
    if not empty.exists():
        empty.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=empty, check=True)
    return median([one_run(tool, work, empty, pack=True)[0] for _ in range(runs)])


def binned(samples: list[tuple[float, int]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, (lo, hi) in BINS.items():
        gaps = [g for g, size in samples if lo <= size <= hi]
        out[name] = median(gaps) if gaps else None
    return out


def packed(runs: int = 3) -> str:
    """ReadFile and WriteFile steps beside flask, which kimi packs; alternating with kimi-cli."""
    tools = ["kimi"] + (["kimi-cli"] if PEER.exists() else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = packed_repo(work)
        for kind in ("read", "write"):
            results: dict[str, list[dict[str, float | None]]] = {t: [] for t in tools}
            for _ in range(runs):
                for tool in tools:
                    results[tool].append(binned(one_run(tool, work, repo, pack=True, kind=kind)[1]))
            for name in ("2 MB", "8 MB"):
                got = {t: [r[name] for r in results[t] if r[name] is not None] for t in tools}
                if not got["kimi"]:
                    continue
                ours = median(got["kimi"])
                row = [f"{'ReadFile' if kind == 'read' else 'WriteFile'} steps, {name}", f"{ours * 1000:.1f} ms"]
                if got.get("kimi-cli"):
                    peer = median(got["kimi-cli"])
                    row += [f"{peer * 1000:.1f} ms", f"{peer / ours:.1f}x"]
                rows.append(row)
    headers = ["step, request size (flask packed)", "kimi gap (median)"] + (
        ["kimi-cli 1.51 gap", "kimi-cli / kimi"] if "kimi-cli" in tools else []
    )
    return table(headers, rows) + f"\nMedians over {runs} runs of each tool, alternating; {STEPS} steps a run."


def main(runs: int = 3) -> str:
    tools = ["kimi"] + (["kimi-cli"] if PEER.exists() else [])
    results: dict[str, list[dict[str, float | None]]] = {t: [] for t in tools}
    starts: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        make_repo(repo)
        for _ in range(runs):
            for tool in tools:  # side by side, alternating, so both see the same machine state
                results[tool].append(binned(one_run(tool, work, repo)[1]))
        for tool in tools:
            starts[tool] = first_request(tool, work, max(5, runs))
    rows = []
    for name in BINS:
        ours = median([r[name] for r in results["kimi"] if r[name] is not None])
        row = [name, f"{ours * 1000:.1f} ms"]
        if "kimi-cli" in results:
            peer = median([r[name] for r in results["kimi-cli"] if r[name] is not None])
            row += [f"{peer * 1000:.1f} ms", f"{peer / ours:.1f}x"]
        rows.append(row)
    headers = ["request size", "kimi gap (median)"] + (
        ["kimi-cli 1.51 gap", "kimi-cli / kimi"] if "kimi-cli" in results else []
    )
    note = f"\nMedians over {runs} runs of each tool, alternating; each run is {STEPS} ReadFile steps.\n\n"
    start_rows = [[tool, f"{starts[tool]:.3f} s", f"{starts[tool] / starts['kimi']:.2f}x"] for tool in tools]
    start_table = table(["start-up to first request (empty repo)", "median", "ratio to kimi"], start_rows)
    return table(headers, rows) + note + start_table


if __name__ == "__main__":
    count = int(next((a for a in sys.argv[1:] if a.isdigit()), "3"))
    print(packed(count) if "--packed" in sys.argv else main(count))
