"""The `kimi` command. Thin: it parses flags and hands off; heavy modules load only when used."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kimi_cli.cli.start import expand_argv, is_ci_repair, json_format
from kimi_cli.cli.start import usage as _usage

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
    rich_markup_mode="rich",  # one help style for every command (help texts escape their brackets)
    pretty_exceptions_enable=False,
)


def _summaries(typer_app: typer.Typer) -> None:
    """Each command's summary: the first paragraph of its help, joined into one line."""
    import inspect

    for info in typer_app.registered_commands:
        text = info.help or inspect.getdoc(info.callback) or ""
        first = text.split("\n\n", 1)[0]
        if first and not info.short_help:
            info.short_help = " ".join(first.split())
    for group in typer_app.registered_groups:  # kimi engine ..., kimi mcp ...
        if group.typer_instance is not None:
            _summaries(group.typer_instance)


def _version(value: bool) -> None:
    if value:  # the version alone; the health report is `kimi doctor` (kimi_cli/cli/doctor.py)
        from kimi_cli import __version__

        typer.echo(f"kimi {__version__}")
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
        str | None,
        typer.Option(
            "--resume",
            "-r",
            help="Resume the session with this id (or its start); without an id, pick one.",
            metavar="ID",
        ),
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
    plan: Annotated[
        bool, typer.Option("--plan", help="Plan mode: study with read-only tools and answer with a plan.")
    ] = False,
    output_schema: Annotated[
        Path | None,
        typer.Option(
            "--output-schema",
            help="With -p: the final answer must be JSON valid against this JSON Schema.",
            metavar="FILE",
        ),
    ] = None,
    visual_check: Annotated[
        str | None,
        typer.Option(
            "--visual-check",
            help="With -p: render this workspace page (or the URL serving it) in headless Chromium after each edit "
            "and show the model the screenshot.",
            metavar="FILE|URL",
        ),
    ] = None,
    visual_target: Annotated[
        float | None,
        typer.Option(
            "--visual-target",
            help="With --visual-check: go on until the screenshot's SSIM against the --image reference reaches this.",
            metavar="SSIM",
        ),
    ] = None,
    visual_size: Annotated[
        str | None,
        typer.Option(
            "--visual-size", help="With --visual-check: the window, WxH (default: the reference's size).", metavar="WxH"
        ),
    ] = None,
    fork: Annotated[
        str | None,
        typer.Option("--fork", help="Start from a copy of this session (same history and undo points).", metavar="ID"),
    ] = None,
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
    worktree: Annotated[
        str | None,
        typer.Option(
            "--worktree",
            help="Run the session in a new git worktree of this repository, on branch kimi/NAME (NAME optional); "
            "the main checkout stays as it is. kimi worktree list|merge|remove manage them.",
            metavar="[NAME]",
        ),
    ] = None,
    attempts: Annotated[
        int | None,
        typer.Option(
            "--attempts",
            help="With -p and --check: N attempts at once, each in its own worktree; the passing one with the "
            "smallest change is merged, the others stay as branches.",
            metavar="N",
        ),
    ] = None,
    check: Annotated[
        str | None,
        typer.Option(
            "--check",
            help="With -p: run this command in the sandbox when the agent ends; its result is reported.",
            metavar="COMMAND",
        ),
    ] = None,
    patch: Annotated[
        Path | None,
        typer.Option(
            "--patch",
            help="With -p: write the session's change to this file as a patch (git apply takes it).",
            metavar="FILE",
        ),
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
        from kimi_cli.util.logs import setup_logging

        setup_logging(True)
    if ctx.invoked_subcommand is not None:
        return
    from kimi_cli.cli.start import start

    start(prompt=prompt, output_format=output_format, image=image, continue_=continue_, resume=resume, model=model,
          provider=provider, base_url=base_url, max_steps=max_steps, max_tokens=max_tokens,
          context_length=context_length, mcp_config=mcp_config, effort=effort, no_thinking=no_thinking, yolo=yolo,
          plan=plan, output_schema=output_schema, visual_check=visual_check, visual_target=visual_target,
          visual_size=visual_size, fork=fork, trust_folder=trust_folder, sandbox=sandbox, allow_network=allow_network,
          workdir=workdir, branch=branch, worktree=worktree, attempts=attempts, check=check, patch=patch,
          no_pack=no_pack, pack_budget=pack_budget, compact_at=compact_at)  # fmt: skip


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
    pass_env: Annotated[
        list[str] | None,
        typer.Option(
            "--pass-env",
            help="Pass this environment variable to the test command and the agent's commands (repeatable; "
            "never an API key variable).",
            metavar="NAME",
        ),
    ] = None,
    allow_network: Annotated[
        bool,
        typer.Option("--allow-network", help="Give the test command and the agent's commands the network."),
    ] = False,
    pack_budget: Annotated[
        int | None,
        typer.Option("--pack-budget", help="Tokens for the packed repository (default: 60% of context).", metavar="N"),
    ] = None,
    no_pack: Annotated[
        bool, typer.Option("--no-pack", help="Do not pack the repository: the agent reads files as it needs them.")
    ] = False,
    attempts: Annotated[
        int,
        typer.Option(
            "--attempts",
            help="N whole repairs at once, each in its own git worktree with the same checks; the fixed one with "
            "the smallest change is kept on the run's branch, the others removed.",
            metavar="N",
        ),
    ] = 1,
    attempt_of: Annotated[str | None, typer.Option("--attempt-of", hidden=True)] = None,
) -> None:
    """Run the tests; if they fail, let the agent fix them, commit on a branch of the run's own, and report.
    Never pushes. Uncommitted changes are stashed for the run and put back after it; the commit holds only the
    fix (new files the tests pass without are left out and listed). The JSON result and --report are written
    whatever happens, errors included; progress goes to stderr, with a cost estimate before the first request.

    Exit codes: 0 fixed (green and committed) or already green (no model call then); 3 not fixed within the
    budget (the branch keeps the best attempt); 6 green but not committed (a hook refused the commit, or no
    file changed); 2 usage or configuration error, a refused API key (401) included; 5 the model's server
    could not be reached; 4 cancelled; 1 any other error.
    """
    if output_format not in ("text", "json"):
        _usage("--output-format must be text or json")
    if not 1 <= test_timeout <= 3600:
        _usage("--test-timeout must be between 1 and 3600 seconds")
    if effort is not None and effort not in ("low", "high", "max"):
        _usage(f"--effort must be low, high or max, not {effort!r}")
    from kimi_cli.frontends.ci_repair.repair import run_ci_repair
    from kimi_cli.sandbox.env import pass_env_refusal

    for name in pass_env or []:
        refusal = pass_env_refusal(name)
        if refusal:
            _usage(f"--pass-env {name}: {refusal}")
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
    if pack_budget is not None and pack_budget < 1:
        _usage("--pack-budget must be a positive number of tokens")
    context = {"pack": False if no_pack else None, "budget": pack_budget}
    if any(v is not None for v in context.values()):
        flags["context"] = {k: v for k, v in context.items() if v is not None}
    root = (workdir or Path.cwd()).resolve()
    if not root.is_dir():
        _usage(f"--workdir {root}: no such folder")
    if not 1 <= attempts <= 8:
        _usage("--attempts must be between 1 and 8")
    of = _attempt_of(attempt_of) if attempt_of else None
    argv = sys.argv[sys.argv.index("ci-repair") + 1 :] if "ci-repair" in sys.argv else []
    code = run_ci_repair(root, test, max_attempts, branch, report, output_format, test_timeout, flags, pass_env,
                         allow_network, attempts, of, argv)  # fmt: skip
    raise typer.Exit(code)


def _attempt_of(value: str) -> tuple[int, int]:
    """--attempt-of K/N (hidden): the run is attempt K of N in the worktree ci-repair --attempts made."""
    k, _, n = value.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        _usage("--attempt-of takes K/N")
    return int(k), int(n)


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
    from kimi_cli.cli.acp import serve  # kimi_cli.entry usually runs it without Typer

    raise typer.Exit(serve(model, provider, base_url, sandbox))


@app.command("init")
def init_command(
    workdir: Annotated[Path | None, typer.Option("--workdir", "-w", metavar="PATH")] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="NAME")] = None,
    provider: Annotated[str | None, typer.Option("--provider", metavar="NAME")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL")] = None,
    sandbox: Annotated[
        str | None, typer.Option("--sandbox", help="auto | bwrap | landlock | docker | none.", metavar="MODE")
    ] = None,
) -> None:
    """Have the agent write AGENTS.md (or improve it) from the repository: build and test commands, layout,
    conventions. Shows the diff; `kimi undo` takes it back."""
    from kimi_cli.frontends.init_agents import run_init

    named = (("model", model), ("provider", provider), ("base_url", base_url))
    flags: dict[str, object] = {k: v for k, v in named if v}
    if sandbox:
        flags["sandbox"] = {"mode": sandbox}
    raise typer.Exit(run_init((workdir or Path.cwd()).resolve(), flags))


@app.command("trust")
def trust_command(
    path: Annotated[Path | None, typer.Argument(help="The folder (default: current directory).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted folders.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting the folder.")] = False,
) -> None:
    """Trust a folder: its .kimi/config.toml and .kimi/mcp.json may then widen what kimi does (an endpoint,
    MCP servers, no sandbox, allow rules). Remembered with a digest of those settings: a change asks again."""
    from kimi_cli.cli.trust import run_trust

    raise typer.Exit(run_trust(path, list_, revoke))


def _add_subapps() -> None:
    from kimi_cli.cli.mcp import mcp_app
    from kimi_cli.cli.worktree import worktree_app
    from kimi_cli.engine.cli import engine_app

    app.add_typer(engine_app, name="engine")
    app.add_typer(mcp_app, name="mcp")
    app.add_typer(worktree_app, name="worktree")


_add_subapps()


def _add_tools() -> None:
    from kimi_cli.cli.subcommands import help_style, register

    help_style()
    register(app)


_add_tools()
_summaries(app)


def run() -> None:
    sys.argv[1:] = expand_argv(sys.argv[1:])
    if {"-h", "--help"}.intersection(sys.argv[1:]):
        from kimi_cli.cli.subcommands import light_help

        light_help()
    try:
        if json_format(sys.argv[1:]) or is_ci_repair(sys.argv[1:]):
            _run_json()
        app()
    except KeyboardInterrupt:
        sys.exit(4)


def _run_json() -> None:
    """--output-format json: a bad flag is still one JSON `result` object on stdout (and the usual words
    on stderr), so a script never gets an empty stdout. ci-repair comes here in every format: its --report
    is written for a bad flag too."""
    try:  # this Typer carries its own click; older ones use click itself
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover
        from click.exceptions import ClickException  # type: ignore[assignment]
    ClickExit = typer.Exit
    try:
        code = app(standalone_mode=False)
    except ClickException as exc:
        from kimi_cli.frontends.headless.app import result_object
        from kimi_cli.util.jsonsafe import dumps

        exc.show()
        if is_ci_repair(sys.argv[1:]):  # ci-repair's JSON result and --report, whatever the format
            from kimi_cli.frontends.ci_repair.repair import usage_failure

            sys.exit(usage_failure(sys.argv[sys.argv.index("ci-repair") + 1 :], exc.format_message()))
        sys.stdout.write(dumps(result_object("usage_error", 2, message=exc.format_message(), error="usage")) + "\n")
        sys.exit(2)
    except ClickExit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
