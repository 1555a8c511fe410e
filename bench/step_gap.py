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

Beside each wall-clock gap, the CPU a step costs: the kimi process's own CPU plus that of the children it
waited for (its git processes), read from /proc/<pid>/stat every 10 ms and interpolated at the request
boundaries of the bin (a full step: reading the reply, the tool, the checkpoints, building the request).
On a shared machine the wall gap swings with the load; the CPU figure is the stable one.

`--baseline CMD`: a second kimi (an older commit, e.g. a script that runs it with its own PYTHONPATH),
run alternately with this one on the same tree; `--no-peer` leaves kimi-cli out.

`--chunk N`: characters per streamed delta (default 16, the scripted server's). The server sends a whole
answer at once, so a WriteFile step's ~50 KB of arguments arrive as ~3,200 events in one burst, and
parsing them counts in the gap; a model generating them takes a minute, and the parsing overlaps that.
`--chunk 4096` takes the burst out and leaves the harness's own part of the step.
Usage: python3 bench/step_gap.py [RUNS] [--packed] [--baseline CMD] [--no-peer] [--chunk N]
       (kimi-cli from bench/.peers/kimi-cli, setup_peers.sh)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import ROOT, kimi_bin, median, table

STEPS = 170
FILE_LINES = 600
BINS = {"0.1 MB": (0.05e6, 0.2e6), "2 MB": (1.7e6, 2.3e6), "8 MB": (7.4e6, 8.6e6)}
PEER = ROOT / "bench" / ".peers" / "kimi-cli" / "bin" / "kimi"
BASELINE: str | None = None  # --baseline CMD: an older kimi, alternated with this one
CHUNK = 16  # --chunk N: characters per streamed delta (the scripted server's default)
OLD = "kimi (baseline)"


@dataclass
class Run:
    start: float  # seconds from process start to the first request
    gaps: list[tuple[float, int]]  # (gap, size of the next request) per step
    received: list[float] = field(default_factory=list)  # when each request had fully arrived
    cpu: list[tuple[float, float, float]] = field(default_factory=list)  # (time, CPU s with children, children's)


class CpuSampler(threading.Thread):
    """CPU seconds of a process with the children it has waited for (utime+stime+cutime+cstime), and of those
    children alone (kimi's git processes), every 10 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.samples, self.done = pid, [], threading.Event()
        self.samples: list[tuple[float, float, float]]

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self.done.is_set():
            try:
                with open(f"/proc/{self.pid}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                return
            ticks = [int(f) for f in fields[11:15]]
            self.samples.append((time.time(), sum(ticks) / tick, (ticks[2] + ticks[3]) / tick))
            self.done.wait(0.01)


def cpu_at(samples: list[tuple[float, float, float]], when: float, column: int = 1) -> float:
    """CPU seconds at `when` (column 1: all; 2: the children's), interpolated between the samples around it."""
    import bisect

    i = bisect.bisect_left(samples, (when, -1.0, -1.0))
    if i <= 0:
        return samples[0][column]
    if i >= len(samples):
        return samples[-1][column]
    before, after = samples[i - 1], samples[i]
    share = (when - before[0]) / (after[0] - before[0]) if after[0] > before[0] else 0.0
    return before[column] + (after[column] - before[column]) * share


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
        entries.append(
            {
                "text": "",
                "tool_calls": [call],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 10},
                "chunk_size": CHUNK,
            }
        )
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


def one_run(tool: str, work: Path, repo: Path, pack: bool = False, kind: str = "read") -> Run:
    """Seconds from process start to the first request, (gap, size of the next request) per step, and the
    process's CPU over time."""
    import shutil

    shutil.rmtree(repo / "written", ignore_errors=True)  # a write run starts from the same tree every time
    server, base_url, stats_file = start_server(work, repo, kind)
    home = work / f"home-{tool}-{time.monotonic_ns()}"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    if tool in ("kimi", OLD):
        (home / ".kimi").mkdir()
        (home / ".kimi" / "config.toml").write_text("context_length = 16000000\n")
        env.update({"KIMI_PROVIDER": "openai", "KIMI_BASE_URL": base_url, "KIMI_API_KEY": "bench-key"})
        program = kimi_bin() if tool == "kimi" else str(BASELINE)
        argv = [program, "-p", "read every module", "--output-format", "json", "--yolo",
                *([] if pack else ["--no-pack"])]  # fmt: skip
    else:
        peer_config(home, base_url)
        argv = [str(PEER), "--print", "--yolo", "-p", "read every module", "--work-dir", str(repo)]
    started = time.time()
    try:
        proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        sampler = CpuSampler(proc.pid)
        sampler.start()
        out, err = proc.communicate(timeout=900)
        sampler.done.set()
        sampler.join()
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, argv, out, err)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    timeline = json.loads(stats_file.read_text())["timeline"]
    gaps = [(timeline[i + 1][0] - timeline[i][1], timeline[i + 1][2]) for i in range(len(timeline) - 1)]
    return Run(timeline[0][0] - started, gaps, [t[0] for t in timeline], sampler.samples)


def first_request(tool: str, work: Path, runs: int) -> float:
    """Median seconds from process start to the first request on an empty repository (pack on for kimi)."""
    empty = work / "empty"
    if not empty.exists():
        empty.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=empty, check=True)
    return median([one_run(tool, work, empty, pack=True).start for _ in range(runs)])


def binned(run: Run) -> dict[str, float | None]:
    """Per bin: the median gap, and (under "cpu <bin>") the CPU seconds per step over the bin's steps."""
    out: dict[str, float | None] = {}
    for name, (lo, hi) in BINS.items():
        steps = [i for i, (_g, size) in enumerate(run.gaps) if lo <= size <= hi]
        out[name] = median([run.gaps[i][0] for i in steps]) if steps else None
        out[f"cpu {name}"] = out[f"git {name}"] = None
        if steps and run.cpu and len(run.received) > steps[-1] + 1:
            first, last = run.received[steps[0]], run.received[steps[-1] + 1]
            for key, column in (("cpu", 1), ("git", 2)):
                spent = cpu_at(run.cpu, last, column) - cpu_at(run.cpu, first, column)
                out[f"{key} {name}"] = spent / len(steps)
    return out


def contenders() -> list[str]:
    tools = ["kimi"] + ([OLD] if BASELINE else [])
    return tools + (["kimi-cli"] if PEER.exists() and "--no-peer" not in sys.argv else [])


def row_for(label: str, name: str, results: dict[str, list[dict[str, float | None]]]) -> list[str] | None:
    """One table row: each contender's median gap and CPU per step in this bin (of which its child processes,
    for kimi its git), and the ratio of each gap to kimi's."""
    got = {t: [r[name] for r in runs if r[name] is not None] for t, runs in results.items()}
    if not got["kimi"]:
        return None

    def cpu_text(tool: str) -> str:
        cpu = [r[f"cpu {name}"] for r in results[tool] if r[f"cpu {name}"] is not None]
        git = [r[f"git {name}"] for r in results[tool] if r[f"git {name}"] is not None]
        return f"{median(cpu) * 1000:.1f} ms (children {median(git) * 1000:.1f})" if cpu and git else "-"  # type: ignore[arg-type]

    ours = median(got["kimi"])  # type: ignore[arg-type]
    row = [label, f"{ours * 1000:.1f} ms", cpu_text("kimi")]
    for tool in results:
        if tool == "kimi":
            continue
        if not got[tool]:
            row += ["-", "-"]
            continue
        theirs = median(got[tool])  # type: ignore[arg-type]
        row += [f"{theirs * 1000:.1f} ms ({theirs / ours:.1f}x)", cpu_text(tool)]
    return row


def headers_for(first: str, tools: list[str]) -> list[str]:
    out = [first, "kimi gap (median)", "kimi CPU/step"]
    for tool in tools[1:]:
        name = "kimi-cli 1.51" if tool == "kimi-cli" else tool
        out += [f"{name} gap (x kimi)", f"{name} CPU/step"]
    return out


def packed(runs: int = 3) -> str:
    """ReadFile and WriteFile steps beside flask, which kimi packs; alternating with the others."""
    tools = contenders()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = packed_repo(work)
        for kind in ("read", "write"):
            results: dict[str, list[dict[str, float | None]]] = {t: [] for t in tools}
            for _ in range(runs):
                for tool in tools:
                    results[tool].append(binned(one_run(tool, work, repo, pack=True, kind=kind)))
            for name in ("2 MB", "8 MB"):
                row = row_for(f"{'ReadFile' if kind == 'read' else 'WriteFile'} steps, {name}", name, results)
                if row is not None:
                    rows.append(row)
    headers = headers_for("step, request size (flask packed)", tools)
    return table(headers, rows) + f"\nMedians over {runs} runs of each tool, alternating; {STEPS} steps a run."


def main(runs: int = 3) -> str:
    tools = contenders()
    results: dict[str, list[dict[str, float | None]]] = {t: [] for t in tools}
    starts: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        make_repo(repo)
        for _ in range(runs):
            for tool in tools:  # side by side, alternating, so both see the same machine state
                results[tool].append(binned(one_run(tool, work, repo)))
        for tool in tools:
            starts[tool] = first_request(tool, work, max(5, runs))
    rows = [row for name in BINS if (row := row_for(name, name, results)) is not None]
    headers = headers_for("request size", tools)
    note = f"\nMedians over {runs} runs of each tool, alternating; each run is {STEPS} ReadFile steps.\n\n"
    start_rows = [[tool, f"{starts[tool]:.3f} s", f"{starts[tool] / starts['kimi']:.2f}x"] for tool in tools]
    start_table = table(["start-up to first request (empty repo)", "median", "ratio to kimi"], start_rows)
    return table(headers, rows) + note + start_table


if __name__ == "__main__":
    count = int(next((a for a in sys.argv[1:] if a.isdigit()), "3"))
    if "--baseline" in sys.argv:
        BASELINE = sys.argv[sys.argv.index("--baseline") + 1]
    if "--chunk" in sys.argv:
        CHUNK = int(sys.argv[sys.argv.index("--chunk") + 1])
    print(packed(count) if "--packed" in sys.argv else main(count))
