"""The shell reading against bash itself: every program bash starts for a line must be among the programs the
reader lists for it, or the reader must call the line opaque (then no allow rule approves it and every deny
rule counts it as a possible match).

A generator (hypothesis) builds lines from bash's grammar: simple commands with their names spelled every
way bash accepts, assignments, redirections, quoted and unquoted here-documents (end lines and
substitutions split by backslash-newlines), pipelines, lists, subshells, groups, if/while/for, command,
process and arithmetic substitutions, brace and parameter expansion, alias and function definitions, `exec`,
`command`, `builtin`, `eval`, `source`, `BASH_ENV`, `env`, `xargs`, `timeout`, `sh -c`; and then splits the
line with backslash-newlines at random places. Each line runs under real bash (`bash -c`, as the sandbox
runs it) in a throwaway folder whose PATH holds only shims that log every program started, one batch of lines
under one runner that waits for all a line started, background included; where strace works, an exec trace
of the whole process tree too, which also sees programs started by any other path (tests/bash_lab.py).

In CI: at least 5,000 generated lines within 60 s on 2 cores (KIMI_DIFF_LINES raises it for a longer hunt,
KIMI_DIFF_SEED picks other lines), and every red-team shape as a fixed case.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from bash_lab import LEAVES, Lab, make_lab
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from kimi_cli.approval.shell.reading import read_shell

pytestmark = pytest.mark.timeout(240)

DEFAULT_LINES = 5000
# The exec trace costs about twice a line's run: generated lines take it one in TRACE_EVERY (the shims see
# every program on PATH and under ../bin; the trace also sees one started by any other path).
TRACE_EVERY = int(os.environ.get("KIMI_DIFF_TRACE_EVERY", "4"))


@pytest.fixture(scope="module")
def labs(tmp_path_factory: pytest.TempPathFactory) -> list[Lab]:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for the shims")
    base = tmp_path_factory.mktemp("bash-lab")
    return [make_lab(base / f"w{i}") for i in range(2)]


def misses(lab: Lab, lines: list[str], trace: bool) -> list[str]:
    """The lines of which bash started a program the reader did not list (and did not call opaque),
    described."""
    listed = {}
    for line in lines:
        reading = read_shell(line)
        if not reading.opaque:
            listed[line] = {name for name, _ in reading.found.names}
    vetted = list(listed)
    found = []
    for line, started in zip(vetted, lab.run_batch(vetted, trace), strict=True):
        if started - listed[line]:
            found.append(
                f"{line!r}: bash started {sorted(started - listed[line])}; the reader listed {sorted(listed[line])}"
            )
    return found


def missed(lab: Lab, line: str) -> list[str]:
    return misses(lab, [line], True)


def check_lines(labs: list[Lab], lines: list[str], trace_every: int = 1) -> list[str]:
    """Run `lines` over the labs (one worker each, each a batch under the exec trace and a batch without:
    one line in `trace_every` goes to the first); the misses, described."""
    chunks = [lines[i :: len(labs)] for i in range(len(labs))]

    def work(lab: Lab, chunk: list[str]) -> list[str]:
        traced = chunk[::trace_every]
        rest = [line for i, line in enumerate(chunk) if i % trace_every]
        return misses(lab, traced, True) + misses(lab, rest, False)

    with ThreadPoolExecutor(len(labs)) as pool:
        results = pool.map(work, labs, chunks)
    return [m for found in results for m in found]


# --- fixed cases: every red-team shape -------------------------------------------------------------------

SHAPES = [
    "cat <<EOF\nhello\nEO\\\nF\nrm -f victim\n",  # the end line split by a backslash-newline
    "cat <<EOF\n$\\\n(touch X)\nEOF\n",  # a substitution split the same way
    "cat <<'EOF'\nEO\\\nF\nrm x\nEOF\n",  # quoted: no joining, rm is text
    "cat <<EOF\nEOF\\\\\nrm x\nEOF\n",  # an escaped backslash does not join
    "cat <<-EOF\n\t\tEO\\\nF\nrm x\n",
    "r\\\nm x",
    "tr\\\nue &\\\n& rm x",
    "echo $\\\n(rm x)",
    "echo a # c \\\nrm x",
    "{rm,' victim'}",
    "/bin/r[' 'm] victim",
    "time -p rm victim",
    "! time -p rm victim",
    "git -c alias.x='!rm victim' x",
    "env rm x",
    "env -S 'rm x'",
    "echo x | xargs rm",
    "echo x | xargs",
    "BASH_ENV=a.sh bash -c true",
    "env BASH_ENV=a.sh bash -c true",
    "export BASH_ENV=a.sh; bash -c true",
    "source a.sh",
    ". a.sh",
    "bash a.sh",
    "alias x=rm; x file",
    "f() { rm x; }; f",
    "eval 'r''m x'",
    "trap 'rm x' EXIT",
    "exec rm x",
    "command -p rm x",
    "builtin command rm x",
    "timeout 5 rm x",
    "nice -n 5 rm x",
    "nohup rm x",
    "sh -c 'rm x'",
    "bash -xc 'rm x'",
    "PS4='$(rm x)' bash -xc true",
    "x=$(rm y) true",
    "cat <(rm x)",
    "echo hi > $(rm x)",
    "echo $((1+$(rm x)))",
    "coproc rm x",
    "a[$(rm x)]=1",
    "${x:-rm} y",
    "$P\\\nm x",
    "xargs nice < a.sh",  # the input names the program a wrapper runs
    "echo touch y | xargs timeout 5",
    "echo touch y | xargs bash -c",
    "echo touch | xargs env",
    "find . -name a.sh -exec {} ';'",  # find runs what it finds
    "find . -name a.sh -exec nice {} +",
    "find . -name a.sh -exec sh -c {} ';'",
    "builtin command . a.sh",  # command and builtin run builtins too
    "command source a.sh",
    "builtin . a.sh",
    "env 'BASH_FUNC_ls%%=() { touch y; }' bash -c ls",  # a function handed to a child bash
    "bash --rcfile a.sh -ic true",  # start-up files
    "env -S'touch y'",  # env -S glued
    "env --split-string='touch y'",
    "read BASH_ENV <<< a.sh; export BASH_ENV; bash -c true",  # BASH_ENV set without an assignment
    "printf -v BASH_ENV a.sh; export BASH_ENV; bash -c true",
    "for BASH_ENV in a.sh; do export BASH_ENV; bash -c true; done",
    'x=ENV; set -a; printf -v "BASH_$x" a.sh; bash -c true',
    "xargs -a a.sh",  # no program after the option's value: echo
    "mapfile -C 'touch y' -c 1 x <<< a",  # builtins that run code or a command
    "readarray -C'touch y' -c 1 x <<< a",
    "jobs -x touch y",
]


def test_every_red_team_shape_is_listed_or_opaque(labs: list[Lab]) -> None:
    assert check_lines(labs, SHAPES) == []


def test_the_shims_and_the_trace_see_what_bash_runs(labs: list[Lab]) -> None:
    """The harness can fail: a program bash starts is seen, by PATH and by absolute path."""
    lab = labs[0]
    assert {"rm", "touch"} <= lab.run("rm x; touch y")
    assert {"env", "rm"} <= lab.run("env rm x")
    assert "rm" in lab.run(f"{lab.bin}/rm x")
    assert "rm" in lab.run("../b\\\nin/rm x") and missed(lab, "../b\\\nin/rm x") == []
    assert "rm" in lab.run("cat <<EOF\nhi\nEO\\\nF\nrm x\n")
    assert "touch" in lab.run("BASH_ENV=a.sh bash -c true")
    assert "rm" in lab.run("(rm x &) ; true")  # what a line leaves in the background is waited for
    if lab.can_trace:
        assert "ls" in lab.run("command -p ls")  # not a shim: the default PATH's real ls, seen by the trace


# --- generated lines --------------------------------------------------------------------------------------

NAMES = [*LEAVES, "find", "env", "nice", "xargs", "timeout 5", "nohup", "true", ":", "echo", "source", "."]
ARGS = [
    "x",
    "-f",
    "'a b'",
    '"$HOME"',
    "*",
    "{a,b}",
    "~",
    "--",
    "-c",
    "'rm x'",
    "a\\ b",
    "-n",
    "'1e id'",
    '"$(id)"',
    "`id`",
    "$(rm q)",
    "<(id)",
    "-exec",
    "rm",
    "{}",
    "+",
    "';'",
    "-0",
    "-S",
    "$x",
    "${x:-id}",
    "$((1+2))",
    "a.sh",
    "'{}'",
    "$((1+$(id)))",
    '"${x:-$(id)}"',
    ">(id)",
    "$[1+1]",
    "${x/a/$(id)}",
]
RARE_ARGS = ["${x@P}", "$'\\x72m'", "${#x}", "$HOME/x", '"a\\\nb"']
REDIRECTS = ["> out", "2>&1", "< a.sh", "<<< word", ">> out", "&> /dev/null", ">&2", "2>/dev/null", "> $(id)"]
ASSIGNMENTS = ["X=1", 'A="$(id)"', "PS4='$(id)'", "GIT_SSH_COMMAND='rm y'", "BASH_ENV=a.sh", "a[$(id)]=1"]
HEREDOCS = [
    "<<EOF\nhello\nEOF\n",
    "<<EOF\n$(id)\nEOF\n",
    "<<'EOF'\n$(id)\nEOF\n",
    "<<EOF\nEO\\\nF\nrm y\n",
    "<<EOF\n$\\\n(id)\nEOF\n",
    "<<-EOF\n\thi\n\tEOF\n",
    '<<"EOF"\nEO\\\nF\nEOF\n',
    "<<EOF\nEOF\\\\\nrm y\nEOF\n",
    "<<E\\\nOF\nhi\nEOF\n",
    "<<EOF\n`id`\nEOF\n",
]
FORMS = [
    "{a} | {b}", "{a} |& {b}", "{a} && {b}", "{a} || {b}", "{a}; {b}", "{a}\n{b}", "{a} & {b}", "( {a} )",
    "{{ {a}; }}", "if {a}; then {b}; fi", "while false; do {a}; done", "for i in 1; do {a}; done", "! {a}",
    "time -p {a}", "echo $({a})", "echo `{a}`", "cat <({a})", "f() {{ {a}; }}; f", "exec {a}", "command {a}",
    "builtin command {a}", "echo x | xargs {a}", "env X=1 {a}", "{a} &", "EVAL", "SH", "ALIAS", "TRAP",
    "xargs {a} < a.sh", "until {a}; do {b}; break; done", "case x in x) {a};; esac", "[[ -n x ]] && {a}",
    "(( 1 )) && {a}", "select i in 1; do {a}; break; done <<< 1", "{a} > >({b})", "f() ( {a} ); f",
    "function f {{ {a}; }}; f", "{a} | while read l; do {b}; done",
]  # fmt: skip
QUOTED = {"EVAL": ("eval '{}'", 'eval "{}"'), "SH": ("sh -c '{}'", 'bash -c "{}"'),
          "ALIAS": ("alias a='{}'; a", 'alias a="{}"; a'), "TRAP": ("trap '{}' EXIT", 'trap "{}" EXIT')}  # fmt: skip


def spelled(rnd: random.Random, name: str) -> str:
    """A program's name as bash accepts it: quoted, escaped, split by a backslash-newline, by absolute path."""
    if " " in name:
        return name
    forms = [name, name, f"'{name}'", f'"{name}"', "\\" + name, name[:1] + "''" + name[1:], f"$'{name}'",
             name[:1] + "\\\n" + name[1:], f"../bin/{name}"]  # fmt: skip
    return rnd.choice(forms)


def simple(rnd: random.Random) -> str:
    words = [rnd.choice(ASSIGNMENTS)] if rnd.random() < 0.15 else []
    words.append(spelled(rnd, rnd.choice(NAMES)))
    for _ in range(rnd.randint(0, 3)):
        words.append(rnd.choice(RARE_ARGS) if rnd.random() < 0.05 else rnd.choice(ARGS))
    if rnd.random() < 0.25:
        words.append(rnd.choice(REDIRECTS))
    text = " ".join(words)
    return text + " " + rnd.choice(HEREDOCS) if rnd.random() < 0.2 else text


def command(rnd: random.Random, depth: int = 0) -> str:
    """A command line from bash's grammar: a simple command, or a compound of them (at most three levels)."""
    if depth >= 3 or rnd.random() < 0.35:
        return simple(rnd)
    form = rnd.choice(FORMS)
    a = command(rnd, depth + 1)
    if form in QUOTED:
        single, double = QUOTED[form]
        return single.format(a) if "'" not in a else double.format(a if '"' not in a else "id")
    b = command(rnd, depth + 1) if "{b}" in form else ""
    return form.format(a=a, b=b)


def line(rnd: random.Random) -> str:
    text = command(rnd)
    for _ in range(rnd.choice([0, 0, 1, 2])):  # split it with backslash-newlines anywhere
        at = rnd.randint(0, len(text))
        text = text[:at] + "\\\n" + text[at:]
    return text


def test_generated_lines_never_start_a_program_the_reader_missed(labs: list[Lab]) -> None:
    """Hypothesis draws the randomness (reproducible by KIMI_DIFF_SEED); the grammar above spends it, 100
    lines an example, so that thousands of lines fit the time bash needs to run them."""
    total = int(os.environ.get("KIMI_DIFF_LINES", DEFAULT_LINES))
    per_example = 100
    found: list[str] = []
    count = 0
    began = time.monotonic()

    @seed(int(os.environ.get("KIMI_DIFF_SEED", "40")))
    @settings(
        max_examples=total // per_example,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(st.randoms(use_true_random=True))
    def batch(rnd: random.Random) -> None:
        nonlocal count
        generated = [line(rnd) for _ in range(per_example)]
        count += len(generated)
        found.extend(check_lines(labs, generated, TRACE_EVERY))

    batch()
    took = time.monotonic() - began
    traced = f"1 in {TRACE_EVERY} under strace" if labs[0].can_trace else "no exec trace here: the shims only"
    print(f"differential: {count} lines in {took:.1f} s, {len(found)} missed ({traced})")
    assert count >= total
    assert found == [], "\n".join(found[:20])
