"""`kimi --version`: the version, the Python it runs on, installed extras and the effective endpoint."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path

from kimi_cli import __version__


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def version_report(workdir: Path) -> str:
    lines = [f"kimi {__version__}"]
    lines.append(f"python {platform.python_version()} ({sys.executable})")
    vllm = _installed("vllm")
    lines.append(f"engine extra: {'vllm ' + vllm if vllm else 'vllm not installed'}")
    lines.append(endpoint_line(workdir))
    lines.append(sandbox_line(workdir))
    return "\n".join(lines)


def sandbox_line(workdir: Path) -> str:
    """Which backend `auto` (or the configured mode) would pick here, and why: probed for real."""
    import shutil
    import tempfile

    from kimi_cli.config import load_config
    from kimi_cli.errors import KimiError
    from kimi_cli.sandbox.policy import build_policy
    from kimi_cli.sandbox.select import choose_sandbox

    tmp = Path(tempfile.mkdtemp(prefix="kimi-probe-"))
    try:
        config = load_config(workdir)
        if config.sandbox.mode in ("none", "docker"):
            return f"sandbox: {config.sandbox.mode} (configured)"
        policy = build_policy(workdir, tmp, network=config.sandbox.allow_network)
        choice = choose_sandbox(config.sandbox.mode, policy, 1000, {}, "probe")
        close = getattr(choice.sandbox, "close_sync", None)
        if close is not None:
            close()
        return f"sandbox: {choice.sandbox.name} ({choice.reason})"
    except KimiError as exc:
        return f"sandbox: none usable ({' '.join(str(exc).split())[:300]})"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def endpoint_line(workdir: Path) -> str:
    from kimi_cli.config import load_config, resolve_endpoint
    from kimi_cli.errors import KimiError

    try:
        config = load_config(workdir)
        endpoint = resolve_endpoint(config)
    except KimiError as exc:
        first = str(exc).splitlines()[0]
        return f"endpoint: not usable here ({first})" + _table_line(workdir)
    from kimi_cli.llm.endpoint_info import resolve_context_length
    from kimi_cli.llm.models import lookup, resolve_effort

    overrides = {k: v.model_dump(exclude_none=True) for k, v in config.models.items()}
    info = lookup(endpoint.model, endpoint.provider, overrides)
    window, source = resolve_context_length(endpoint, config.context_length, info)
    effort = (
        f"effort {config.effort} (configured)"
        if config.effort
        else f"effort {resolve_effort(None, 'interactive')} interactive, {resolve_effort(None, 'headless')} with -p"
    )
    return (
        f"endpoint: {endpoint.provider} · {endpoint.base_url} · model {endpoint.model} · "
        f"context {window:,} tokens (from {source})\n"
        f"model table: {info.describe()}\n"
        f"{effort}" + ("" if info.reasoning != "none" else " (not sent: this model takes no reasoning control)")
    )


def _table_line(workdir: Path) -> str:
    """The model table's entry for the configured model, even when no endpoint is usable yet."""
    from kimi_cli.config import DEFAULT_MODEL, load_config
    from kimi_cli.errors import KimiError
    from kimi_cli.llm.models import lookup

    try:
        config = load_config(workdir)
    except KimiError:
        return ""
    overrides = {k: v.model_dump(exclude_none=True) for k, v in config.models.items()}
    return "\nmodel table: " + lookup(config.model or DEFAULT_MODEL, config.provider or "", overrides).describe()
