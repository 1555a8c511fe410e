"""`kimi prompt`: print what the model is told at the start of a session here, byte for byte.

The system message (instructions, AGENTS.md, the pack ranked for --task, the environment block) comes from
the same PrefixBuilder and SessionContext a session uses, and the tools block from the same tool classes,
so what this prints is what `kimi -p TASK` sends first (tests/e2e/test_prompt.py compares the two). MCP servers
are not started: their tools, when configured, follow the built-in ones in a session.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimi_cli.config import Config
    from kimi_cli.tools.base import Tool


def session_tools(root: Path, config: Config, provider: str) -> list[Tool[Any]]:
    """The built-in tools a session in `root` gets under `config`, in the order the toolbox adds them
    (kimi_cli.agent.toolbox.make_agent). Their schemas do not depend on the live objects (sandbox, approver,
    task manager), so none is made."""
    from kimi_cli.agent.subagents.runner import SubagentFactory, SubagentRunner
    from kimi_cli.agent.toolbox import default_tools
    from kimi_cli.tools.git_tool import Git
    from kimi_cli.tools.shell import Shell
    from kimi_cli.tools.subagent import AgentTool
    from kimi_cli.tools.tasks import TaskOutput, TaskStop

    builtin: list[Any] = [Shell(None), Git(), TaskOutput(None), TaskStop(None)]  # type: ignore[arg-type]
    if config.web.enabled:
        from kimi_cli.tools.web import FetchURL, SearchWeb

        builtin.append(FetchURL(None, [], [], None))  # type: ignore[arg-type]
        if config.web.search and provider == "moonshot":
            builtin.append(SearchWeb())
    if config.subagents:

        def tools() -> list[Tool[Any]]:
            return default_tools(list(builtin), grep_timeout=config.grep_timeout).tools

        factory = SubagentFactory(root, tools, lambda _run: None, lambda _t, _m: {}, None)  # type: ignore[arg-type,return-value]
        builtin.append(AgentTool(lambda *_a: None, SubagentRunner(factory, lambda _e: None).kind_facts()))  # type: ignore[arg-type,return-value]
    return default_tools(builtin, grep_timeout=config.grep_timeout).tools


def build_prefix(root: Path, task: str, pack: bool | None, budget: int | None) -> dict[str, Any]:
    """{"system": the system message text, "tools": the schemas, "notes": [...]}: a session's opening."""
    from kimi_cli.agent.prefix import PrefixBuilder
    from kimi_cli.config import load_config, resolve_endpoint
    from kimi_cli.context.session_context import SessionContext
    from kimi_cli.errors import ConfigError
    from kimi_cli.instructions.prompt import session_environment
    from kimi_cli.llm.endpoint_info import resolve_context_length
    from kimi_cli.llm.models import lookup

    config = load_config(root, {})
    notes: list[str] = []
    overrides = {k: v.model_dump(exclude_none=True) for k, v in config.models.items()}
    try:
        endpoint = resolve_endpoint(config)
        provider, model = endpoint.provider, endpoint.model
        window, _source = resolve_context_length(endpoint, config.context_length, lookup(model, provider, overrides))
    except ConfigError as exc:  # no key, say: the prefix does not need one; the window is the table's
        from kimi_cli.config import DEFAULT_MODEL, default_provider

        provider = config.provider or default_provider(config.base_url)
        model = config.model or DEFAULT_MODEL
        window = config.context_length or lookup(model, provider, overrides).context_window
        notes.append(f"endpoint not usable here ({str(exc).splitlines()[0]}); window from the model table")
    from kimi_cli.extensions.skills.loader import skills_slot

    prefix = PrefixBuilder(
        root, skills=skills_slot(root)[1], environment=session_environment(root, config, model, window)
    )
    context = SessionContext(
        root,
        prefix.message,
        budget=budget or config.context.budget or int(window * config.context.budget_ratio),
        context_length=window,
        compact_at=config.context.compact_at,
        pack_repo=config.context.pack if pack is None else pack,
        model=model,
    )
    system = context.system_message(task)["content"]
    schemas = [tool.schema() for tool in session_tools(root, config, provider)]
    return {"system": system, "tools": schemas, "model": model, "window": window, "notes": notes}


def render_text(built: dict[str, Any]) -> str:
    system, tools = built["system"], built["tools"]
    tools_json = json.dumps(tools)
    lines = [f"# System message ({len(system):,} characters)", "", system, ""]
    lines += [f"# Tools ({len(tools)} tools, {len(tools_json):,} characters as JSON)", ""]
    lines.append(json.dumps(tools, indent=2, ensure_ascii=False))
    lines += ["", "# MCP servers' tools, when configured, follow these in a session (kimi mcp list shows them)."]
    lines += [f"# note: {note}" for note in built["notes"]]
    return "\n".join(lines) + "\n"


def cli_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="kimi prompt",
        description="Print what the model is told first: the system message (instructions, AGENTS.md, the "
        "packed repository, the environment) and the tools block.",
    )
    parser.add_argument("path", nargs="?", type=Path, help="repository folder (default: current directory)")
    parser.add_argument("-t", "--task", default="", help="rank the pack for this task (as kimi -p TASK would)")
    parser.add_argument("--no-pack", action="store_true", help="leave the packed repository out")
    parser.add_argument("-b", "--budget", type=int, help="pack budget in tokens (default: as a session)")
    parser.add_argument("-f", "--format", default="text", choices=("text", "json"), dest="fmt")
    parser.add_argument("-o", "--output", type=Path, help="write to this file")
    args = parser.parse_args(argv)
    root = (args.path or Path.cwd()).resolve()
    if not root.is_dir():
        parser.exit(2, f"kimi prompt: {root} is not a directory\n")
    from kimi_cli.errors import KimiError

    try:
        built = build_prefix(root, args.task, False if args.no_pack else None, args.budget)
    except KimiError as exc:
        from kimi_cli.util.sanitize import visible  # a folder's config text may carry escapes

        sys.stderr.write(visible(f"kimi: {exc}") + "\n")
        return int(exc.exit_code)
    from kimi_cli.util.jsonsafe import dumps  # C1 and bidi controls escaped too

    body = render_text(built) if args.fmt == "text" else dumps(built) + "\n"
    if args.output is not None:
        args.output.write_text(body, encoding="utf-8")
        sizes = f"{len(built['system']):,} + {len(json.dumps(built['tools'])):,} characters"
        sys.stderr.write(f"wrote {args.output} (system message + tools: {sizes})\n")
    else:
        if sys.stdout.isatty():  # a terminal shows AGENTS.md's and the files' escapes, never obeys them (as kimi pack)
            from kimi_cli.util.sanitize import visible

            body = visible(body)
        sys.stdout.write(body)
    return 0
