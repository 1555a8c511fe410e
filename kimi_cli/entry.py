"""The `kimi` console script. `pack`, `undo`, `acp`, `doctor` and the main command with plain flags (`kimi -p TASK`)
run from here without importing Typer (they are timed), and `kimi --version` imports nothing but the version."""

from __future__ import annotations

import sys
from collections.abc import Callable

HELP = {"-h", "--help"}  # help (and argument errors) come from Typer: one style for every command


def _pack(argv: list[str]) -> int | None:
    from kimi_cli.cli.pack import cli_main

    return cli_main(argv)


def _undo(argv: list[str]) -> int | None:
    from kimi_cli.cli.undo import cli_main

    return cli_main(argv)


def _acp(argv: list[str]) -> int | None:
    from kimi_cli.cli.acp import cli_main

    return cli_main(argv)


# Each imports its command's module only when that command runs, so `kimi --help` and `kimi -p` import none.
# A command returns its exit code, or None when Typer should answer (help, an argument error).
def _doctor(argv: list[str]) -> int | None:
    from kimi_cli.cli.doctor import cli_main

    return cli_main(argv)


FAST_COMMANDS: dict[str, Callable[[list[str]], int | None]] = {
    "pack": _pack, "undo": _undo, "acp": _acp, "doctor": _doctor,
}  # fmt: skip


def main() -> None:
    from kimi_cli.util import timing  # KIMI_TIMING=1: the run's phases on stderr at exit (standard library only)

    timing.mark("interpreter, site, entry")
    if sys.argv[1:] in (["--version"], ["-V"]):  # the version alone, before anything else is imported
        from kimi_cli import __version__
        from kimi_cli.util.pipes import survives_closed_pipe

        def version() -> None:
            sys.stdout.write(f"kimi {__version__}\n")

        if survives_closed_pipe(version)() is not None:  # `kimi --version | true`: exit 1 quietly, as Typer's
            sys.exit(1)
        return
    from kimi_cli.util.paths import secure_home

    secure_home()  # ~/.kimi and the cache are 0700, their top entries tightened (a few syscalls)
    if sys.argv[1:] in (["--help"], ["-h"]):  # the rendered help, cached under a key of all it depends on
        from kimi_cli.cli import help_cache

        if not help_cache.show(sys.argv[1:]):
            from kimi_cli.cli.main import run

            help_cache.render_and_store(sys.argv[1:], run)
        return
    from kimi_cli.extensions import hand_down_to_trust

    hand_down_to_trust()  # the extensions' folder readers and kimi's defaults, for folder trust (hostsafe)
    if len(sys.argv) > 1 and sys.argv[1] in FAST_COMMANDS and not HELP.intersection(sys.argv[2:]):
        try:
            code = FAST_COMMANDS[sys.argv[1]](sys.argv[2:])
        except KeyboardInterrupt:
            sys.exit(4)
        if code is not None:
            sys.exit(code)
    if len(sys.argv) > 1 and sys.argv[1] in ("pack", "undo", "doctor"):  # help, or an argument error to show
        from kimi_cli.cli.subcommands import run_single

        run_single(sys.argv[1], sys.argv[2:])
        return
    from kimi_cli.cli.headless_args import run_without_typer

    run_without_typer(sys.argv[1:])  # the main command with plain flags (`kimi -p TASK ...`) exits here
    from kimi_cli.cli.main import run

    run()
