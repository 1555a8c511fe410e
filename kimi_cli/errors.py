"""Exit codes and the exceptions that carry them to the CLI edge."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, documented in README.md."""

    OK = 0
    ERROR = 1
    USAGE = 2
    BUDGET = 3
    CANCELLED = 4
    PROVIDER_UNAVAILABLE = 5


class KimiError(Exception):
    """An error with a message meant for the user and the exit code it maps to."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(KimiError):
    """Bad or missing configuration: the user must fix a file, a flag or a variable."""

    exit_code = ExitCode.USAGE


class MissingKey(ConfigError):
    """No API key for a provider that needs one: an interactive session runs `kimi login` in place."""


class AuthError(ConfigError):
    """The model server refused the API key (HTTP 401/403): the key is what to fix, not the request."""


class ProviderUnavailable(KimiError):
    """The model endpoint could not be reached, or kept failing, after all retries."""

    exit_code = ExitCode.PROVIDER_UNAVAILABLE
