"""Every string of an export through the one redactor (kimi_cli.util.redact), and the secrets an export knows
besides the shapes the redactor sees: the API key of the user's config and environment, and the values of
the user's environment variables whose names say they are secret (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ...).

A session log holds what tools printed, and a command may have printed a token; the log itself is private
(0600), an export is made to be shared.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, TypeVar

from kimi_cli.util.redact import redact, register_secret, secret_name

T = TypeVar("T")


def redact_tree(value: T) -> T:
    """`value` (a dataclass, list, dict or string, nested) with each string redacted, in place for
    dataclasses; dict keys are kept (they are ours)."""
    return _walk(value)


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_walk(v) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            setattr(value, item.name, _walk(getattr(value, item.name)))
        return value
    return value


def register_known_secrets(environ: Mapping[str, str] | None = None) -> None:
    """The API keys kimi would send and the user's secret-named variables: registered, so each value is
    hidden wherever it appears in an export, even where nothing about the text says it is a secret."""
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if secret_name(name) and not value.startswith(("/", "~")):  # SSH_AUTH_SOCK's path is no secret
            register_secret(value.strip())
    try:
        from kimi_cli.config import Config
        from kimi_cli.hostsafe.settings_read import read_settings_text
        from kimi_cli.util.paths import kimi_home

        path = kimi_home() / "config.toml"
        if path.is_file():
            import tomllib

            config = Config.model_validate(tomllib.loads(read_settings_text(path)))
            if config.api_key is not None:
                register_secret(config.api_key.get_secret_value())
    except Exception:  # an unreadable config has no key to hide; the shapes are still hidden
        return
