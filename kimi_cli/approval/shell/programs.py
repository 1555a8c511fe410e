"""Every program a bash line may start, read from its parsed structure (lexer.py): through paths, wrappers
(`env`, `sudo`, `xargs`, `timeout`...), `sh -c` bodies, `eval`, `trap`, aliases, substitutions, pipelines,
lists, subshells, values a shell or git may later run (`PS4='$(rm x)'`, `GIT_SSH_COMMAND`, `-c alias.x=!..`),
and the code handed to interpreters. Where the list may be incomplete, `Findings.unreadable` says why: a
caller never takes an incomplete list for a complete one (deny rules ask, allow rules do not approve).
"""

from __future__ import annotations

import posixpath
import re
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
BASH_RUNNERS = {"command", "builtin"}  # builtins that run a command, a builtin among them
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
# Variables naming a file a shell runs as code when it starts (bash -c reads BASH_ENV; sh reads ENV).
STARTUP_FILES = {"BASH_ENV", "ENV"}
STARTUP_NAMED = re.compile(r"(?<![\w$])(BASH_ENV|ENV)(?!\w)")  # the name anywhere, not `$ENV` or `MY_ENV`
# Builtins that set variables a later program may read (their `NAME=value` arguments are read as values).
EXPORTING = {"export", "declare", "typeset", "readonly", "local"}
# Interpreters given inline code (`python3 -c`, `perl -e`): their code is searched for denied names.
INTERPRETERS = {"python", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "awk", "gawk", "mawk", "php",
                "lua", "tclsh", "Rscript", "osascript", "pwsh", "powershell", "jq"}  # fmt: skip
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Findings:
    """Every program a command line may start, and code-like text handed to interpreters. `unreadable`
    says why the list may be incomplete (the reader stopped there)."""

    names: list[tuple[str, list[str]]] = field(default_factory=list)  # (program, its literal arguments)
    code: list[str] = field(default_factory=list)
    unreadable: str = ""


def has_control_chars(command: str) -> bool:
    """Characters a terminal would act on or reorder (ESC, CR, BS, bidi controls): such a command never
    matches an allow rule and is never offered for `always`."""
    return bool(CONTROL_CHARS.search(command))


def programs(command: str) -> Findings:
    """Every program the line may run, as far as it can be read (see Findings.unreadable)."""
    try:
        script = parse(command)
    except Unreadable as exc:
        return Findings(unreadable=str(exc) or "unreadable")
    return programs_of(script)


def programs_of(script: Script) -> Findings:
    """Every program a parsed line may run (the walk of `programs`, for a caller that parsed it already)."""
    found = Findings()
    try:
        if STARTUP_NAMED.search(script.text or ""):  # set by read, printf -v, for, mapfile, then exported:
            raise Unreadable("the line names BASH_ENV or ENV, a file of code a shell runs when it starts")
        _script(script, found, 0)
    except Unreadable as exc:
        found.unreadable = str(exc) or "unreadable"
    return found


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
        if name == "xargs":
            _xargs(args, found)
        if name == "find":
            _find(args)
        # `command` and `builtin` run their first word that is no option as bash would, builtins included
        # (`command . a.sh` sources it): that word is the program, never a mere candidate.
        named = next((i for i, a in enumerate(args) if not (a.value or "").startswith("-")), None)
        for i, arg in enumerate(args):
            if not arg.literal:
                raise Unreadable(f"{name} with an argument computed when it runs")
            text = arg.value or ""
            if name == "env" and text.startswith("BASH_FUNC_"):
                raise Unreadable("env hands a function to the bash it starts (BASH_FUNC_)")
            if name == "env" and (text.startswith("--split-string=") or (text.startswith("-S") and len(text) > 2)):
                _code_str(text.partition("=")[2] if text.startswith("--") else text[2:], found, depth + 1)
            if name == "env" and "=" in text and NAME.fullmatch(text.partition("=")[0]):
                _assigned(text.partition("=")[0], text.partition("=")[2], found, depth)  # env NAME=value: an assignment
                continue
            if re.search(r"[\s;&|()<>`$]", arg.value or ""):
                _code_text(arg, found, depth + 1)  # env -S 'rm x', ssh host 'rm x', watch 'rm x'
            _invocation(args[i:], found, depth + 1, candidate=not (name in BASH_RUNNERS and i == named))
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
    elif name == "jobs" and any(a.value == "-x" for a in args):  # `jobs -x cmd args` runs cmd
        rest = args[[a.value for a in args].index("-x") + 1 :]
        if rest:
            _invocation(rest, found, depth + 1)
    elif name in ARITH_NAMES:
        _arith_builtin(name, args)
        if name in ("mapfile", "readarray"):  # -C CODE: a callback run every -c lines
            for i, arg in enumerate(args):
                text = arg.value or ""
                code = args[i + 1] if text == "-C" and i + 1 < len(args) else arg if text.startswith("-C") else None
                if code is not None:
                    if not code.literal or code.value is None:
                        raise Unreadable(f"`{name} -C` of code computed when it runs")
                    body = code.value[2:] if code is arg else code.value
                    _script(parse(body, depth + 1), found, depth + 1)  # unreadable code stays unreadable
        if name in EXPORTING:  # `export GIT_EXTERNAL_DIFF='rm x;'`: read like NAME=value before a command
            for arg in args:
                text = arg.value or ""
                if arg.literal and NAME.fullmatch(text.partition("=")[0]) and "=" in text:
                    _assigned(text.partition("=")[0], text.partition("=")[2], found, depth)
    elif name in INTERPRETERS:
        found.code += [a.value for a in args if a.value is not None]
    elif name == "git":
        _git(args, found, depth)


def _xargs(args: list[Word], found: Findings) -> None:
    """xargs appends its input to the program's arguments: a program that its arguments can make start
    another (a wrapper, a shell, an interpreter, git, sed, find...) runs what the input says."""
    from kimi_cli.approval.shell.options import TABLE

    values = [a.value or "" for a in args]
    named = [(i, posixpath.basename(v)) for i, v in enumerate(values) if v and not v.startswith("-")]
    at = 0
    while at < len(values) and values[at].startswith("-") and values[at] != "--":
        at += 2 if values[at] in XARGS_VALUED else 1  # an option, and its value when separate
    at += at < len(values) and values[at] == "--"
    if at >= len(values):
        found.names.append(("echo", []))  # xargs with no program runs echo
    for i, word in named:
        if word in SHELLS and _shell_body(values[i + 1 :]) is not None:
            continue  # `xargs sh -c 'rm "$@"' _`: the input becomes the body's arguments, not its code
        if word in WRAPPERS or word in SHELLS or word in INTERPRETERS or word in TABLE:
            raise Unreadable(f"xargs hands its input to `{word}` as arguments, which may name a program it runs")


XARGS_VALUED = {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args",
                "--max-procs", "--max-chars", "--max-lines", "--process-slot-var"}  # fmt: skip


def _shell_body(values: list[str]) -> str | None:
    """The code a shell's `-c` takes among its arguments (None: no -c, or nothing after it)."""
    for i, value in enumerate(values):
        if value.startswith("-") and not value.startswith("--") and "c" in value[1:]:
            return values[i + 1] if i + 1 < len(values) else None
        if not value.startswith(("-", "+")):
            return None
    return None


def _find(args: list[Word]) -> None:
    """find -exec runs the words up to `;` or `+`: a program named by `{}` (the found file) cannot be read,
    nor a wrapper given `{}` (`-exec nice {} ;` runs each found file)."""
    for i, arg in enumerate(args):
        if arg.value not in ("-exec", "-execdir", "-ok", "-okdir") or i + 1 >= len(args):
            continue
        program = args[i + 1].value or ""
        rest = [a.value or "" for a in args[i + 2 :]]
        end = next((j for j, v in enumerate(rest) if v in (";", "+")), len(rest))
        base = posixpath.basename(program)
        if "{}" in program or (base in WRAPPERS and any("{}" in v for v in rest[:end])):
            raise Unreadable("find runs the files it finds as programs")
        if base in SHELLS and "{}" in (_shell_body(rest[:end]) or ""):
            raise Unreadable("find runs the names of the files it finds as shell code")


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
        if value in ("--rcfile", "--init-file", "--login", "--interactive") or (
            value.startswith("-") and not value.startswith("--") and ("i" in value or "l" in value)
        ):  # an interactive or login shell first runs its start-up files (~/.bashrc, --rcfile FILE)
            raise Unreadable(f"{name} {value} runs start-up files, which cannot be read here")
        if value in ("-o", "+o", "-O", "+O"):
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
    for i, arg in enumerate(args):
        value = arg.value
        if name == "printf" and value is None and i > 0 and args[i - 1].value == "-v":
            raise Unreadable("`printf -v` into a variable named when it runs")  # under `set -a`, exported
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
    setting in it. A file a shell reads as code when it starts (BASH_ENV) cannot be read from the line."""
    if name in STARTUP_FILES:
        raise Unreadable(f"{name} names a file of code a shell runs when it starts")
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
