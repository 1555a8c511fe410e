"""The `kimi` console script. `pack`, `undo` and `acp` run from here without importing Typer (they are timed)."""

from __future__ import annotations

import importlib
import sys

FAST_COMMANDS = {"pack": "kimi_cli.cli.pack", "undo": "kimi_cli.cli.undo", "acp": "kimi_cli.cli.acp"}
HELP = {"-h", "--help"}  # help (and argument errors) come from Typer: one style for every command


def main() -> None:
    from kimi_cli.util.paths import secure_home

    secure_home()  # ~/.kimi and the cache are 0700, their top entries tightened (a few syscalls)
    if len(sys.argv) > 1 and sys.argv[1] in FAST_COMMANDS and not HELP.intersection(sys.argv[2:]):
        try:
            code = importlib.import_module(FAST_COMMANDS[sys.argv[1]]).cli_main(sys.argv[2:])
        except KeyboardInterrupt:
            sys.exit(4)
        if code is not None:
            sys.exit(code)
    if len(sys.argv) > 1 and sys.argv[1] in ("pack", "undo"):  # help, or an argument error to show
        from kimi_cli.cli.subcommands import run_single

        run_single(sys.argv[1], sys.argv[2:])
        return
    from kimi_cli.cli.main import run

    run()
