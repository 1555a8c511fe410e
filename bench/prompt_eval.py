"""Prompt lab: ten small bug fixes (bench/prompt_tasks.py) run with `kimi -p` against any endpoint, so that
prompt variants can be compared on pass rate, steps, tokens and cost.

  python3 bench/prompt_eval.py --base-url URL --model NAME [--api-key-env KIMI_API_KEY]
                               [--prompt-variant FILE ...] [--tasks off-by-one,leap-year] [--json OUT]
  python3 bench/prompt_eval.py --scripted      # each task's scripted solution, through the scripted server

Each task is built in a fresh temporary git repository, its test is checked to fail first, then a whole
`kimi -p` process works on it (a private HOME, the endpoint from the flags, the key from the named
environment variable). A task passes when its tests pass afterwards and the test files are unchanged (a
weakened test is a failure). The shipped prompt is the variant "default"; `--prompt-variant FILE` adds a
variant whose instructions replace kimi_cli/instructions/system.md (through KIMI_SYSTEM_PROMPT).
`--scripted` plays each task's known fix through tests/scripted_server.py: it tests this harness, not a model.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import ROOT, commit_all, kimi_bin, table  # noqa: E402
from prompt_tasks import COMMON_FILES, TASKS, Task  # noqa: E402

SCRIPTED_KEY = "sk-scripted-prompt-eval"


@dataclass
class Outcome:
    task: str
    variant: str
    passed: bool
    steps: int = 0
    tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    exit_code: int | None = None
    note: str = ""


@dataclass
class Endpoint:
    base_url: str
    model: str
    key: str
    provider: str | None = None


def build_repo(task: Task, root: Path) -> None:
    for rel, text in {**COMMON_FILES, **task.files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    commit_all(root, f"{task.name}: initial")


def judge(root: Path, task: Task) -> tuple[bool, str]:
    """Do the task's tests pass? Run with this interpreter's pytest, outside any sandbox."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *task.tests],
            cwd=root, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return False, "the tests timed out"
    return proc.returncode == 0, (proc.stdout + proc.stderr)[-400:]


def scripted_entries(task: Task) -> list[dict[str, Any]]:
    """The known fix as a model would make it: read, edit, run the tests, report."""
    path, old, new = task.fix
    return [
        {"tool_calls": [{"id": "r1", "name": "ReadFile", "arguments": {"path": path}}]},
        {
            "tool_calls": [
                {"id": "e1", "name": "StrReplaceFile", "arguments": {"path": path, "edit": {"old": old, "new": new}}}
            ]
        },
        {"tool_calls": [{"id": "t1", "name": "Shell", "arguments": {"command": "python3 -m pytest -q"}}]},
        {"text": f"Fixed {path}; the tests were run."},
    ]


def private_home(work: Path, max_output_tokens: int | None) -> Path:
    home = work / "home"
    (home / ".kimi").mkdir(parents=True, exist_ok=True)
    lines = ["[retry]", "max_retries = 3", "base_delay = 0.5", "max_delay = 5.0"]
    if max_output_tokens:
        lines.insert(0, f"max_output_tokens = {max_output_tokens}")
    (home / ".kimi" / "config.toml").write_text("\n".join(lines) + "\n")
    return home


def run_kimi(root: Path, task: Task, endpoint: Endpoint, variant: Path | None, opts: argparse.Namespace) -> Outcome:
    name = variant.stem if variant else "default"
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    env.update({"HOME": str(private_home(root.parent / f"{root.name}-home", opts.max_output_tokens)),
                "KIMI_BASE_URL": endpoint.base_url, "KIMI_MODEL": endpoint.model, "NO_COLOR": "1"})  # fmt: skip
    if endpoint.key:
        env["KIMI_API_KEY"] = endpoint.key
    if endpoint.provider:
        env["KIMI_PROVIDER"] = endpoint.provider
    if variant is not None:
        env["KIMI_SYSTEM_PROMPT"] = str(variant)
    argv = [kimi_bin(), "-p", task.prompt, "--output-format", "json", "--max-steps", str(opts.max_steps)]
    if opts.sandbox:
        argv += ["--sandbox", opts.sandbox]
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=opts.timeout)
    except subprocess.TimeoutExpired:
        return Outcome(task.name, name, False, seconds=opts.timeout, note=f"kimi ran past {opts.timeout} s")
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {}
    for line in reversed(proc.stdout.splitlines()):
        try:
            result = json.loads(line)
            break
        except ValueError:
            continue
    usage = result.get("usage") or {}
    outcome = Outcome(
        task.name, name, False, steps=int(result.get("steps", 0)), tokens=int(usage.get("total_tokens", 0)),
        cached_tokens=int(usage.get("cached_tokens", 0)),
        cost_usd=float((result.get("cost") or {}).get("total_usd", 0)),
        seconds=round(seconds, 2), exit_code=proc.returncode,
    )  # fmt: skip
    if not result:
        outcome.note = "no JSON result: " + " ".join(proc.stderr.split())[-300:]
    return outcome


def run_task(
    task: Task,
    endpoint: Endpoint | None,
    variant: Path | None,
    work: Path,
    opts: argparse.Namespace,
    script: list[dict[str, Any]] | None = None,
) -> Outcome:
    """One task in a fresh repository. No endpoint: `script` (default: the task's known fix) is served by the
    scripted server."""
    root = work / task.name
    build_repo(task, root)
    ok, output = judge(root, task)
    if ok:
        return Outcome(task.name, variant.stem if variant else "default", False, note="broken task: passes unfixed")
    originals = {rel: text for rel, text in task.files.items() if rel.startswith("tests/")}
    server = None
    if endpoint is None:  # --scripted: this task's known fix, through the scripted server
        sys.path.insert(0, str(ROOT / "tests"))
        from scripted_server import ScriptedModelServer

        server = ScriptedModelServer(script if script is not None else scripted_entries(task)).start()
        endpoint = Endpoint(server.base_url, "kimi-test", SCRIPTED_KEY, "openai")
    try:
        outcome = run_kimi(root, task, endpoint, variant, opts)
    finally:
        if server is not None:
            server.stop()
    passed, output = judge(root, task)
    changed = [rel for rel, text in originals.items() if _read(root / rel) != text]
    outcome.passed = passed and not changed
    if changed:
        outcome.note = (outcome.note + f" test files changed: {', '.join(changed)}").strip()
    elif not passed and not outcome.note:
        outcome.note = " ".join(output.split())[-200:]
    return outcome


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def summarise(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    rows = []
    for variant in dict.fromkeys(o.variant for o in outcomes):
        mine = [o for o in outcomes if o.variant == variant]
        passed = sum(o.passed for o in mine)
        rows.append({
            "variant": variant, "tasks": len(mine), "passed": passed, "pass_rate": round(passed / len(mine), 3),
            "mean_steps": round(sum(o.steps for o in mine) / len(mine), 2),
            "tokens": sum(o.tokens for o in mine), "cached_tokens": sum(o.cached_tokens for o in mine),
            "cost_usd": round(sum(o.cost_usd for o in mine), 6), "seconds": round(sum(o.seconds for o in mine), 1),
        })  # fmt: skip
    return rows


def report(outcomes: list[Outcome], summary: list[dict[str, Any]]) -> str:
    head = ["variant", "passed", "pass rate", "mean steps", "tokens (cached)", "cost $", "wall s"]
    rows = [[s["variant"], f"{s['passed']}/{s['tasks']}", f"{s['pass_rate']:.0%}", str(s["mean_steps"]),
             f"{s['tokens']:,} ({s['cached_tokens']:,})", f"{s['cost_usd']:.4f}", str(s["seconds"])]
            for s in summary]  # fmt: skip
    detail = [[o.task, o.variant, "pass" if o.passed else "FAIL", str(o.steps), f"{o.tokens:,}", f"{o.seconds:.1f}",
               o.note[:80]] for o in outcomes]  # fmt: skip
    return (
        table(head, rows) + "\n\n" + table(["task", "variant", "result", "steps", "tokens", "s", "note"], detail) + "\n"
    )


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-url", default=os.environ.get("KIMI_BASE_URL"), help="OpenAI-compatible /v1 URL")
    parser.add_argument("--model", default=os.environ.get("KIMI_MODEL"), help="the model name to send")
    parser.add_argument("--api-key-env", default="KIMI_API_KEY", help="environment variable holding the key")
    parser.add_argument("--provider", choices=("moonshot", "openai", "local"), help="default: from the URL")
    parser.add_argument("--prompt-variant", action="append", type=Path, default=[], help="instructions file")
    parser.add_argument("--no-default", action="store_true", help="run only the --prompt-variant files")
    parser.add_argument("--tasks", help="comma-separated task names (default: all ten)")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--max-output-tokens", type=int, help="max_tokens per answer (small local models)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per kimi run")
    parser.add_argument("--sandbox", help="passed to kimi --sandbox")
    parser.add_argument("--scripted", action="store_true", help="play each task's known fix (tests the harness)")
    parser.add_argument("--json", type=Path, help="write every outcome and the summary here")
    parser.add_argument("--keep", action="store_true", help="keep the task repositories (path printed)")
    return parser


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    opts = cli.parse_args(argv)
    tasks = TASKS
    if opts.tasks:
        wanted = opts.tasks.split(",")
        unknown = set(wanted) - {t.name for t in TASKS}
        if unknown:
            cli.error(f"unknown tasks: {', '.join(sorted(unknown))}; known: {', '.join(t.name for t in TASKS)}")
        tasks = [t for t in TASKS if t.name in wanted]
    endpoint = None
    if not opts.scripted:
        if not opts.base_url or not opts.model:
            cli.error("--base-url and --model are needed (or --scripted)")
        endpoint = Endpoint(opts.base_url, opts.model, os.environ.get(opts.api_key_env, ""), opts.provider)
    for variant in opts.prompt_variant:
        if not variant.is_file():
            cli.error(f"no such prompt variant: {variant}")
    variants: list[Path | None] = ([] if opts.no_default else [None]) + [v.resolve() for v in opts.prompt_variant]
    work = Path(tempfile.mkdtemp(prefix="kimi-prompt-eval-"))
    outcomes: list[Outcome] = []
    try:
        for variant in variants:
            for task in tasks:
                outcome = run_task(task, endpoint, variant, work / (variant.stem if variant else "default"), opts)
                outcomes.append(outcome)
                mark = "pass" if outcome.passed else "FAIL"
                sys.stderr.write(f"{outcome.variant:>12} {task.name:<26} {mark} {outcome.steps} steps {outcome.note}\n")
    finally:
        if opts.keep:
            sys.stderr.write(f"task repositories kept in {work}\n")
        else:
            shutil.rmtree(work, ignore_errors=True)
    summary = summarise(outcomes)
    sys.stdout.write(report(outcomes, summary))
    if opts.json is not None:
        opts.json.write_text(json.dumps({"summary": summary, "outcomes": [asdict(o) for o in outcomes]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
