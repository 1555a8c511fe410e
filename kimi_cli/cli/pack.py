"""`kimi pack`: show what the context would hold (stats), or write the packed text or JSON."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from kimi_cli.context.packer import Pack, RepoPacker
from kimi_cli.util.pipes import survives_closed_pipe

STAGES = {"reading": "reading files", "counting": "counting tokens", "outlining": "parsing (tree-sitter)",
          "ranking": "ranking"}  # fmt: skip


class DelayedProgress:
    """A progress display on stderr that appears only if the work takes longer than `delay` seconds."""

    def __init__(self, delay: float = 0.5) -> None:
        self.delay = delay
        self.stage = "starting"
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DelayedProgress:
        if sys.stderr.isatty():
            self._thread.start()
        return self

    def update(self, stage: str, _done: int, _total: int) -> None:
        self.stage = STAGES.get(stage, stage)

    def _run(self) -> None:
        if self.done.wait(self.delay):
            return
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(
            SpinnerColumn(),
            TextColumn("[bold]packing[/] {task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as progress:
            task = progress.add_task(self.stage)
            while not self.done.wait(0.1):
                progress.update(task, description=self.stage)

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        if self._thread.is_alive():
            self._thread.join(1)


def pack_json(pack: Pack) -> dict[str, Any]:
    return {
        "root": pack.root,
        "budget": pack.budget,
        "tokens": pack.tokens,
        "repo_tokens": pack.repo_tokens,
        "repo_tokens_exact": pack.repo_tokens_exact,
        "counts": {m: len(pack.by_mode(m)) for m in ("full", "outline", "listed", "skipped")},
        "files": [vars(e) for e in pack.entries],
        "text": pack.text,
    }


def print_stats(pack: Pack, show_all: bool, by_rank: bool = False) -> None:
    """The summary table, then one row per file: by rank for a task (most relevant first), else by path."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    from kimi_cli.util.sanitize import visible_text  # file names are untrusted: shown, never obeyed

    summary = Table(title=visible_text(f"kimi pack: {pack.root}", one_line=True), show_lines=False)
    for col in ("", "files", "tokens in pack"):
        summary.add_column(col, justify="right" if col else "left")
    labels = {"full": "in full", "outline": "outline only", "listed": "listed by path", "skipped": "skipped"}
    for mode, label in labels.items():
        entries = pack.by_mode(mode)  # type: ignore[arg-type]
        summary.add_row(label, str(len(entries)), f"{sum(e.tokens for e in entries):,}")
    approx = "" if pack.repo_tokens_exact else "~"
    summary.add_row("[bold]pack total", str(len(pack.entries)), f"[bold]{pack.tokens:,}[/] of {pack.budget:,} budget")
    summary.add_row("whole repository (all text in full)", "", f"{approx}{pack.repo_tokens:,}")
    console.print(summary)
    detail = Table(show_lines=False)
    for col in ("rank", "file", "mode", "tokens", "reason") if by_rank else ("file", "mode", "tokens", "reason"):
        detail.add_column(col, justify="right" if col in ("tokens", "rank") else "left", overflow="fold")
    entries = pack.entries
    if by_rank:
        unranked = len(entries) + 1
        entries = sorted(entries, key=lambda e: (e.rank if e.rank is not None else unranked, e.path))
    for entry in entries:
        if entry.mode == "listed" and not show_all:
            continue
        tokens = f"{entry.tokens:,}" if entry.mode in ("full", "outline") else f"{entry.size:,} B"
        cells = [visible_text(entry.path, one_line=True), entry.mode, tokens, visible_text(entry.reason)]
        if by_rank:
            cells.insert(0, "" if entry.rank is None else str(entry.rank + 1))
        detail.add_row(*cells)
    console.print(detail)
    listed = len(pack.by_mode("listed"))
    if listed and not show_all:
        console.print(f"{listed} more files are listed by path only (over budget); --all shows them.")


def default_budget(root: Path) -> int:
    """60% of the model's context, or what config says; config (and pydantic) loads only if a file exists."""
    from kimi_cli.util.paths import config_files

    if not any(p.is_file() for p in config_files(root)):
        return int(1_048_576 * 0.6)
    from kimi_cli.config import load_config

    config = load_config(root, {})
    return config.context.budget or int((config.context_length or 1_048_576) * config.context.budget_ratio)


@survives_closed_pipe
def cli_main(argv: list[str]) -> int | None:
    """`kimi pack` without Typer (~0.2 s saved): argparse reads the same options kimi_cli/cli/subcommands.py
    declares. None: help was asked or the arguments do not parse, and Typer answers (one help style)."""
    import argparse

    parser = argparse.ArgumentParser(prog="kimi pack", add_help=False, exit_on_error=False)
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("-t", "--task", default="")
    parser.add_argument("-b", "--budget", type=int)
    parser.add_argument("-f", "--format", default="stats", choices=("stats", "text", "json"), dest="fmt")
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--all", action="store_true", dest="show_all")
    try:
        args, extra = parser.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return None
    if extra:
        return None
    return run_from_options(args.path, args.task, args.budget, args.fmt, args.output, args.show_all)


def run_from_options(
    path: Path | None, task: str, budget: int | None, fmt: str, output: Path | None, show_all: bool
) -> int:
    if fmt not in ("stats", "text", "json"):
        sys.stderr.write(f"kimi pack: --format must be stats, text or json, not {fmt!r}\n")
        return 2
    root = (path or Path.cwd()).resolve()
    if not root.is_dir():
        sys.stderr.write(f"kimi pack: {root} is not a directory\n")
        return 2
    from kimi_cli.errors import KimiError

    try:
        budget = budget or default_budget(root)
    except KimiError as exc:
        from kimi_cli.util.sanitize import visible  # a folder's config text may carry escapes

        sys.stderr.write(visible(f"kimi: {exc}") + "\n")
        return int(exc.exit_code)
    if budget < 1000:
        sys.stderr.write("kimi pack: --budget must be at least 1000 tokens\n")
        return 2
    return run_pack(root, task, budget, fmt, output, show_all)


def run_pack(root: Path, task: str, budget: int, fmt: str, output: Path | None, show_all: bool) -> int:
    with DelayedProgress() as progress:
        pack = RepoPacker(root, progress=progress.update).pack(task, budget)
    if fmt == "stats":
        print_stats(pack, show_all, by_rank=bool(task))
        return 0
    from kimi_cli.util.jsonsafe import dumps

    body = pack.text if fmt == "text" else dumps(pack_json(pack)) + "\n"
    if output is not None:
        output.write_text(body, encoding="utf-8")
        sys.stderr.write(f"wrote {output} ({pack.tokens:,} tokens, {len(pack.entries)} files)\n")
    else:
        if sys.stdout.isatty():  # a terminal shows the files' escapes, never obeys them; a pipe gets exact text
            from kimi_cli.util.sanitize import visible

            body = visible(body)
        sys.stdout.write(body)
    return 0
