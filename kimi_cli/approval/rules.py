"""Approval rules, parsed once (when the session's config is read), decided on a ShellReading, never on text.

- An allow (prefix) rule matches only one plain command of literal words (reading.py: no expansion,
  substitution, glob, assignment, control operator, or redirection out of the workspace), and only when
  its arguments do not write, run or reach the network beyond what the rule names (shell/options.py).
- A deny rule matches its program wherever a command can start (shell/programs.py): after a path, inside
  wrappers, `sh -c` bodies, `eval`, substitutions, values a shell or git may later run.
- A line whose programs cannot all be known is opaque: a deny rule counts it as a possible match (kimi
  asks, or refuses where nobody can be asked); an allow rule never approves it.
- MCP rules (`mcp__server__tool`, `mcp__server__*`) and web rules (`web:host`) sit in the same lists.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kimi_cli.approval.mcp_rules import rule_matches
from kimi_cli.approval.shell.lexer import Unreadable, parse
from kimi_cli.approval.shell.programs import Findings
from kimi_cli.approval.shell.reading import ShellReading, read_shell


@dataclass
class Verdict:
    """What the rules say about one command line."""

    kind: str  # "denied" | "allowed" | "unreadable" (deny rules set, and the line cannot be vetted) | "none"
    rule: str = ""
    reason: str = ""  # unreadable: why; none: why a matching allow rule did not approve it ("" : none matched)


@dataclass(frozen=True)
class AllowRule:
    text: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class DenyRule:
    text: str
    program: str
    rest: tuple[str, ...]
    in_code: re.Pattern[str]  # the program's name inside code given to an interpreter


def rule_words(rule: str) -> list[str] | None:
    """A rule's words, read like a command; None for a rule that is not plain words."""
    try:
        script = parse(rule)
    except Unreadable:
        return None
    if len(script.commands) != 1 or script.operators or script.keywords:
        return None
    simple = script.commands[0]
    if simple.assignments or simple.redirects or not all(w.literal for w in simple.words):
        return None
    return [w.value or "" for w in simple.words]


def _is_tool_rule(rule: str) -> bool:
    return rule.startswith(("mcp__", "web:"))


@dataclass
class Rules:
    """The session's allow and deny rules, each lexed once. `allow`/`deny` are the texts, in order."""

    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    _allow: list[AllowRule] = field(default_factory=list, repr=False)
    _deny: list[DenyRule] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        texts_allow, texts_deny = list(self.allow), list(self.deny)
        self.allow, self.deny = [], []
        for rule in texts_allow:
            self.add_allow(rule)
        for rule in texts_deny:
            self.add_deny(rule)

    @classmethod
    def parse(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> Rules:
        return cls(list(allow), list(deny))

    def add_allow(self, rule: str) -> None:
        if rule in self.allow:
            return
        self.allow.append(rule)
        words = None if _is_tool_rule(rule) else rule_words(rule)
        if words:
            self._allow.append(AllowRule(rule, tuple(words)))

    def remove_allow(self, rule: str) -> None:
        if rule in self.allow:
            self.allow.remove(rule)
            self._allow = [r for r in self._allow if r.text != rule]

    def add_deny(self, rule: str) -> None:
        if rule in self.deny:
            return
        self.deny.append(rule)
        words = None if _is_tool_rule(rule) else rule_words(rule)
        if words:
            program = posixpath.basename(words[0]) or words[0]
            pattern = re.compile(r"(?<![\w./-])" + re.escape(program) + r"(?![\w-])")
            self._deny.append(DenyRule(rule, program, tuple(words[1:]), pattern))

    # --- shell commands --------------------------------------------------------------------------------

    def check(self, reading: ShellReading, root: str | None = None) -> Verdict:
        """Deny first (wherever the program appears), then allow (one plain command only). `root`: the folder
        relative redirections are opened in (a `> link` out of it is never approved by a rule)."""
        if self._deny:
            rule = self.denied(reading.found)
            if rule:
                return Verdict("denied", rule)
            if reading.opaque:
                return Verdict("unreadable", reason=reading.opaque)
        return self.allowed(reading, root)

    def denied(self, found: Findings) -> str | None:
        for rule in self._deny:
            for name, args in found.names:
                if name == rule.program and _in_order(rule.rest, args):
                    return rule.text
            if any(rule.in_code.search(code) for code in found.code):
                return rule.text
        return None

    def allowed(self, reading: ShellReading, root: str | None = None) -> Verdict:
        words = reading.words
        if words is None or reading.leaves(root):
            return Verdict("none")
        for rule in self._allow:
            if tuple(words[: len(rule.words)]) == rule.words:
                why = reading.risk(len(rule.words))
                if why:
                    return Verdict("none", rule.text, f"`{rule.text}` is allowed, but here {why}")
                return Verdict("allowed", rule.text)
        return Verdict("none")

    # --- MCP tools and web hosts -----------------------------------------------------------------------

    def mcp_denied(self, tool_name: str) -> str | None:
        return rule_matches(self.deny, tool_name)

    def mcp_allowed(self, tool_name: str) -> str | None:
        return rule_matches(self.allow, tool_name)

    def web_allowed(self, host: str) -> bool:
        return f"web:{host}" in self.allow


def _in_order(wanted: tuple[str, ...], args: list[str]) -> bool:
    it = iter(args)
    return all(any(a == w for a in it) for w in wanted)


# --- the line-at-a-time forms (tests, custom commands, one-off checks) --------------------------------------


def check(command: str, allow: list[str], deny: list[str]) -> Verdict:
    """`Rules(allow, deny).check(read_shell(command))`."""
    return Rules.parse(allow, deny).check(read_shell(command))


def command_prefix(command: str) -> str:
    """What `always` would approve for this line ("" : not offered)."""
    return read_shell(command).offer


def simple_parts(command: str) -> list[str] | None:
    """The simple commands of a plain chain, as their text (ShellReading.parts)."""
    return read_shell(command).parts
