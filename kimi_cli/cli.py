"""The `kimi` command. Thin: it parses flags and hands off; heavy modules load only when used."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="kimi",
    help=(
        "Kimi: an agentic coding assistant for Kimi K3.1 Pro and any OpenAI-compatible endpoint.\n\n"
        'Run `kimi` for an interactive session, or `kimi -p "fix the failing test"` headless.\n\n'
        "Exit codes: 0 done, 1 error, 2 usage/config error, 3 step or token budget exhausted, "
        "4 refused or cancelled, 5 provider unavailable after retries."
    ),
    add_completion=False,
    no_args_is_help=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from kimi_cli.version_info import version_report

        typer.echo(version_report(Path.cwd()))
        raise typer.Exit()


@app.callback()
def main_command(
    ctx: typer.Context,
    prompt: Annotated[
        str | None,
        typer.Option(
            "-p", "--prompt", help="Run this task headless and exit. '-' reads it from stdin.", metavar="TASK"
        ),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--output-format", help="Headless output: text | json | stream-json.", metavar="FORMAT")
    ] = "text",
    image: Annotated[
        list[str] | None,
        typer.Option(
            "--image",
            help="Attach an image (PNG/JPEG/WebP/GIF); repeatable. @shot.png in the prompt works too.",
            metavar="PATH",
        ),
    ] = None,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Resume the latest session here.")] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Resume the session with this id.", metavar="ID")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name.", metavar="NAME")] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider", help="moonshot (hosted API) | local (kimi engine) | openai (any base URL).", metavar="NAME"
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint URL.", metavar="URL")
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Stop after N steps (exit 3).", metavar="N")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Stop once this many tokens are used (exit 3).", metavar="N")
    ] = None,
    context_length: Annotated[
        int | None,
        typer.Option(
            "--context-length",
            help="The model's context window in tokens (default: asked from the server).",
            metavar="N",
        ),
    ] = None,
    mcp_config: Annotated[
        list[Path] | None,
        typer.Option("--mcp-config", help="An MCP servers JSON file to add (repeatable).", metavar="PATH"),
    ] = None,
    effort: Annotated[
        str | None,
        typer.Option(
            "--effort",
            help="Reasoning effort: low | high | max (default: high interactive, max with -p; KIMI_EFFORT).",
            metavar="LEVEL",
        ),
    ] = None,
    no_thinking: Annotated[
        bool, typer.Option("--no-thinking", help="Local engine: ask Kimi K3 to answer without thinking first.")
    ] = False,
    yolo: Annotated[bool, typer.Option("--yolo", help="Approve every action (the sandbox still applies).")] = False,
    trust_folder: Annotated[
        bool,
        typer.Option(
            "--trust", help="Trust this folder: its .kimi/ settings that widen what kimi may do apply (remembered)."
        ),
    ] = False,
    sandbox: Annotated[
        str | None,
        typer.Option("--sandbox", help="Shell sandbox: auto | bwrap | landlock | docker | none.", metavar="MODE"),
    ] = None,
    allow_network: Annotated[
        bool, typer.Option("--allow-network", help="Let sandboxed commands use the network.")
    ] = False,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", "-w", help="Workspace folder (default: current directory).", metavar="PATH"),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option("--branch", help="Create (or reuse) this git branch and switch to it first.", metavar="NAME"),
    ] = None,
    no_pack: Annotated[
        bool, typer.Option("--no-pack", help="Do not pack the repository into the context at start.")
    ] = False,
    pack_budget: Annotated[
        int | None,
        typer.Option("--pack-budget", help="Tokens for the packed repository (default: 60% of context).", metavar="N"),
    ] = None,
    compact_at: Annotated[
        float | None,
        typer.Option("--compact-at", help="Compact the conversation at this share of the context.", metavar="RATIO"),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option("-v", "--verbose", help="Debug logs (requests sent, key redacted) to stderr and ~/.kimi/logs/."),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    if verbose:
        from kimi_cli.logs import setup_logging

        setup_logging(True)
    if ctx.invoked_subcommand is not None:
        return
    if output_format not in ("text", "json", "stream-json"):
        _usage(f"--output-format must be text, json or stream-json, not {output_format!r}")
    if effort is not None and effort not in ("low", "high", "max"):
        _usage(f"--effort must be low, high or max, not {effort!r}")
    from kimi_cli.app import RunOptions, run_headless

    flags: dict[str, object] = {
        "model": model,
        "provider": provider,
        "base_url": base_url,
        "max_steps": max_steps,
        "max_tokens": max_tokens,
        "context_length": context_length,
        "thinking": False if no_thinking else None,
        "effort": effort,
        "mcp_config": [str(p) for p in mcp_config] if mcp_config else None,
        "yolo": yolo or None,
        "trust": trust_folder or None,
    }
    context = {"pack": False if no_pack else None, "budget": pack_budget, "compact_at": compact_at}
    if any(v is not None for v in context.values()):
        flags["context"] = {k: v for k, v in context.items() if v is not None}
    if sandbox is not None or allow_network:
        flags["sandbox"] = {k: v for k, v in (("mode", sandbox), ("allow_network", allow_network or None)) if v}
    if prompt == "-" or (prompt is None and not sys.stdin.isatty()):
        prompt = sys.stdin.read()
    root = (workdir or Path.cwd()).resolve()
    if not root.is_dir():
        _usage(f"--workdir {root} is not a directory")
    if prompt is None:
        from kimi_cli.runtime import SessionChoice
        from kimi_cli.ui.interactive.session import run_interactive

        raise typer.Exit(run_interactive(root, flags, SessionChoice("interactive", continue_, resume)))
    opts = RunOptions(
        prompt=prompt,
        workdir=root,
        output_format=output_format,  # type: ignore[arg-type]
        images=list(image or []),
        continue_latest=continue_,
        resume_id=resume,
        branch=branch,
        config_flags=flags,
    )
    raise typer.Exit(run_headless(opts))


def _usage(message: str) -> None:
    from kimi_cli.ui.sanitize import visible

    typer.echo(f"kimi: {visible(message)}", err=True)
    raise typer.Exit(2)


@app.command("sessions")
def sessions_command(
    workdir: Annotated[Path | None, typer.Option("--workdir", "-w", help="Workspace folder.", metavar="PATH")] = None,
) -> None:
    """List this workspace's sessions, newest first (ids work with --resume)."""
    import time

    from kimi_cli.session.store import list_sessions
    from kimi_cli.ui.sanitize import visible

    infos = list_sessions((workdir or Path.cwd()).resolve())
    if not infos:
        typer.echo("no sessions in this workspace yet")
        return
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        line = f"{info.id}  {when}  {info.status:<20} {info.steps:>4} steps  {info.title[:60]}"
        typer.echo(visible(line, one_line=True))


@app.command("ci-repair")
def ci_repair_command(
    test: Annotated[str, typer.Option("--test", help="The test command, e.g. 'pytest -q'.", metavar="COMMAND")],
    max_attempts: Annotated[int, typer.Option("--max-attempts", help="Agent runs before giving up.", metavar="N")] = 3,
    branch: Annotated[
        str | None, typer.Option("--branch", help="Work branch (default kimi/ci-repair-<short sha>).", metavar="NAME")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a markdown report (PR comment).", metavar="PATH")
    ] = None,
    output_format: Annotated[str, typer.Option("--output-format", help="text | json.", metavar="FORMAT")] = "text",
    test_timeout: Annotated[
        int, typer.Option("--test-timeout", help="Seconds for one test run.", metavar="SECONDS")
    ] = 600,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Steps per attempt.", metavar="N")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Token budget in all.", metavar="N")] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="NAME")] = None,
    provider: Annotated[str | None, typer.Option("--provider", metavar="NAME")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL")] = None,
    effort: Annotated[
        str | None, typer.Option("--effort", help="Reasoning effort: low | high | max (default max).", metavar="LEVEL")
    ] = None,
    sandbox: Annotated[
        str | None, typer.Option("--sandbox", help="auto | bwrap | landlock | docker | none.", metavar="MODE")
    ] = None,
    workdir: Annotated[Path | None, typer.Option("--workdir", "-w", metavar="PATH")] = None,
) -> None:
    """Run the tests; if they fail, let the agent fix them, commit on a branch, and report. Never pushes.

    Exit codes: 0 fixed or already green (no model call then); 3 not fixed within the budget; 1 error.
    """
    if output_format not in ("text", "json"):
        _usage("--output-format must be text or json")
    if not 1 <= test_timeout <= 3600:
        _usage("--test-timeout must be between 1 and 3600 seconds")
    if effort is not None and effort not in ("low", "high", "max"):
        _usage(f"--effort must be low, high or max, not {effort!r}")
    from kimi_cli.ci.repair import run_ci_repair

    flags: dict[str, object] = {
        k: v
        for k, v in (
            ("model", model),
            ("provider", provider),
            ("base_url", base_url),
            ("max_steps", max_steps),
            ("max_tokens", max_tokens),
            ("effort", effort),
        )
        if v
    }
    if sandbox:
        flags["sandbox"] = {"mode": sandbox}
    root = (workdir or Path.cwd()).resolve()
    raise typer.Exit(run_ci_repair(root, test, max_attempts, branch, report, output_format, test_timeout, flags))


@app.command("acp")
def acp_command(
    model: Annotated[str | None, typer.Option("--model", metavar="NAME")] = None,
    provider: Annotated[str | None, typer.Option("--provider", metavar="NAME")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL")] = None,
    sandbox: Annotated[
        str | None, typer.Option("--sandbox", help="auto | bwrap | landlock | docker | none.", metavar="MODE")
    ] = None,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed and other ACP clients).

    Only protocol messages go to stdout; logs go to ~/.kimi/logs/.
    """
    from kimi_cli.commands.acp import serve  # kimi_cli.entry usually runs it without Typer

    raise typer.Exit(serve(model, provider, base_url, sandbox))


@app.command("trust")
def trust_command(
    path: Annotated[Path | None, typer.Argument(help="The folder (default: current directory).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted folders.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting the folder.")] = False,
) -> None:
    """Trust a folder: its .kimi/config.toml and .kimi/mcp.json may then widen what kimi does (an endpoint,
    MCP servers, no sandbox, allow rules). Remembered with a digest of those settings: a change asks again."""
    from kimi_cli.commands.trust import run_trust

    raise typer.Exit(run_trust(path, list_, revoke))


def _add_subapps() -> None:
    from kimi_cli.commands.mcp import mcp_app
    from kimi_cli.engine.cli import engine_app

    app.add_typer(engine_app, name="engine")
    app.add_typer(mcp_app, name="mcp")


_add_subapps()


# `pack` and `undo` parse their own arguments (argparse) and run before Typer is even imported: they are
# the commands people time. These entries only list them in `kimi --help`.
PASSTHROUGH = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


@app.command("pack", context_settings=PASSTHROUGH)
def pack_command(ctx: typer.Context) -> None:
    """Pack the repository as the agent sees it (kimi pack --help for options)."""
    from kimi_cli.commands.pack import cli_main

    raise typer.Exit(cli_main(list(ctx.args)))


@app.command("prompt", context_settings=PASSTHROUGH)
def prompt_command(ctx: typer.Context) -> None:
    """Print what the model is told first: system message and tools (kimi prompt --help for options)."""
    from kimi_cli.commands.prompt import cli_main

    raise typer.Exit(cli_main(list(ctx.args)))


@app.command("undo", context_settings=PASSTHROUGH)
def undo_command(ctx: typer.Context) -> None:
    """Restore files as they were N agent steps ago (kimi undo --help for options)."""
    from kimi_cli.commands.undo import cli_main

    raise typer.Exit(cli_main(list(ctx.args)))


def run() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(4)
