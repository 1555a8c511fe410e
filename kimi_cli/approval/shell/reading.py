"""ShellReading: one command line read once per call, into what every approval check and the approval panel
use: the programs it may start (programs.py), whether that list is complete (`opaque` says why not), the
words of a line that is one plain command (what a prefix rule may match), its redirections, the parts of
a plain chain, and the rule `always` would keep.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from functools import cached_property

from kimi_cli.approval.shell.lexer import Redirect, Script, Unreadable, Word, parse
from kimi_cli.approval.shell.options import risk
from kimi_cli.approval.shell.programs import Findings, has_control_chars, programs_of

SAFE_REDIRECT_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
# Programs whose first word after them names what they run (`npm test`, `cargo build`): `always` keeps both.
RUNNERS = {"npm", "pnpm", "yarn", "uv", "poetry", "cargo", "go", "make", "python", "python3", "npx", "bun", "git"}
# Runners' subcommands that start whatever program or script the next word names (`uv run pytest`): `always`
# keeps that word too, since `uv run` alone would approve `uv run rm -rf ~` later.
# (`npm run`, `make` and `cargo run` run the workspace's own scripts: the user's choice, like `pytest`.)
STARTS_NAMED = {("uv", "run"), ("poetry", "run"), ("npm", "exec"), ("pnpm", "exec"), ("pnpm", "dlx"),
                ("yarn", "dlx"), ("yarn", "exec"), ("bun", "x")}  # fmt: skip
NO_OFFER = {("uv", "tool"), ("npm", "x")}  # `uv tool run X`, `npm x X`: never a two-word rule


@dataclass
class ShellReading:
    """What kimi knows about one command line. `script` is None when the lexer could not read it at all."""

    command: str
    script: Script | None
    found: Findings = field(default_factory=Findings)
    control: bool = False  # characters a terminal would act on (ESC, CR, bidi): never approved by a rule

    @property
    def opaque(self) -> str:
        """Why the list of programs may be incomplete ("" when the whole line was read)."""
        return self.found.unreadable

    @cached_property
    def plain(self) -> bool:
        """One simple command of literal words, redirections that stay in the folder: what a prefix rule
        may approve (anything else needs the user, whatever the rules say)."""
        script = self.script
        if script is None or self.control or self.opaque:
            return False
        if len(script.commands) != 1 or script.keywords or any(op != "\n" for op in script.operators):
            return False
        simple = script.commands[0]
        if simple.assignments or simple.data or not simple.words:
            return False
        if not all(w.literal and not has_control_chars(w.value or "") for w in simple.words):
            return False
        return all(_safe_redirect(r.op, r.target, r.heredoc) for r in simple.redirects)

    @cached_property
    def words(self) -> list[str] | None:
        """The words of a plain command, else None."""
        if not self.plain or self.script is None:
            return None
        return [w.value or "" for w in self.script.commands[0].words]

    @property
    def redirects(self) -> list[Redirect]:
        return self.script.commands[0].redirects if self.plain and self.script is not None else []

    @cached_property
    def parts(self) -> list[str] | None:
        """The simple commands of a plain chain (`a && b | c; d`) as bash reads their text, for per-part
        approval; None when the line holds anything else (substitutions, compound commands, unreadable)."""
        script = self.script
        if script is None or self.control:
            return None
        if script.keywords or any(op in ("(", ")") for op in script.operators):
            return None
        parts = []
        for simple in script.commands:
            if any(w.subs for w in simple.words) or any(v.subs for _, v in simple.assignments):
                return None
            if any(r.heredoc is not None or (r.target is not None and r.target.subs) for r in simple.redirects):
                return None
            parts.append(script.text[simple.start : simple.end])
        return parts

    def leaves(self, root: str | None) -> bool:
        """A file redirection of this plain command that resolves, through links, outside `root` (None:
        no folder given, only the lexical check applies)."""
        if root is None:
            return False
        base = os.path.realpath(root)
        for redirect in self.redirects:
            value = redirect.target.value if redirect.target is not None else None
            if value is None or redirect.heredoc is not None or redirect.op.endswith("<<<"):
                continue
            if value in SAFE_REDIRECT_TARGETS or (redirect.op.endswith("&") and (value.isdigit() or value == "-")):
                continue  # /dev/null, or another descriptor (`2>&1`, `>&-`)
            full = os.path.realpath(os.path.join(base, value))
            if full != base and not full.startswith(base.rstrip("/") + "/"):
                return True
        return False

    def risk(self, covered: int) -> str:
        """What this plain command's arguments make it do beyond the `covered` words of a rule (options.py)."""
        return risk(self.words, covered) if self.words else ""

    @cached_property
    def offer(self) -> str:
        """What `always` would approve: the program, plus its subcommand for runners (`npm test`), plus what
        a runner's subcommand starts (`uv run pytest`); "" when the line is not one plain command, or when its
        own arguments write, run or reach the network (then no rule is safe to remember from it). The rule
        kept is still a prefix that risk() checks: `sed` kept from `sed -n 1p` does not approve `sed 1e`."""
        words = self.words
        if not words:
            return ""
        if words[0] in ("python", "python3") and words[1:2] == ["-m"] and len(words) > 2:
            shape = words[:3]
        elif words[0] in RUNNERS and len(words) > 1 and not words[1].startswith("-"):
            shape = words[:2]
            if (words[0], words[1]) in NO_OFFER:
                return ""
            if (words[0], words[1]) in STARTS_NAMED:
                if len(words) < 3 or words[2].startswith("-"):
                    return ""  # what it starts is not named by a plain next word: this once only
                shape = words[:3]
        else:
            shape = words[:1]
        if self.risk(len(shape)):
            return ""
        return " ".join(shlex.quote(w) for w in shape)


def read_shell(command: str) -> ShellReading:
    """Parse and walk `command` once."""
    control = has_control_chars(command)
    try:
        script = parse(command)
    except Unreadable as exc:
        return ShellReading(command, None, Findings(unreadable=str(exc) or "unreadable"), control)
    return ShellReading(command, script, programs_of(script), control)


def _safe_redirect(op: str, target: Word | None, heredoc: str | None) -> bool:
    if target is None or not target.literal or target.value is None:
        return False
    if op.endswith(("<<", "<<-")):
        return heredoc is not None
    if op.endswith("<<<"):
        return True
    value = target.value
    if op.endswith(("&", ">&", "<&")) and (value.isdigit() or value == "-"):
        return True
    if value in SAFE_REDIRECT_TARGETS:
        return True
    return not value.startswith(("/", "~", "-")) and ".." not in value.split("/") and bool(value)
