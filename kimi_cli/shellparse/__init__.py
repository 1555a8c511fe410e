"""Shell command lines read exactly enough to decide approval rules (see lexer.py and rules.py)."""

from __future__ import annotations

from kimi_cli.shellparse.lexer import Unreadable, parse
from kimi_cli.shellparse.rules import (
    Verdict,
    allowed_by,
    check,
    command_prefix,
    denied_by,
    has_control_chars,
    programs,
    simple_parts,
    simple_words,
)

__all__ = [
    "Unreadable",
    "Verdict",
    "allowed_by",
    "check",
    "command_prefix",
    "denied_by",
    "has_control_chars",
    "parse",
    "programs",
    "simple_parts",
    "simple_words",
]
