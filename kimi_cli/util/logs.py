"""Debug logs: `-v` sends them to stderr and ~/.kimi/logs/, with secrets redacted on the way out."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import ClassVar

from kimi_cli.util.paths import kimi_home

LOGGER = "kimi"
MIN_SECRET_LEN = 8  # shorter "keys" are dummies for local servers (e.g. "x"), not secrets


class RedactSecrets(logging.Filter):
    """Replaces each registered secret in a record's final message; runs on every handler."""

    secrets: ClassVar[set[str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            for secret in self.secrets:
                message = message.replace(secret, "[REDACTED]")
            record.msg, record.args = message, None
        return True


def register_secret(value: str | None) -> None:
    """Make sure `value` never appears in a log line (the API key, a header token)."""
    if value and len(value) >= MIN_SECRET_LEN:
        RedactSecrets.secrets.add(value)


def log_dir() -> Path:
    return kimi_home() / "logs"


def setup_logging(verbose: bool, to_stderr: bool = True) -> Path | None:
    """With verbose, debug records go to stderr (unless a protocol owns it) and to a file; returns the file."""
    logger = logging.getLogger(LOGGER)
    if not verbose:
        logger.addHandler(logging.NullHandler())
        return None
    logger.setLevel(logging.DEBUG)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    path = log_dir() / f"kimi-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        from kimi_cli.util.paths import make_private_dir, open_private

        make_private_dir(path.parent)
        open_private(path).close()  # created 0600 before the handler appends to it
        handlers: list[logging.Handler] = [logging.FileHandler(path, encoding="utf-8")]
    except OSError:
        handlers, path = [], None  # type: ignore[assignment]
    if to_stderr:
        handlers.append(logging.StreamHandler())
    for handler in handlers:
        handler.setFormatter(fmt)
        handler.addFilter(RedactSecrets())
        logger.addHandler(handler)
    return path


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(f"{LOGGER}.{name}")
