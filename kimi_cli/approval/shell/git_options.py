"""What git itself runs from a command line: the command lines hidden in its options and settings.

git runs configuration values as commands (`-c alias.x='!rm x' x`, `core.fsmonitor`, `core.pager`,
`diff.external`), and several subcommands take a command line as an option (`rebase --exec`,
`difftool -x`, `filter-branch --tree-filter`, `--upload-pack`/`--receive-pack`/`--exec` for a local
remote, `grep -O`), or run their arguments (`bisect run`, `submodule foreach`). `git_code` finds them;
the approval rules (rules.py) read each as a command line. One table, kept as data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kimi_cli.approval.shell.lexer import Unreadable, Word

# git's global options whose value is the next word (the word after them is not the subcommand).
GIT_VALUED = {"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix"}
# Subcommand -> its options whose value is a command line (a shell runs it). Short ones also glued (-x'cmd').
COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "rebase": ("--exec", "-x"),
    "difftool": ("--extcmd", "-x"),
    "filter-branch": (
        "--tree-filter",
        "--index-filter",
        "--env-filter",
        "--msg-filter",
        "--commit-filter",
        "--parent-filter",
        "--tag-name-filter",
    ),
    "ls-remote": ("--upload-pack",),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "clone": ("--upload-pack", "-u"),
    "fetch-pack": ("--upload-pack", "--exec"),
    "push": ("--receive-pack", "--exec"),
    "send-pack": ("--receive-pack", "--exec"),
    "archive": ("--exec",),
    "grep": ("--open-files-in-pager", "-O"),
    "send-email": ("--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"),
}


@dataclass
class GitCode:
    """Command lines git may run (`code`, read as shell code) and argument lists it runs as a program
    (`argv`: indices into the words, `bisect run rm x` -> the words from `rm`)."""

    code: list[str] = field(default_factory=list)
    argv: list[int] = field(default_factory=list)


def git_code(args: list[Word]) -> GitCode:
    """What `git ARGS` may run besides git; Unreadable when a value is computed when it runs."""
    found = GitCode()
    for i, arg in enumerate(args):
        value = arg.value
        after_c = i > 0 and args[i - 1].value == "-c"
        if value is None or not arg.literal:
            if after_c:
                raise Unreadable("git -c of a value computed when it runs")
            continue
        if value.startswith("--config-env"):
            raise Unreadable("git --config-env takes a setting from the environment")
        if after_c:
            found.code.append(value.partition("=")[2])
        elif not value.startswith("-") and (i == 0 or args[i - 1].value not in GIT_VALUED):
            _subcommand(value, args, i + 1, found)
            return found
    return found


def _subcommand(name: str, args: list[Word], start: int, found: GitCode) -> None:
    rest = args[start:]
    if name == "config":  # what it stores may run later (an alias, core.pager...)
        found.code += [w.value for w in rest if w.value is not None and not w.value.startswith("-")]
        return
    if name == "bisect" and rest and rest[0].value == "run" and len(rest) > 1:
        found.argv.append(start + 1)
        return
    if name == "submodule":
        words = [w.value for w in rest]
        if "foreach" in words:
            body = [w for w in rest[words.index("foreach") + 1 :] if not (w.value or "").startswith("-")]
            if any(not w.literal or w.value is None for w in body):
                raise Unreadable("git submodule foreach of a command computed when it runs")
            found.code.append(" ".join(w.value or "" for w in body))
        return
    options = COMMAND_OPTIONS.get(name, ())
    for j, word in enumerate(rest):
        value = word.value
        if value is None or not word.literal:
            if j > 0 and rest[j - 1].value in options:
                raise Unreadable(f"git {name} {rest[j - 1].value} of a command computed when it runs")
            continue
        for option in options:
            if value == option and j + 1 < len(rest):
                nxt = rest[j + 1]
                if nxt.value is None or not nxt.literal:
                    raise Unreadable(f"git {name} {option} of a command computed when it runs")
                found.code.append(nxt.value)
            elif value.startswith(option + "="):
                found.code.append(value[len(option) + 1 :])
            elif len(option) == 2 and value.startswith(option) and len(value) > 2 and not value.startswith("--"):
                found.code.append(value[2:])  # -x'cmd': glued to the short option


def config_parameters(value: str) -> list[str]:
    """The values in GIT_CONFIG_PARAMETERS (`'alias.x=!rm x' 'core.pager=less'`, git's own quoting)."""
    import shlex

    try:
        entries = shlex.split(value)
    except ValueError:
        entries = value.split()
    return [entry.partition("=")[2] for entry in entries]
