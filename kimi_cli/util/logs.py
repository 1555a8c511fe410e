"""Debug logs: `-v` sends them to stderr and ~/.kimi/logs/, with secrets redacted on the way out."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from kimi_cli.util.paths import kimi_home
from kimi_cli.util.redact import redact

LOGGER = "kimi"


class RedactSecrets(logging.Filter):
    """Each record's final message through the one redactor (kimi_cli.util.redact); runs on every handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = redact(message)
        if hidden != message:
            record.msg, record.args = hidden, None
        return True


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
