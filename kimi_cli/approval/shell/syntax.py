"""The shapes a command line is read into, and the exception for lines that cannot be read exactly."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_DEPTH = 12  # nested substitutions / `bash -c` bodies; deeper is unreadable
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
SPECIAL_PARAMS = set("@*#?-$!0123456789")
OPERATORS = ("&&", "||", "|&", ";;&", ";;", ";&", ";", "&", "|", "(", ")", "\n")
REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">&", ">>", ">|", "<", ">")
METACHARS = " \t\n;&|()<>"
ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
          "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


class Unreadable(Exception):
    """The command uses shell syntax that this reader does not fully understand."""


@dataclass
class Word:
    raw: str
    value: str | None  # the word after quote removal, or None when an expansion makes it unknowable
    glob: bool = False  # unquoted * ? [..] {a,b} ~: the shell may turn it into other words
    subs: list[Script] = field(default_factory=list)  # command and process substitutions inside it

    @property
    def literal(self) -> bool:
        return self.value is not None and not self.glob and not self.subs


@dataclass
class Redirect:
    op: str
    target: Word | None = None
    heredoc: str | None = None


@dataclass
class Simple:
    """One simple command: `A=1 cmd arg > file`. `data` marks the word list of a `for` loop, not a command."""

    start: int
    end: int = 0
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    data: bool = False

    @property
    def empty(self) -> bool:
        return not (self.assignments or self.words or self.redirects)


@dataclass
class Script:
    """Simple commands in source order, and every operator or reserved word between them."""

    commands: list[Simple] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    text: str = ""  # the line as bash reads it (continuations removed): Simple.start/end index into it


@dataclass
class Token:
    kind: str  # "word" | "op" | "redir"
    text: str
    start: int
    end: int
    word: Word | None = None
    fd: str = ""
    heredoc: str | None = None  # the body, on the delimiter token of a here-document


KEYWORDS_CONTINUE = {"!", "{", "}", "then", "else", "do", "if", "elif", "while", "until", "fi", "done", "time"}
KEYWORDS_UNREADABLE = {"case", "esac", "coproc", "function", "select", "[[", "]]", "in"}
