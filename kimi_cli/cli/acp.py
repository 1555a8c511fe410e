"""`kimi acp`, parsed here with argparse: an editor waits on its start, so it runs without Typer and pydantic
(kimi_cli.entry sends it here) and answers `initialize` before the ACP SDK is imported (acp_server.early)."""

from __future__ import annotations

import argparse
import asyncio


def cli_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kimi acp",
        description="Serve the Agent Client Protocol on stdin/stdout, for editors (Zed and other ACP clients). "
        "Only protocol messages go to stdout; logs go to ~/.kimi/logs/.",
    )
    parser.add_argument("--model", metavar="NAME")
    parser.add_argument("--provider", metavar="NAME")
    parser.add_argument("--base-url", metavar="URL", dest="base_url")
    parser.add_argument("--sandbox", metavar="MODE", help="auto | bwrap | landlock | docker | none.")
    args = parser.parse_args(argv)
    return serve(args.model, args.provider, args.base_url, args.sandbox)


def serve(model: str | None, provider: str | None, base_url: str | None, sandbox: str | None) -> int:
    from kimi_cli.frontends.acp.early import serve_early
    from kimi_cli.util.logs import setup_logging

    setup_logging(True, to_stderr=False)
    flags: dict[str, object] = {
        k: v for k, v in (("model", model), ("provider", provider), ("base_url", base_url)) if v
    }
    if sandbox:
        flags["sandbox"] = {"mode": sandbox}
    return asyncio.run(serve_early(flags))
