"""What a program's arguments make it do beyond its name: the options and scripts that write files, run
programs or reach the network, per program, as data.

An allow rule is a prefix (`sed`, `git log`): it approves the program the user meant, not everything that
program can be told to do. `sed -n '1e touch X'` runs a program and `git log --output=/elsewhere` writes a
file, so a rule approves a command only when `risk()` finds none of these; otherwise kimi asks and says
why. Words the rule itself names are the user's choice (`python -m pytest` names `-m`). What cannot be
read (a sed or awk script from a file, a script this reader does not know) counts as a risk: fail closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kimi_cli.approval.shell.git_options import COMMAND_OPTIONS, GIT_VALUED

RUNS, WRITES, NETWORK, READS = "runs a program", "writes files", "reaches the network", "reads files it names"
FROM_FILE = "takes its script from a file kimi does not read"


@dataclass(frozen=True)
class ProgramOptions:
    """One program's options (long, `=` or separate value; short, glued or separate) and what each does.
    `stop`: the first word that is not an option ends the program's own options (`python x.py -c` passes
    `-c` to x.py). `script`: which words are a script to read (sed, awk)."""

    options: dict[str, str] = field(default_factory=dict)
    stop: bool = False
    script: str = ""  # "sed" | "awk": the first non-option word, or each -e/--expression value


# fmt: off
PYTHON = ProgramOptions({"-c": RUNS, "-m": RUNS}, stop=True)
NODE = ProgramOptions({"-e": RUNS, "--eval": RUNS, "-p": RUNS, "--print": RUNS, "-r": RUNS, "--require": RUNS,
                       "--import": RUNS, "--loader": RUNS, "--experimental-loader": RUNS}, stop=True)
PERL = ProgramOptions({"-e": RUNS, "-E": RUNS, "-i": WRITES, "-M": RUNS, "-m": RUNS, "-x": RUNS, "-d": RUNS},
                      stop=True)
RUBY = ProgramOptions({"-e": RUNS, "-i": WRITES, "-r": RUNS, "-x": RUNS, "-S": RUNS}, stop=True)
VIM = ProgramOptions({"-c": RUNS, "--cmd": RUNS, "-S": RUNS, "-u": RUNS, "-U": RUNS, "-s": RUNS, "-w": WRITES,
                      "-W": WRITES, "-e": RUNS, "-E": RUNS, "-es": RUNS, "-Es": RUNS, "+": RUNS,
                      "-y": RUNS})
AWK = ProgramOptions({"-f": FROM_FILE, "--file": FROM_FILE, "-i": RUNS, "--include": RUNS, "-l": RUNS, "--load": RUNS,
                      "-E": RUNS, "--exec": RUNS, "-o": WRITES, "--pretty-print": WRITES, "-p": WRITES,
                      "--profile": WRITES, "-d": WRITES, "--dump-variables": WRITES}, script="awk")

NPM = ProgramOptions({"--script-shell": RUNS, "--shell": RUNS, "--node-options": RUNS, "-c": RUNS, "--call": RUNS,
                      "--userconfig": FROM_FILE, "--globalconfig": FROM_FILE, "--prefix": WRITES,
                      "--cache": WRITES})
AFTER_DASHES = {"npm", "pnpm", "yarn"}  # the words after `--` are the script's, not the runner's options

TABLE: dict[str, ProgramOptions] = {
    "sed": ProgramOptions({"-i": WRITES, "--in-place": WRITES, "-f": FROM_FILE, "--file": FROM_FILE},
                          script="sed"),
    "awk": AWK, "gawk": AWK, "mawk": AWK, "nawk": AWK,
    "find": ProgramOptions({"-exec": RUNS, "-execdir": RUNS, "-ok": RUNS, "-okdir": RUNS, "-delete": WRITES,
                            "-fprint": WRITES, "-fprint0": WRITES, "-fprintf": WRITES, "-fls": WRITES}),
    "xargs": ProgramOptions(stop=True),  # any program it is given runs (see risk)
    "env": ProgramOptions({"-S": RUNS, "--split-string": RUNS}, stop=True),
    "tar": ProgramOptions({"--to-command": RUNS, "--use-compress-program": RUNS, "-I": RUNS, "--info-script": RUNS,
                           "-F": RUNS, "--new-volume-script": RUNS, "--rmt-command": RUNS, "--rsh-command": RUNS,
                           "--checkpoint-action": RUNS, "-x": WRITES, "--extract": WRITES, "--get": WRITES,
                           "-c": WRITES, "--create": WRITES, "-r": WRITES, "--append": WRITES, "-u": WRITES,
                           "--update": WRITES, "-A": WRITES, "--catenate": WRITES, "--concatenate": WRITES,
                           "--delete": WRITES}),
    "rsync": ProgramOptions({"-e": RUNS, "--rsh": RUNS, "--rsync-path": RUNS, "--daemon": NETWORK,
                             "--remove-source-files": WRITES, "--delete": WRITES, "--del": WRITES,
                             "--delete-before": WRITES, "--delete-during": WRITES, "--delete-after": WRITES,
                             "--delete-excluded": WRITES, "--write-batch": WRITES, "--log-file": WRITES}),
    "less": ProgramOptions({"-o": WRITES, "-O": WRITES, "--log-file": WRITES, "--LOG-FILE": WRITES, "-k": RUNS,
                            "--lesskey-file": RUNS, "--lesskey-src": RUNS, "+": RUNS}),
    "more": ProgramOptions({"+": RUNS}),
    "vim": VIM, "vi": VIM, "nvim": VIM, "view": VIM, "vimdiff": VIM, "gvim": VIM, "ex": VIM, "rvim": VIM,
    "python": PYTHON, "python3": PYTHON, "pypy": PYTHON, "pypy3": PYTHON,
    "node": NODE, "nodejs": NODE, "bun": ProgramOptions({"-e": RUNS, "--eval": RUNS, "-p": RUNS, "--print": RUNS,
                                                        "x": RUNS}, stop=True),
    "deno": ProgramOptions({"eval": RUNS}, stop=True),
    "perl": PERL, "ruby": RUBY, "php": ProgramOptions({"-r": RUNS, "-B": RUNS, "-R": RUNS, "-E": RUNS}, stop=True),
    "sort": ProgramOptions({"-o": WRITES, "--output": WRITES, "--compress-program": RUNS}),
    "git": ProgramOptions({"-c": RUNS, "--config-env": RUNS, "--exec-path": RUNS, "--output": WRITES,
                           "--ext-diff": RUNS, "--upload-pack": RUNS, "--receive-pack": RUNS, "--exec": RUNS}),
    # curl and wget reach the network by name; these also write files the user did not name in the rule
    # (`curl -o ~/.bashrc URL`) or read a config file that may say where.
    "curl": ProgramOptions({"-o": WRITES, "--output": WRITES, "-O": WRITES, "--remote-name": WRITES,
                            "--remote-name-all": WRITES, "--output-dir": WRITES, "-D": WRITES,
                            "--dump-header": WRITES, "-c": WRITES, "--cookie-jar": WRITES, "--trace": WRITES,
                            "--trace-ascii": WRITES, "--libcurl": WRITES, "--etag-save": WRITES,
                            "--stderr": WRITES, "-K": FROM_FILE, "--config": FROM_FILE}),
    "wget": ProgramOptions({"-O": WRITES, "--output-document": WRITES, "-o": WRITES, "--output-file": WRITES,
                            "-a": WRITES, "--append-output": WRITES, "-P": WRITES, "--directory-prefix": WRITES,
                            "-x": WRITES, "--force-directories": WRITES, "-e": RUNS, "--execute": RUNS,
                            "--config": FROM_FILE, "--use-askpass": RUNS}),
    "sqlite3": ProgramOptions({"-cmd": RUNS, "-init": FROM_FILE}),
    # pytest: a plugin or class it imports, files and folders it writes (--basetemp is emptied first).
    "pytest": ProgramOptions({"-p": RUNS, "--pdbcls": RUNS, "--basetemp": WRITES, "--junitxml": WRITES,
                              "--junit-xml": WRITES, "--log-file": WRITES, "--report-log": WRITES,
                              "--result-log": WRITES, "--html": WRITES, "--debug": WRITES, "--cov-report": WRITES,
                              "-o": WRITES, "--override-ini": WRITES, "-c": FROM_FILE, "--config-file": FROM_FILE,
                              "--rootdir": FROM_FILE}),
    # npm and friends: settings on the command line that pick the shell or node options scripts run with.
    "npm": NPM, "pnpm": NPM, "yarn": NPM,
}
# fmt: on
GIT_SUBCOMMAND_OPTIONS = {name: dict.fromkeys(options, RUNS) for name, options in COMMAND_OPTIONS.items()}
GIT_SUBCOMMAND_OPTIONS["format-patch"] = {"-o": WRITES, "--output-directory": WRITES}
GIT_SUBCOMMAND_OPTIONS["archive"] |= {"-o": WRITES, "--output": WRITES, "--remote": NETWORK}
# sqlite3's dot-commands and SQL functions that run a program, write or load files (`sqlite3 db '.shell rm x'`).
SQLITE_RISKS = re.compile(r"(^|[;\n])\s*\.(shell|system|output|once|save|backup|import|load|read|excel|open|cd)\b"
                          r"|\b(writefile|load_extension|edit|readfile)\s*\(", re.I)  # fmt: skip
GIT_RUNS_ARGUMENTS = {"bisect": "run", "submodule": "foreach"}  # `git bisect run CMD`, `git submodule foreach CMD`
CLUSTERS = {"tar", "sed", "perl", "ruby", "rsync", "curl", "wget"}  # short options that group (`-xzf`, `-ni`, `-avze`)
VIM_SAFE_SHORT = re.compile(r"-[RrnNmMbhlALHFV]+")  # read-only, recovery off... flags that take no command


def risk(words: list[str], covered: int = 1) -> str:
    """Why this plain command may write, run or reach the network beyond what its rule names (`covered`
    words, the program included); "" when its arguments do nothing of the kind (or kimi knows nothing
    about the program)."""
    program = words[0].rsplit("/", 1)[-1]
    table = TABLE.get(program)
    if table is None:
        return ""
    args = words[1:]
    if program in AFTER_DASHES and "--" in args:
        args = args[: args.index("--")]
    if program == "pytest":  # `-p no:NAME` turns a plugin off: nothing is imported
        args = [a for i, a in enumerate(args) if not _plugin_off(args, i)]
    first = max(covered - 1, 0)  # the index in args from which words are not the rule's own
    if program == "git":
        return _git(args, first)
    if program == "xargs":
        named = [a for a in args[first:] if not a.startswith("-")]
        return f"xargs {RUNS} on its input (`{named[0]}`)" if named else ""
    if program == "env" and any(not a.startswith("-") and "=" not in a for a in args[first:]):
        return f"env {RUNS} with the environment it is given"
    if program == "sqlite3":
        hit = next((a for a in args[first:] if SQLITE_RISKS.search(a)), None)
        if hit is not None:
            return f"its SQL `{hit[:40]}` runs a program or writes files"
    if program == "rsync":
        remote = [a for a in args[first:] if re.match(r"[^/.][^/]*:|rsync://", a)]
        if remote:
            return f"`{remote[0]}` {NETWORK}"
    found = _options(program, table, args, first)
    if found:
        return found
    if table.script:
        return _script_risk(program, table, args, first)
    return ""


def _plugin_off(args: list[str], i: int) -> bool:
    if args[i].startswith("-pno:"):
        return True
    return (args[i] == "-p" and i + 1 < len(args) and args[i + 1].startswith("no:")) or (
        args[i].startswith("no:") and i > 0 and args[i - 1] == "-p"
    )


def _options(program: str, table: ProgramOptions, args: list[str], first: int) -> str:
    for i, arg in enumerate(args):
        if table.stop and (not arg.startswith(("-", "+")) or arg == "--"):
            return ""  # the rest are a script's or a module's arguments
        if i < first:
            continue
        what = _match(arg, table.options, program)
        if what:
            return f"`{arg}` {what}" if not arg.startswith("+") else f"`{program} {arg}` {what}"
    return ""


def _match(arg: str, options: dict[str, str], program: str) -> str:
    if arg in options:
        return options[arg]
    if arg.startswith("--"):
        name = arg.partition("=")[0]
        if name in options:
            return options[name]
        # getopt_long and git's parse-options take any unambiguous prefix (`sed --in-pl=.b` is -i): a
        # prefix of a listed option counts as that option, ambiguous or not.
        prefixed = [key for key in options if len(name) > 2 and key.startswith("--") and key.startswith(name)]
        return options[prefixed[0]] if prefixed else ""
    if arg.startswith("+") and "+" in options:
        if program == "more" and re.fullmatch(r"\+(\d+|/.*)", arg):
            return ""
        return options["+"]
    if arg.startswith("-") and len(arg) > 2:
        if program in ("vim", "vi", "nvim", "view", "vimdiff", "gvim", "ex", "rvim") and VIM_SAFE_SHORT.fullmatch(arg):
            return ""
        for flag in arg[1:]:  # a cluster (`-xzf`, `-ni`) or a short option with its value glued (`-ofile`)
            what = options.get("-" + flag, "")
            if what:
                return what
            if program not in CLUSTERS:
                break  # for most programs only the first letter is an option; the rest is its value
    if program == "tar" and not arg.startswith("-") and re.fullmatch(r"[A-Za-z]+", arg):
        for flag in arg:  # old style `tar xzf a.tgz`
            what = options.get("-" + flag, "")
            if what:
                return what
    return ""


def _git(args: list[str], first: int) -> str:
    table = TABLE["git"].options
    sub = ""
    for i, arg in enumerate(args):
        if not sub and not arg.startswith("-") and (i == 0 or args[i - 1] not in GIT_VALUED):
            sub = arg
            continue
        if i < first:
            continue
        what = _match(arg, table, "git") or (_match(arg, GIT_SUBCOMMAND_OPTIONS.get(sub, {}), "git") if sub else "")
        if what:
            return f"`git {sub + ' ' if sub else ''}{arg}` {what}".replace("  ", " ")
        if sub in GIT_RUNS_ARGUMENTS and arg == GIT_RUNS_ARGUMENTS[sub]:
            return f"`git {sub} {arg}` {RUNS}"
        if sub == "config" and not arg.startswith("-") and args.index(sub) >= first:
            return f"`git config {arg}` writes a setting git may run later"
    return ""


def _script_risk(program: str, table: ProgramOptions, args: list[str], first: int) -> str:
    """The sed or awk script(s) among the arguments, read for commands that write, run or read files."""
    scripts: list[str] = []
    given = False
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in ("-e", "--expression", "--source") or (program != "sed" and arg == "-v"):
            if i + 1 < len(args) and arg != "-v":
                scripts.append(args[i + 1])
                given = True
            skip = True
            continue
        if arg.startswith(("--expression=", "--source=")):
            scripts.append(arg.partition("=")[2])
            given = True
        elif arg.startswith("-e") and len(arg) > 2 and program == "sed":
            scripts.append(arg[2:])
            given = True
        elif program != "sed" and arg in ("-F", "--field-separator", "--assign"):
            skip = True
        elif not arg.startswith("-") and not given:
            scripts.append(arg)
            given = True
            if program == "sed":
                continue
            break
    if program == "sed" and ("--sandbox" in args):
        return ""  # GNU sed refuses e, w and r itself
    reader = _sed if program == "sed" else _awk
    for text in scripts:
        found = reader(text)
        if found:
            return f"its script {found}"
    return ""


SED_SAFE = set("=dDgGhHlnNpPqQxzF{}!")  # commands that only read the input and print


def _sed(script: str) -> str:
    """The sed commands of a script that run (`e`, `s///e`), write (`w`, `W`, `s///w`) or read files (`r`,
    `R`); "" when it holds none. What this reader cannot follow is a risk."""
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            i = _line_end(script, i)
            continue
        i = _sed_address(script, i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        c = script[i]
        if c in "ew":
            return f"`{c}` {RUNS if c == 'e' else WRITES}"
        if c == "W":
            return f"`W` {WRITES}"
        if c in "rR":
            return f"`{c}` {READS}"
        if c in "aic":  # text to the end of the line (a trailing backslash continues it)
            i = _text_end(script, i + 1)
        elif c in ":btT":
            i = _label_end(script, i + 1)
        elif c in "sy":
            try:
                i, flags = _sed_substitution(script, i + 1)
            except ValueError:
                return f"`{c}` that kimi cannot read"
            if c == "s" and "e" in flags:
                return f"`s///e` {RUNS}"
            if c == "s" and "w" in flags:
                return f"`s///w` {WRITES}"
        elif c in "lLqQ":
            i += 1
            while i < n and script[i].isdigit():
                i += 1
        elif c == "v":
            i = _label_end(script, i + 1)
        elif c in SED_SAFE:
            i += 1
        else:
            return f"`{c}`, a command kimi cannot read"
    return ""


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _label_end(text: str, i: int) -> int:
    while i < len(text) and text[i] not in ";\n}":
        i += 1
    return i


def _text_end(text: str, i: int) -> int:
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            i += 2
            continue
        if text[i] == "\n":
            return i
        i += 1
    return i


def _sed_address(script: str, i: int) -> int:
    """Past one address or a range (`1`, `$`, `/re/I`, `\\%re%`, `1~2`, `addr,+3`)."""
    for part in range(2):
        n = len(script)
        if i < n and (script[i].isdigit() or script[i] == "$"):
            i += 1
            while i < n and (script[i].isdigit() or script[i] == "~"):
                i += 1
        elif i < n and script[i] in "/\\":
            delim = script[i] if script[i] == "/" else (script[i + 1] if i + 1 < n else "/")
            i = _delimited(script, i + (1 if script[i] == "/" else 2), delim)
            while i < n and script[i] in "IM":
                i += 1
        elif i < n and script[i] in "+~" and part > 0:
            i += 1
            while i < n and script[i].isdigit():
                i += 1
        if i < n and script[i] == "," and part == 0:
            i += 1
            continue
        break
    return i


def _delimited(text: str, i: int, delim: str) -> int:
    """Past a part that ends at an unescaped `delim` (regex or replacement)."""
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == delim:
            return i + 1
        if text[i] == "\n":
            raise ValueError("newline in a sed regex")
        i += 1
    raise ValueError("unterminated")


def _sed_substitution(script: str, i: int) -> tuple[int, str]:
    """`s/re/repl/flags` from after the `s`: (the position after the flags, the flags)."""
    if i >= len(script) or script[i] in "\n\\":
        raise ValueError("no delimiter")
    delim = script[i]
    i = _delimited(script, i + 1, delim)
    i = _delimited(script, i, delim)
    start = i
    while i < len(script) and script[i] not in ";\n}":
        if script[i] in "wW":  # the rest of the line is a file name
            return len(script), script[start : i + 1]
        i += 1
    return i, script[start:i]


def _awk(program: str) -> str:
    """An awk program's calls that run (`system`, a pipe into or out of a command) or write (`print >`);
    string literals are left out first. Conservative: `|` and a print's `>` count wherever they appear."""
    text = re.sub(r'"(\\.|[^"\\])*"', '""', program)
    if re.search(r"\bsystem\s*\(", text):
        return f"`system()` {RUNS}"
    if re.search(r"\|(?!\|)", text.replace("||", "")):
        return f"`|` {RUNS}"
    if re.search(r"@load\b|@include\b", text):
        return f"`@load` {RUNS}"
    for statement in re.split(r"[;{}\n]", text):
        words = statement.strip()
        if re.match(r"(print|printf)\b", words) and ">" in _outside_parens(words):
            return f"`print >` {WRITES}"
    return ""


def _outside_parens(text: str) -> str:
    depth, out = 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)
