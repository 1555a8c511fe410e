"""`kimi pack`, `kimi undo`, `kimi prompt`, `kimi login`, `kimi sessions`, `kimi export` and `kimi diff` as Typer
commands.

One help style for every command: these are declared here with Typer, so `kimi pack --help` looks like
every other `--help`. `pack` and `undo` are also timed, so kimi_cli/entry.py runs them without importing
Typer (an argparse parser in their module, checked against these declarations by
tests/e2e/test_help.py); help and any argument error come here, so they look the same either way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

PackPath = Annotated[
    Path | None,
    typer.Argument(help="Repository folder (default: the current directory).", show_default=False, metavar="PATH"),
]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.", metavar="PATH")]
Workdir = Annotated[Path | None, typer.Option("--workdir", "-w", help="Workspace folder.", metavar="PATH")]
SessionId = Annotated[
    str | None,
    typer.Argument(help="Session id or its start (default: the latest here).", show_default=False, metavar="ID"),
]
UNDO_HELP = (
    "Put files back as they were before your last prompt, and cut the conversation there (or go back to before "
    "undo point N; --list shows the points)."
)


def help_style() -> None:
    """Typer's rich help, as every command shows it: a flag needs no `<bool>` type column (this Typer shows
    one). Summaries are set by kimi_cli.cli.main._summaries (one line, never cut)."""
    from typer import core

    if getattr(core.TyperOption.display_type_rich, "kimi", False):
        return
    shown = core.TyperOption.display_type_rich

    def display_type_rich(self: core.TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.kimi = True  # type: ignore[attr-defined]
    core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _markdown() -> type:
    from rich.markdown import Markdown

    return Markdown


def _traceback() -> type:
    from rich.traceback import Traceback

    return Traceback


# The modules help need not import: module -> {class: a function importing the real class}.
DEFERRED: dict[str, dict[str, Callable[[], type]]] = {
    "rich.markdown": {"Markdown": _markdown},
    "rich.traceback": {"Traceback": _traceback},
}


def light_help() -> None:
    """Help only: Typer's rich help imports rich.markdown and rich.traceback (markdown-it and pygments,
    ~90 ms) for markdown help and pretty tracebacks, which kimi does not use. Stand-in modules defer those
    imports to the first object actually built (never, for help), so `--help` stays fast."""
    import types

    for name, classes in DEFERRED.items():
        if name in sys.modules:
            continue
        stand_in = types.ModuleType(name)
        for cls_name, load in classes.items():
            setattr(stand_in, cls_name, _deferred(name, cls_name, load))
        sys.modules[name] = stand_in


def _deferred(module: str, cls_name: str, load: Callable[[], type]) -> type:
    class Deferred:
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if getattr(sys.modules.get(module), "__file__", None) is None:
                sys.modules.pop(module, None)  # the stand-in goes: the import below finds the real module
            return load()(*args, **kwargs)

    Deferred.__name__ = cls_name
    return Deferred


def run_single(name: str, argv: list[str]) -> None:
    """`kimi pack --help` (or a bad argument): Typer answers for that one command, with nothing else built."""
    light_help()
    help_style()
    single = typer.Typer(add_completion=False, rich_markup_mode="rich", pretty_exceptions_enable=False,
                         context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
    register(single, only=name)
    single(args=argv, prog_name=f"kimi {name}")


def register(app: typer.Typer, only: str | None = None) -> None:
    def command(name: str, **kwargs: Any) -> Any:
        if only is not None and name != only:
            return lambda f: f
        return app.command(name, **kwargs)

    @command("pack")
    def pack_command(
        path: PackPath = None,
        task: Annotated[
            str,
            typer.Option(
                "--task", "-t", help="Rank files for this task (the table lists them by rank).", metavar="TEXT"
            ),
        ] = "",
        budget: Annotated[
            int | None,
            typer.Option("--budget", "-b", help="Token budget (default: 60% of the model's context).", metavar="N"),
        ] = None,
        fmt: Annotated[str, typer.Option("--format", "-f", help="stats | text | json.", metavar="FORMAT")] = "stats",
        output: Output = None,
        show_all: Annotated[bool, typer.Option("--all", help="Stats: list every file.")] = False,
    ) -> None:
        """Pack the repository as the agent sees it: full text by relevance, outlines, then a tree."""
        from kimi_cli.cli.pack import run_from_options

        raise typer.Exit(run_from_options(path, task, budget, fmt, output, show_all))

    @command("undo", help=UNDO_HELP)
    def undo_command(
        count: Annotated[
            int | None, typer.Argument(help="Undo point N, counted from the newest.", show_default=False, metavar="N")
        ] = None,
        list_: Annotated[
            bool, typer.Option("--list", "-l", help="List the undo points and the files each changed.")
        ] = False,
        session: Annotated[
            str | None, typer.Option("--session", help="Session id (default: the latest here).", metavar="ID")
        ] = None,
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Overwrite files you edited since the agent.")] = False,
        workdir: Workdir = None,
    ) -> None:
        from kimi_cli.cli.undo import run_from_options

        raise typer.Exit(run_from_options(count, list_, session, yes, workdir))

    @command("prompt")
    def prompt_command(
        path: PackPath = None,
        task: Annotated[
            str,
            typer.Option("--task", "-t", help="Rank the pack for this task (as kimi -p TASK would).", metavar="TEXT"),
        ] = "",
        no_pack: Annotated[bool, typer.Option("--no-pack", help="Leave the packed repository out.")] = False,
        budget: Annotated[
            int | None,
            typer.Option("--budget", "-b", help="Pack budget in tokens (default: as a session).", metavar="N"),
        ] = None,
        fmt: Annotated[str, typer.Option("--format", "-f", help="text | json.", metavar="FORMAT")] = "text",
        output: Output = None,
    ) -> None:
        """Print what the model is told first: the system message (instructions, AGENTS.md, the packed
        repository, the environment) and the tools block."""
        from kimi_cli.cli.prompt import cli_main

        if fmt not in ("text", "json"):
            raise typer.BadParameter("text or json", param_hint="--format")
        argv = [str(path)] if path else []
        argv += ["--task", task, "--format", fmt] + (["--no-pack"] if no_pack else [])
        argv += (["--budget", str(budget)] if budget else []) + (["--output", str(output)] if output else [])
        raise typer.Exit(cli_main(argv))

    @command("login")
    def login_command(
        provider: Annotated[
            str | None,
            typer.Option("--provider", help="moonshot | openai | local (asked when not given).", metavar="NAME"),
        ] = None,
        base_url: Annotated[
            str | None, typer.Option("--base-url", help="The server's OpenAI-compatible URL.", metavar="URL")
        ] = None,
        model: Annotated[str | None, typer.Option("--model", help="Default model name.", metavar="NAME")] = None,
        api_key_stdin: Annotated[
            bool, typer.Option("--api-key-stdin", help="Read the API key from stdin (for scripts).")
        ] = False,
        no_check: Annotated[bool, typer.Option("--no-check", help="Save without asking the server.")] = False,
    ) -> None:
        """Set up kimi: choose a provider and key (or a server's base URL), check them against the server's
        /v1/models, and save them in ~/.kimi/config.toml (readable by you only)."""
        from kimi_cli.cli.login import run_login

        raise typer.Exit(run_login(provider, base_url, model, api_key_stdin, check=not no_check))

    @command("doctor")
    def doctor_command(
        as_json: Annotated[
            bool, typer.Option("--json", help="One JSON object: the version, ok, the findings.")
        ] = False,
    ) -> None:
        """Check what a session here would use: the key, the endpoint and model, the context window, each
        sandbox backend and what it enforces, MCP and language servers, this folder's trust, the config files.
        Each finding comes with its fix; exit 1 when one would stop a session."""
        from kimi_cli.cli.doctor import cli_main

        raise typer.Exit(cli_main(["--json"] if as_json else []) or 0)

    @command("sessions")
    def sessions_command(
        workdir: Workdir = None,
        show_all: Annotated[bool, typer.Option("--all", help="List failed runs too (marked ✗).")] = False,
        prune: Annotated[bool, typer.Option("--prune", help="Remove sessions not touched for a while.")] = False,
        older_than: Annotated[
            float, typer.Option("--older-than", help="With --prune: idle this many days (default 30).", metavar="DAYS")
        ] = 30.0,
        open_id: Annotated[
            str | None,
            typer.Option("--open", help="Write the session's HTML page and open it in a browser.", metavar="ID"),
        ] = None,
    ) -> None:
        """List this workspace's sessions, newest first: steps, tokens and status of each (ids work with -r)."""
        from kimi_cli.cli.export import run_sessions

        raise typer.Exit(run_sessions(workdir, show_all, prune, older_than, open_id))

    @command("diff")
    def diff_command(
        session: SessionId = None,
        stat: Annotated[
            bool, typer.Option("--stat", help="Each changed file: status, lines added and removed.")
        ] = False,
        workdir: Workdir = None,
    ) -> None:
        """Print what a session changed in the workspace as a patch (`kimi diff | git apply` takes it)."""
        from kimi_cli.cli.diff import run_diff

        raise typer.Exit(run_diff(session, stat, workdir))

    @command("export")
    def export_command(
        session: SessionId = None,
        fmt: Annotated[str, typer.Option("--format", "-f", help="md | json | html.", metavar="FORMAT")] = "md",
        output: Output = None,
        workdir: Workdir = None,
    ) -> None:
        """Export a session as Markdown, JSON or a self-contained HTML page with plots; secrets redacted."""
        from kimi_cli.cli.export import run_export

        raise typer.Exit(run_export(session, fmt, output, workdir))
