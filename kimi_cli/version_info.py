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
    return "\n".join(lines)


def endpoint_line(workdir: Path) -> str:
    from kimi_cli.config import load_config, resolve_endpoint
    from kimi_cli.errors import KimiError

    try:
        config = load_config(workdir)
        endpoint = resolve_endpoint(config)
    except KimiError as exc:
        first = str(exc).splitlines()[0]
        return f"endpoint: not usable here ({first})"
    return f"endpoint: {endpoint.provider} · {endpoint.base_url} · model {endpoint.model}"
