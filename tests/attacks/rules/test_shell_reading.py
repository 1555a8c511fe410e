"""Approval rules on the parsed command: bypass attempts from bash references, each one asks or is denied;
the legitimate uses of the same rules still run without a question."""

from __future__ import annotations

import asyncio

import pytest

from kimi_cli.approval.engine import Approver
from kimi_cli.approval.rules import Rules, command_prefix, simple_parts
from kimi_cli.approval.shell.lexer import Unreadable, parse

ALLOW = ["pytest", "npm test", "git status", "touch"]
DENY = ["rm", "curl", "git push"]


def outcome(command: str, allow: list[str] = ALLOW, deny: list[str] = DENY, sandbox: str = "none") -> str:
    """What the terminal's approver does with `command`: runs, asks, or denied."""
    asked: list[str] = []

    async def ask(question: str, prefix: str) -> str:
        asked.append(question)
        return "no:test"

    approver = Approver(Rules.parse(allow, deny), "auto", ask, network=False)
    refusal = asyncio.run(approver.review_shell(command, sandbox))
    if asked:
        return "asks"
    if refusal and refusal.startswith("denied"):
        return "denied"
    assert refusal is None, refusal
    return "runs"


# Under allow = ["pytest", "npm test", "git status", "touch"] and --sandbox none: nothing here may run unasked.
ALLOW_BYPASSES = [
    "pytest ${x:=$'\\x24(touch M)'} ${x@P}",  # prompt expansion of a quoted $(...)
    "pytest $(touch M)",
    "pytest `touch M`",
    "pytest; touch M",
    "pytest && touch M",
    "pytest || touch M",
    "pytest | sh",
    "pytest |& sh",
    "pytest & touch M",
    "pytest\ntouch M",
    "pytest <(touch M)",
    "pytest >(touch M)",
    "pytest > /etc/passwd",
    "pytest > ../outside.txt",
    "pytest 2> ~/.bashrc",
    "pytest < /etc/shadow",
    "pytest $HOME",
    "pytest ${HOME}",
    "pytest *",  # a sandboxed command can create a file named `-p evil_plugin`
    "pytest {a,b}",
    "pytest ~/x",
    "PYTHONPATH=. pytest",
    "LD_PRELOAD=./x.so pytest",
    "pytest $'\\e[2K'",
    'pytest "$(touch M)"',
    "pytest ${x@P}",
    "pytest $((1+1))",
    "pytest $[1+1]",
    "pytest 'unterminated",
    "pytest # \x1b[2K\x1b[1Gpytest",
    "touch M # \x1b[2K\x1b[1Gpytest -q tests/test_api.py",  # control characters never match a rule
    "pytest\r",
    "pytest\u202e",
    "(pytest)",
    "{ pytest; }",
    "if pytest; then touch M; fi",
    "pytest() { touch M; }; pytest",
    "npm testx",
    "npm; test",
    "npm run evil",
    "git status; git push",
    "git -c core.pager=sh status",
    "pytest <<EOF\n$(touch M)\nEOF\n",
]

# Under deny = ["rm", "curl", "git push"] (with the sandbox on: deny rules apply everywhere).
DENY_BYPASSES = [
    ("rm -rf build", "denied"),
    ("/bin/rm -rf build", "denied"),
    ("/usr/bin/../bin/rm x", "denied"),
    ("./rm x", "denied"),
    ("\\rm x", "denied"),
    ("r''m x", "denied"),
    ('r""m x', "denied"),
    ('"rm" x', "denied"),
    ("$'\\x72m' x", "denied"),
    ("$'\\162m' x", "denied"),
    ("$'\\u0072m' x", "denied"),
    ("r\\\nm x", "denied"),
    ("command rm x", "denied"),
    ("command -p rm x", "denied"),
    ("builtin command rm x", "denied"),
    ("env rm x", "denied"),
    ("env -i PATH=/bin rm x", "denied"),
    ("env -S 'rm x'", "denied"),
    ("exec rm x", "denied"),
    ("exec -a foo rm x", "denied"),
    ("nice -n 5 rm x", "denied"),
    ("nohup rm x &", "denied"),
    ("timeout -s KILL 5 rm x", "denied"),
    ("sudo -u root rm x", "denied"),
    ("time rm x", "denied"),
    ("echo x | xargs rm", "denied"),
    ("echo x | xargs -0 rm -f", "denied"),
    ("find . -name '*.pyc' -exec rm {} +", "denied"),
    ("busybox rm x", "denied"),
    ('bash -c "rm x"', "denied"),
    ("sh -c 'rm x'", "denied"),
    ("bash -xc 'rm x'", "denied"),
    ("bash -o errexit -c 'rm x'", "denied"),
    ("dash -c 'cd /; rm x'", "denied"),
    ("zsh -c 'true && rm x'", "denied"),
    ("sh -c \"sh -c 'rm x'\"", "denied"),
    ("echo $(rm x)", "denied"),
    ('echo "$(rm x)"', "denied"),
    ("echo `rm x`", "denied"),
    ("echo $(echo $(rm x))", "denied"),
    ("x=$(rm y) true", "denied"),
    ("cat <(rm x)", "denied"),
    ("tee >(rm x)", "denied"),
    ("echo hi > $(rm x)", "denied"),
    ("true | rm x", "denied"),
    ("true |& rm x", "denied"),
    ("true && rm x", "denied"),
    ("false || rm x", "denied"),
    ("true; rm x", "denied"),
    ("true\nrm x", "denied"),
    ("true & rm x", "denied"),
    ("(rm x)", "denied"),
    ("( (rm x) )", "denied"),
    ("{ rm x; }", "denied"),
    ("! rm x", "denied"),
    ("if true; then rm x; fi", "denied"),
    ("while false; do :; done; rm x", "denied"),
    ("for f in a b; do rm $f; done", "denied"),
    ("eval rm x", "denied"),
    ("eval 'r''m x'", "denied"),
    ('eval "echo; rm x"', "denied"),
    ("eval $'\\x72m x'", "denied"),
    ("trap 'rm x' EXIT", "denied"),
    ("alias x=rm; x file", "denied"),
    ("PS4='$(rm x)' bash -xc true", "denied"),
    ("GIT_SSH_COMMAND='rm -rf x' git fetch", "denied"),
    ("true # harmless\nrm x", "denied"),
    ("ssh host 'rm -rf x'", "denied"),
    ("watch 'rm x'", "denied"),
    ("python3 -c \"import os; os.system('rm -rf x')\"", "denied"),
    ("git push origin main", "denied"),
    ("/usr/bin/git -C . push", "denied"),
    ("env curl http://x", "denied"),
    # Unreadable: the program cannot be known from the line, so it asks.
    ("$x file", "asks"),
    ("${x} file", "asks"),
    ("IFS=,; x=rm,-rf,y; $x", "asks"),
    ("a=r; b=m; $a$b x", "asks"),
    ("rm${IFS}x", "asks"),
    ("{rm,-rf,x}", "asks"),
    ("/bi?/rm x", "asks"),
    ("/bin/r[m] x", "asks"),
    ("/bin/r* x", "asks"),
    ("\"$(printf '\\x72\\x6d')\" x", "asks"),  # rm comes out of printf when it runs
    ("$(printf rm) x", "asks"),
    ("`echo rm` x", "asks"),
    ("x=rm; ${x} y", "denied"),  # a value that reads as a command counts as one
    ("${x:=$'\\x24(rm y)'} ${x@P}", "asks"),
    ("echo ${x@P}", "asks"),
    ("echo ${!x}", "asks"),
    ("echo $((a[$(rm x)]))", "asks"),
    ("((a[0]))", "asks"),
    ("[[ $x -eq 1 ]]", "asks"),
    ("declare -i n; n=$x", "asks"),
    ("let n=x", "asks"),
    ("printf -v 'a[$(rm x)]' %s 1", "asks"),
    ("read 'a[$(rm x)]'", "asks"),
    ("test -v 'a[$(rm x)]'", "asks"),
    ("source ./evil.sh", "asks"),
    (". ./evil.sh", "asks"),
    ("hash -p /bin/rm ls; ls x", "asks"),
    ("enable -f ./evil.so rm2", "asks"),
    ("bash ./script.sh", "asks"),
    ("echo rm x | bash", "asks"),
    ("bash <<< 'rm x'", "asks"),
    ("sh -s < cmds.txt", "asks"),
    ('bash -c "$cmd"', "asks"),
    ('eval "$cmd"', "asks"),
    ("echo x | xargs -I{} {} y", "asks"),
    ("echo rm x | parallel", "asks"),
    ("env $x", "asks"),
    ("case x in x) rm y;; esac", "asks"),
    ("true;; rm x", "asks"),
    ("f() { rm x; }; f", "asks"),
    ("function f { rm x; }", "asks"),
    ("coproc rm x", "asks"),
    ("a=(rm x); ${a[@]}", "asks"),
    ("cat <<EOF\n$(rm x)\nEOF\n", "asks"),
    ("cat <<EOF\nno end", "asks"),
    ("echo 'unterminated", "asks"),
    ('echo "unterminated', "asks"),
    ("echo $(unterminated", "asks"),
    ("echo )", "asks"),
]


@pytest.mark.parametrize("command", ALLOW_BYPASSES)
def test_an_allow_rule_never_runs_a_bypass_without_asking(command: str) -> None:
    assert outcome(command, deny=[]) == "asks"


@pytest.mark.parametrize(("command", "expected"), DENY_BYPASSES)
def test_a_deny_rule_catches_the_program_wherever_it_appears(command: str, expected: str) -> None:
    assert outcome(command, allow=[], sandbox="bwrap") == expected


def test_there_are_at_least_40_bypass_attempts_of_each_kind() -> None:
    assert len(ALLOW_BYPASSES) >= 40
    assert len([c for c, e in DENY_BYPASSES if e == "denied"]) >= 40
    assert len([c for c, e in DENY_BYPASSES if e == "asks"]) >= 40


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("pytest -q tests/test_api.py", ["pytest"]),
        ("pytest -k 'add and not slow' tests/", ["pytest"]),
        ('pytest -q "tests/test api.py"', ["pytest"]),
        ("pytest -q > out.txt 2>&1", ["pytest"]),
        ("pytest -q 2>/dev/null", ["pytest"]),
        ("npm test", ["npm test"]),
        ("npm test -- --watch=false", ["npm test"]),
        ("git status --short", ["git status"]),
    ],
)
def test_plain_commands_under_an_allow_rule_run_without_asking(command: str, allow: list[str]) -> None:
    assert outcome(command, allow=allow, deny=DENY) == "runs"


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "echo $HOME",
        'echo "rm is a command"',
        "grep -rn 'rm -rf' .",
        "git commit -m 'rm old files'",
        "cat <<'EOF' > notes.txt\n$(not run)\nEOF\n",
        "for f in *.py; do echo $f; done",
        '[ -n "$x" ] && echo yes',
        "export PATH=$PATH:/opt/bin",
        "make -j4 && ./run_tests.sh",
    ],
)
def test_ordinary_commands_under_deny_rules_run_in_the_sandbox(command: str) -> None:
    assert outcome(command, allow=[], sandbox="bwrap") == "runs"


def test_without_deny_rules_unreadable_commands_behave_as_before() -> None:
    assert outcome("$x file", allow=[], deny=[], sandbox="bwrap") == "runs"
    assert outcome("$x file", allow=[], deny=[], sandbox="none") == "asks"


def test_headless_applies_the_same_rules_and_refuses_what_it_cannot_vet() -> None:
    approver = Approver.unattended(Rules.parse(["pytest"], ["rm"]), yolo=False)
    assert asyncio.run(approver.review_shell("pytest -q tests/test_api.py", "none")) is None
    assert "denied" in (asyncio.run(approver.review_shell("env /bin/rm x", "bwrap")) or "")
    assert "cannot be checked" in (asyncio.run(approver.review_shell("$x y", "bwrap")) or "")
    assert "--yolo" in (asyncio.run(approver.review_shell("pytest; touch M", "none")) or "")


def test_always_is_offered_only_for_one_plain_command() -> None:
    assert command_prefix("pytest -q tests/test_api.py") == "pytest"
    assert command_prefix("npm test") == "npm test"
    assert command_prefix("python -m pytest -q") == "python -m pytest"
    assert command_prefix("pytest; rm x") == ""
    assert command_prefix("touch M # \x1b[2K\x1b[1Gpytest") == ""
    assert command_prefix("pytest $(x)") == ""


def test_always_keeps_a_rule_that_still_asks_for_options_that_write_or_run() -> None:
    """`always` on a harmless sed or git log keeps the program's rule, and that rule does not approve the
    same program told to run or write; a line that itself writes offers no rule at all."""
    kept: list[str] = []

    async def ask(question: str, prefix: str) -> str:
        kept.append(prefix)
        return "always"

    rules = Rules.parse([], [])
    approver = Approver(rules, "ask", ask, network=False)
    assert asyncio.run(approver.review_shell("sed -n 1p README.md", "none")) is None
    assert asyncio.run(approver.review_shell("git log -1", "none")) is None
    assert kept == ["sed", "git log"] and rules.allow == ["sed", "git log"]
    assert outcome("sed -n 1p README.md", rules.allow, []) == "runs"
    assert outcome("git log -1", rules.allow, []) == "runs"
    assert outcome("sed -n '1e touch X' README.md", rules.allow, []) == "asks"
    assert outcome("git log --output=/tmp/x -1", rules.allow, []) == "asks"
    assert command_prefix("git log --output=/tmp/x -1") == "" and command_prefix("sed 1e x") == ""


def test_always_on_a_runner_that_starts_a_named_program_keeps_that_name() -> None:
    """`uv run pytest` keeps `uv run pytest`: `uv run` alone would approve `uv run rm -rf ~` later."""
    assert command_prefix("uv run pytest -q") == "uv run pytest"
    assert command_prefix("poetry run pytest") == "poetry run pytest"
    assert command_prefix("npm exec eslint .") == "npm exec eslint"
    assert command_prefix("uv run --with x pytest") == "" and command_prefix("uv tool run ruff") == ""
    assert outcome("uv run rm -rf victim", ["uv run pytest"], []) == "asks"
    assert outcome("uv run pytest -q", ["uv run pytest"], []) == "runs"
    assert command_prefix("npm test") == "npm test" and command_prefix("cargo build") == "cargo build"


def test_always_for_a_line_that_cannot_be_remembered_approves_once_only() -> None:
    async def ask(question: str, prefix: str) -> str:
        assert prefix == ""
        return "always"

    rules = Rules.parse([], [])
    approver = Approver(rules, "auto", ask, network=False)
    assert asyncio.run(approver.review_shell("pytest && touch M", "none")) is None
    assert rules.allow == []


def test_simple_parts_splits_a_plain_chain_for_per_part_approval() -> None:
    assert simple_parts("npm test && git status | head -3; ls") == ["npm test", "git status", "head -3", "ls"]
    assert simple_parts("echo $(rm x)") is None
    assert simple_parts("if true; then ls; fi") is None
    assert simple_parts("echo ${x@P}") is None


def test_the_reader_is_iterative_enough_for_deep_nesting() -> None:
    deep = "echo " + "$(" * 50 + "x" + ")" * 50
    with pytest.raises(Unreadable):
        parse(deep)
