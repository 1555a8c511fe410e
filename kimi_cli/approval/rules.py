"""Approval rules decided on a parsed command, never on its text.

- An allow (prefix) rule matches only one simple command made of literal words: no expansion,
  substitution, glob, assignment, control operator, or redirection out of the workspace.
- A deny rule matches its command name wherever a command can start: after a path (`/bin/rm`), inside
  wrappers (`env`, `sudo`, `xargs`, `timeout`...), `sh -c` bodies, `eval`, `trap`, aliases,
  substitutions, pipelines, lists, subshells, and values a shell may later run (`PS4='$(rm x)'`).
- A command this reader cannot fully read is `unreadable`: with deny rules set it asks (or is refused
  where nobody can be asked); it never matches an allow rule.
"""

from __future__ import annotations

import os
import posixpath
import re
from contextvars import ContextVar
from dataclasses import dataclass, field

from kimi_cli.approval.shell.git_options import config_parameters, git_code
from kimi_cli.approval.shell.lexer import MAX_DEPTH, NAME, Script, Simple, Unreadable, Word, parse

# Programs that run another program named among their arguments.
WRAPPERS = {
    "command", "builtin", "exec", "env", "nice", "nohup", "timeout", "xargs", "sudo", "doas", "time", "stdbuf",
    "setsid", "ionice", "chrt", "taskset", "strace", "ltrace", "watch", "flock", "chroot", "unshare", "nsenter",
    "busybox", "find", "fakeroot", "proot", "firejail", "systemd-run", "ssh", "caffeinate", "catchsegv",
    "valgrind", "gdb", "entr", "rlwrap", "unbuffer", "script", "pkexec", "run-parts", "toybox",
}  # fmt: skip
# Shells whose -c argument is code; without -c they read a script or stdin, which is unreadable here.
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish", "tcsh", "csh", "su",
          "runuser"}  # fmt: skip
# Builtins that run their literal arguments as code.
CODE_ARGS = {"eval", "trap"}
# Builtins that load code or rename commands: what they do cannot be read from the line.
OPAQUE = {"source", ".", "enable", "hash", "let", "coproc", "fc", "bind", "complete", "compgen", "parallel"}
# Builtins that evaluate subscripts or integer values arithmetically (`a[$(rm x)]` runs rm).
ARITH_NAMES = {"declare", "typeset", "local", "readonly", "export", "read", "unset", "mapfile", "readarray",
               "printf", "test", "[", "wait", "getopts"}  # fmt: skip
# Builtins that set variables a later program may read (their `NAME=value` arguments are read as values).
EXPORTING = {"export", "declare", "typeset", "readonly", "local"}
# Interpreters given inline code (`python3 -c`, `perl -e`): their code is searched for denied names.
INTERPRETERS = {"python", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "awk", "gawk", "mawk", "php",
                "lua", "tclsh", "Rscript", "osascript", "pwsh", "powershell", "jq"}  # fmt: skip
SAFE_REDIRECT_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
# The folder relative redirections are opened in (the Shell tool sets it while the approver decides): a
# target such as `out.txt` that is a link out of it leaves the workspace, so no allow rule covers it.
REDIRECT_ROOT: ContextVar[str | None] = ContextVar("kimi_redirect_root", default=None)
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Findings:
    """Every program a command line may start, and code-like text handed to interpreters. `unreadable`
    says why the list may be incomplete (the reader stopped there)."""

    names: list[tuple[str, list[str]]] = field(default_factory=list)  # (program, its literal arguments)
    code: list[str] = field(default_factory=list)
    unreadable: str = ""


@dataclass
class Verdict:
    """What the rules say about one command line."""

    kind: str  # "denied" | "allowed" | "unreadable" (deny rules set, and the line cannot be vetted) | "none"
    rule: str = ""
    reason: str = ""


def has_control_chars(command: str) -> bool:
    """Characters a terminal would act on or reorder (ESC, CR, BS, bidi controls): such a command never
    matches an allow rule and is never offered for `always`."""
    return bool(CONTROL_CHARS.search(command))


def programs(command: str) -> Findings:
    """Every program the line may run, as far as it can be read (see Findings.unreadable)."""
    found = Findings()
    try:
        _script(parse(command), found, 0)
    except Unreadable as exc:
        found.unreadable = str(exc) or "unreadable"
    return found


def check(command: str, allow: list[str], deny: list[str]) -> Verdict:
    """Deny first (wherever the program appears), then allow (one plain command only)."""
    if deny:
        found = programs(command)
        rule = _deny_match(found, deny)
        if rule:
            return Verdict("denied", rule)
        if found.unreadable:
            return Verdict("unreadable", reason=found.unreadable)
    rule = allowed_by(command, allow)
    return Verdict("allowed", rule) if rule else Verdict("none")


def _script(script: Script, found: Findings, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise Unreadable("nested too deeply")
    for simple in script.commands:
        _simple(simple, found, depth)


def _word_subs(word: Word, found: Findings, depth: int) -> None:
    for sub in word.subs:
        _script(sub, found, depth + 1)


def _simple(simple: Simple, found: Findings, depth: int) -> None:
    for name, value in simple.assignments:
        _word_subs(value, found, depth)
        _assigned(name, value.value, found, depth)  # PS4='$(rm x)', GIT_SSH_COMMAND='rm ...': values a program may run
    for redirect in simple.redirects:
        if redirect.target is not None:
            _word_subs(redirect.target, found, depth)
    for word in simple.words:
        _word_subs(word, found, depth)
    if simple.data or not simple.words:
        return
    _invocation(simple.words, found, depth)


def _invocation(words: list[Word], found: Findings, depth: int, candidate: bool = False) -> None:
    """`words` as a program and its arguments. A `candidate` is a wrapper's argument that may or may not
    be the program it runs: its name counts, but builtins are not read into (`find . -name x`)."""
    if depth > MAX_DEPTH:
        raise Unreadable("nested too deeply")
    head = words[0]
    if not head.literal or head.value is None:
        raise Unreadable("the program's name is computed when it runs")
    name = posixpath.basename(head.value) or head.value
    args = words[1:]
    found.names.append((name, [w.value for w in args if w.value is not None]))
    if candidate and (name in OPAQUE or name in ARITH_NAMES or name == "alias"):
        return
    if name in WRAPPERS:
        if name == "xargs" and any((a.value or "").startswith(("-I", "-i", "--replace")) for a in args):
            raise Unreadable("xargs -I builds the program's name from its input")
        for i, arg in enumerate(args):
            if not arg.literal:
                raise Unreadable(f"{name} with an argument computed when it runs")
            if re.search(r"[\s;&|()<>`$]", arg.value or ""):
                _code_text(arg, found, depth + 1)  # env -S 'rm x', ssh host 'rm x', watch 'rm x'
            _invocation(args[i:], found, depth + 1, candidate=True)
    elif name in SHELLS:
        _shell(name, args, found, depth)
    elif name in CODE_ARGS:
        for arg in args:
            if not arg.literal:
                raise Unreadable(f"{name} of text computed when it runs")
        if name == "eval":
            _script(parse(" ".join(a.value or "" for a in args), depth + 1), found, depth + 1)
        else:
            for arg in args:
                _script(parse(arg.value or "", depth + 1), found, depth + 1)
    elif name == "alias":
        for arg in args:
            if not arg.literal:
                raise Unreadable("alias of text computed when it runs")
            _script(parse((arg.value or "").partition("=")[2], depth + 1), found, depth + 1)
    elif name in OPAQUE:
        raise Unreadable(f"`{name}` loads or renames commands")
    elif name in ARITH_NAMES:
        _arith_builtin(name, args)
        if name in EXPORTING:  # `export GIT_EXTERNAL_DIFF='rm x;'`: read like NAME=value before a command
            for arg in args:
                text = arg.value or ""
                if arg.literal and NAME.fullmatch(text.partition("=")[0]) and "=" in text:
                    _assigned(text.partition("=")[0], text.partition("=")[2], found, depth)
    elif name in INTERPRETERS:
        found.code += [a.value for a in args if a.value is not None]
    elif name == "git":
        _git(args, found, depth)


def _git(args: list[Word], found: Findings, depth: int) -> None:
    """What git runs from its settings and options (git_options.py) counts as command lines here."""
    code = git_code(args)
    for text in code.code:
        _code_str(text, found, depth)
    for at in code.argv:
        _invocation(args[at:], found, depth + 1)


def _shell(name: str, args: list[Word], found: Findings, depth: int) -> None:
    code_at = None
    skip = False
    for i, arg in enumerate(args):
        if not arg.literal:
            raise Unreadable(f"{name} with an argument computed when it runs")
        value = arg.value or ""
        if skip:
            skip = False
            continue
        if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            skip = True  # the option's own argument
            continue
        if value.startswith("-") and not value.startswith("--") and "c" in value[1:]:
            code_at = i + 1
            break
        if not value.startswith(("-", "+")):
            break
    if code_at is None:
        raise Unreadable(f"{name} runs a script or its input, which cannot be read here")
    for arg in args[code_at:]:
        if not arg.literal:
            raise Unreadable(f"{name} -c of text computed when it runs")
        _script(parse(arg.value or "", depth + 1), found, depth + 1)


def _arith_builtin(name: str, args: list[Word]) -> None:
    for arg in args:
        value = arg.value
        if name in ("test", "[") and value is None:
            continue  # `[ "$x" = y ]` compares text; only -v and subscripts evaluate
        if value is None or arg.glob:
            if name in ("declare", "typeset", "local", "readonly", "export") and _plain_assignment(arg.raw):
                continue
            if name == "printf" and not arg.subs:
                continue
            raise Unreadable(f"`{name}` with a value computed when it runs")
        if "[" in value:
            raise Unreadable(f"`{name}` evaluates subscripts")
        if name in ("test", "[") and value in ("-v", "-R"):
            raise Unreadable(f"`{name} {value}` evaluates its argument")
        declares = name in ("declare", "typeset", "local", "readonly", "export")
        if declares and value.startswith("-") and ("i" in value or "n" in value):
            raise Unreadable(f"`{name} {value}` evaluates values")
        if "`" in value or "$(" in value:
            raise Unreadable(f"`{name}` of code-like text")


def _plain_assignment(raw: str) -> bool:
    """`NAME=$value` in declare/export: the value is stored, not evaluated."""
    name, eq, _ = raw.partition("=")
    return bool(eq) and NAME.fullmatch(name) is not None


def _assigned(name: str, value: str | None, found: Findings, depth: int) -> None:
    """A variable's value that a program may run: as a command line, or (GIT_CONFIG_PARAMETERS) each
    setting in it."""
    if not value:
        return
    for text in config_parameters(value) if name == "GIT_CONFIG_PARAMETERS" else [value]:
        _code_str(text, found, depth)


def _code_text(word: Word, found: Findings, depth: int) -> None:
    """A literal value that reads as a command line: its programs count too. Unreadable text is left as
    data unless it holds a substitution."""
    if word.value:
        _code_str(word.value, found, depth)


def _code_str(text: str, found: Findings, depth: int) -> None:
    text = text.removeprefix("!")  # git's shell aliases and helpers (`!rm x`, GIT_CONFIG_VALUE_0='!rm x')
    if not text:
        return
    try:
        _script(parse(text, depth + 1), found, depth + 1)
    except Unreadable:
        if "`" in text or "$(" in text or "${" in text:
            raise


# --- the rules ------------------------------------------------------------------------------------------


def _rule_words(rule: str) -> list[str] | None:
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


def denied_by(command: str, deny: list[str]) -> str | None:
    """The deny rule whose program this line may run (raises Unreadable when that cannot be known)."""
    if not deny:
        return None
    found = programs(command)
    rule = _deny_match(found, deny)
    if rule is None and found.unreadable:
        raise Unreadable(found.unreadable)
    return rule


def _deny_match(found: Findings, deny: list[str]) -> str | None:
    for rule in deny:
        words = _rule_words(rule)
        if not words:
            continue
        program, rest = posixpath.basename(words[0]) or words[0], words[1:]
        for name, args in found.names:
            if name == program and _in_order(rest, args):
                return rule
        pattern = re.compile(r"(?<![\w./-])" + re.escape(program) + r"(?![\w-])")
        if any(pattern.search(code) for code in found.code):
            return rule
    return None


def _in_order(wanted: list[str], args: list[str]) -> bool:
    it = iter(args)
    return all(any(a == w for a in it) for w in wanted)


def simple_words(command: str) -> list[str] | None:
    """The words of a line that is one plain command (what a prefix rule may match), else None."""
    if has_control_chars(command):
        return None
    try:
        script = parse(command)
    except Unreadable:
        return None
    if len(script.commands) != 1 or script.keywords or any(op != "\n" for op in script.operators):
        return None
    simple = script.commands[0]
    if simple.assignments or simple.data or not simple.words:
        return None
    if not all(w.literal and not has_control_chars(w.value or "") for w in simple.words):
        return None
    if not all(_safe_redirect(r.op, r.target, r.heredoc) for r in simple.redirects):
        return None
    return [w.value or "" for w in simple.words]


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


def allowed_by(command: str, allow: list[str]) -> str | None:
    """The allow (prefix) rule this plain command matches, word by word; None for anything else."""
    words = simple_words(command)
    if words is None or _redirect_leaves(command, REDIRECT_ROOT.get()):
        return None
    for rule in allow:
        if rule.startswith(("mcp__", "web:")):
            continue
        rule_words = _rule_words(rule)
        if rule_words and words[: len(rule_words)] == rule_words:
            return rule
    return None


def _redirect_leaves(command: str, root: str | None) -> bool:
    """A file redirection of this plain command that resolves, through links, outside `root`."""
    if root is None:
        return False
    base = os.path.realpath(root)
    for redirect in parse(command).commands[0].redirects:
        value = redirect.target.value if redirect.target is not None else None
        if value is None or redirect.heredoc is not None or redirect.op.endswith("<<<"):
            continue
        if value in SAFE_REDIRECT_TARGETS or (redirect.op.endswith("&") and (value.isdigit() or value == "-")):
            continue  # /dev/null, or another descriptor (`2>&1`, `>&-`)
        full = os.path.realpath(os.path.join(base, value))
        if full != base and not full.startswith(base.rstrip("/") + "/"):
            return True
    return False


def simple_parts(command: str) -> list[str] | None:
    """The simple commands of a plain chain (`a && b | c; d`), as their source text, for per-part
    approval; None when the line holds anything else (substitutions, compound commands, unreadable)."""
    if has_control_chars(command):
        return None
    try:
        script = parse(command)
    except Unreadable:
        return None
    if script.keywords or any(op in ("(", ")") for op in script.operators):
        return None
    parts = []
    for simple in script.commands:
        if any(w.subs for w in simple.words) or any(v.subs for _, v in simple.assignments):
            return None
        if any(r.heredoc is not None or (r.target is not None and r.target.subs) for r in simple.redirects):
            return None
        parts.append(command[simple.start : simple.end])
    return parts


RUNNERS = {"npm", "pnpm", "yarn", "uv", "poetry", "cargo", "go", "make", "python", "python3", "npx", "bun", "git"}


def command_prefix(command: str) -> str:
    """What `always` would approve: the program, plus its subcommand for runners (`npm test`); "" when the
    line is not one plain command, so `always` is not offered for it."""
    words = simple_words(command)
    if not words:
        return ""
    if words[0] in ("python", "python3") and words[1:2] == ["-m"] and len(words) > 2:
        return " ".join(_quote(w) for w in words[:3])
    if words[0] in RUNNERS and len(words) > 1 and not words[1].startswith("-"):
        return " ".join(_quote(w) for w in words[:2])
    return _quote(words[0])


def _quote(word: str) -> str:
    import shlex

    return shlex.quote(word)
