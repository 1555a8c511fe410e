"""The shell reading in process (kimi_cli.approval.shell: lexer, programs, git_options, options, reading, and
approval/rules.py's use of it): bash lines read into their structure, every program they may start, the lines
the reader refuses to guess about, and what a plain command's arguments make it do. The attacks on the same
reader (shapes that hide a program, each proven in bash) are in tests/attacks/rules/."""

from __future__ import annotations

import pytest

from kimi_cli.approval.shell.git_options import config_parameters, git_code
from kimi_cli.approval.shell.lexer import Unreadable, parse
from kimi_cli.approval.shell.options import risk
from kimi_cli.approval.shell.programs import programs
from kimi_cli.approval.shell.reading import read_shell


def names(command: str) -> list[str]:
    found = programs(command)
    assert not found.unreadable, found.unreadable
    return [name for name, _ in found.names]


def unreadable(command: str) -> str:
    return programs(command).unreadable


# --- the lexer: words, quotes, expansions, operators, redirections ------------------------------------------


def test_quotes_escapes_and_ansi_c_strings_are_removed_as_bash_removes_them() -> None:
    words = parse("""echo 'a b' "c $HOME d" e\\ f $'tab\\there\\x41\\101\\u00e9' "\\$x" ''""").commands[0].words
    assert [w.value for w in words] == ["echo", "a b", None, "e f", "tab\there\x41A\u00e9", "$x", ""]
    assert words[2].raw == '"c $HOME d"' and not words[2].literal


def test_globs_braces_and_tildes_are_words_the_shell_may_change() -> None:
    words = parse("ls *.py {a,b} ~/x [ab] 'lit*' x\\*").commands[0].words
    assert [w.glob for w in words] == [False, True, True, True, True, False, False]
    assert [w.value for w in words][5:] == ["lit*", "x*"]


def test_operators_split_commands_and_keywords_are_kept() -> None:
    script = parse("a && b || c; d | e |& f & g\nif h; then i; else j; fi; for x in 1 2; do k; done")
    assert [c.words[0].value for c in script.commands if c.words and not c.data] == list("abcdefghijk")
    assert script.operators[:7] == ["&&", "||", ";", "|", "|&", "&", "\n"]
    assert {"if", "then", "else", "fi", "for", "do", "done"} <= set(script.keywords)
    assert any(c.data for c in script.commands)  # `in 1 2` is the loop's word list, not a command


def test_assignments_redirections_and_heredocs() -> None:
    script = parse(
        "A=1 B+=x cmd arg >out 2>&1 <in >>log &>all <<<here\ncat <<EOF\nbody $x\nEOF\ncat <<-'T'\n\tq\n\tT\n"
    )
    first = script.commands[0]
    assert [(n, v.value) for n, v in first.assignments] == [("A", "1"), ("B", "x")]
    assert [(r.op, r.target.value if r.target else None) for r in first.redirects] == [
        (">", "out"), ("2>&", "1"), ("<", "in"), (">>", "log"), ("&>", "all"), ("<<<", "here")]  # fmt: skip
    bodies = [r.heredoc for c in script.commands[1:] for r in c.redirects]
    assert bodies[0] == "body $x" and (bodies[1] or "").strip() == "q"  # the quoted delimiter ends it too


def test_substitutions_are_read_into_their_own_scripts() -> None:
    word = parse("echo $(rm a) `rm b` <(rm c) >(rm d)").commands[0].words
    subs = [c.words[0].value for w in word for s in w.subs for c in s.commands]
    assert subs == ["rm"] * 4
    assert names('echo $(rm a) `rm b` "$(rm c)"') == ["rm", "rm", "rm", "echo"]  # substitutions run first


@pytest.mark.parametrize(
    "command",
    ["echo 'open", 'echo "open', "echo $(open", "echo `open", "echo ${open", "cat <<EOF\nno end", "a &&", "echo $((1"],
)
def test_a_line_that_does_not_end_where_bash_would_is_unreadable(command: str) -> None:
    with pytest.raises(Unreadable):
        parse(command)
    assert unreadable(command)


def test_depth_is_bounded() -> None:
    deep = "echo " + "$(" * 20 + "rm x" + ")" * 20
    assert unreadable(deep)
    assert unreadable("sh -c " + "'sh -c " * 14 + "x" + "'" * 14)


# --- every program a line may start --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/usr/bin/rm -rf x", ["rm"]),
        ("sudo -u me rm x", ["sudo", "-u", "me", "rm", "x"]),
        ("find . -name '*.py' -exec rm {} +", ["find", ".", "-name", "*.py", "-exec", "rm", "{}", "+"]),
        ("xargs rm < list", ["xargs", "rm"]),
        ("bash -c 'ls; rm x'", ["bash", "ls", "rm"]),
        ("sh -euc 'rm x'", ["sh", "rm"]),
        ("bash -o pipefail -c 'rm x'", ["bash", "rm"]),
        ("eval 'rm x; ls'", ["eval", "rm", "ls"]),
        ("trap 'rm x' EXIT", ["trap", "rm", "EXIT"]),
        ("alias ll='rm -rf'", ["alias", "rm"]),
        ("(cd x && rm y) | cat", ["cd", "rm", "cat"]),
        ("{ ls; rm x; }", ["ls", "rm"]),
        ('while read l; do rm "$l"; done < f', ["read", "rm"]),
        ("python3 -c 'import os'", ["python3"]),
        ("git status", ["git"]),
        ("git -c core.pager='rm x' log", ["git", "rm"]),
        ("git rebase --exec 'rm x' main", ["git", "rm"]),
        ("git rebase -x'rm x' main", ["git", "rm"]),
        ("git bisect run rm x", ["git", "rm"]),
        ("git submodule foreach 'rm x'", ["git", "rm"]),
        ("GIT_SSH_COMMAND='rm x' git fetch", ["rm", "git"]),
        ("export GIT_EXTERNAL_DIFF='rm x;'", ["export", "rm"]),
        ("[ -f x ] && test -d y", ["[", "test"]),
    ],
)
def test_the_programs_a_line_starts(command: str, expected: list[str]) -> None:
    assert names(command) == expected


def test_xargs_and_find_exec_with_a_program_they_name() -> None:
    assert "rm" in names("env -S'rm x'") and "rm" in names("env --split-string='rm x'")
    assert "echo" in names("xargs -a list") and "echo" not in names("xargs -n 1 rm < list")
    assert "rm" in names("mapfile -C 'rm x' -c 1 a < f") and "rm" in names("jobs -x rm y")
    assert "computed" in unreadable('mapfile -C "$cb" a < f') and unreadable("mapfile -C 'x(' a")
    assert "echo" in names("xargs -0 < list")  # no program: xargs runs echo
    assert {"xargs", "sh", "rm"} <= set(names("xargs sh -c 'rm \"$@\"' _ < list"))  # the input: the body's arguments
    assert {"find", "sh", "rm"} <= set(names("find . -exec sh -c 'rm \"$1\"' _ {} ';'"))


@pytest.mark.parametrize(
    "command",
    [
        "env A=1 nice -n 5 timeout 3 rm x",
        "env GIT_PAGER='rm x' git log",
        "ssh host 'rm -rf /'",
        "watch 'rm x'",
        "export EDITOR='rm x'",
        "GIT_SSH_COMMAND='rm x' git fetch",
    ],
)
def test_wrappers_and_values_a_later_program_runs_count_every_word_that_may_be_a_program(command: str) -> None:
    assert "rm" in names(command)  # each argument of a wrapper is a candidate; values are read as command lines


def test_a_value_that_runs_a_substitution_later_is_found_and_marked_unreadable() -> None:
    found = programs("PS4='$(rm x)' bash -xc ls")
    assert "rm" in [n for n, _ in found.names] and found.unreadable


def test_code_handed_to_interpreters_is_kept_for_the_deny_rules() -> None:
    found = programs("python3 -c 'import shutil; shutil.rmtree(\"x\")' && node -e 'x' && awk '{print}' f")
    assert found.code == ["-c", 'import shutil; shutil.rmtree("x")', "-e", "x", "{print}", "f"]


def test_git_config_parameters_are_read_setting_by_setting() -> None:
    assert config_parameters("'core.pager'='rm x' 'user.name'='me'") == ["rm x", "me"]  # each value
    assert names("GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='rm x'\" git status") == ["rm", "git"]
    assert git_code(parse("git grep -O'rm x' foo").commands[0].words[1:]).code == ["rm x"]
    assert git_code(parse("git -C sub -c alias.x='!rm y' x").commands[0].words[1:]).code == ["!rm y"]
    assert "rm" in names("git -C sub -c alias.x='!rm y' x")


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("$cmd arg", "computed"),
        ("source ./env.sh", "loads or renames"),
        (". ./env.sh", "loads or renames"),
        ("bash script.sh", "runs a script"),
        ("sh", "runs a script"),
        ('bash -c "$x"', "computed"),
        ('eval "$x"', "computed"),
        ("xargs -I{} sh -c {}", "xargs -I"),
        ("sudo $prog", "computed"),
        ("BASH_ENV=x bash -c ls", "BASH_ENV"),
        ("declare -i n=x", "evaluates values"),
        ("test -v 'a[$(rm x)]'", "evaluates"),
        ("printf -v 'a[0]' x", "subscripts"),
        ('git -c "$k" log', "computed"),
        ("xargs nice < list", "hands its input to `nice`"),
        ("xargs timeout 5", "hands its input to `timeout`"),
        ("xargs bash -c", "hands its input to `bash`"),
        ("xargs find .", "hands its input to `find`"),
        ("xargs python3", "hands its input to `python3`"),
        ("find / -name rm -exec {} victim ';'", "runs the files it finds"),
        ("find . -exec nice {} +", "runs the files it finds"),
        ("find . -exec sh -c {} ';'", "as shell code"),
        ("builtin command . a.sh", "loads or renames"),
        ("command -p source a.sh", "loads or renames"),
        ("env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", "BASH_FUNC_"),
        ("bash --rcfile a.sh -ic true", "start-up files"),
        ("bash -lc ls", "start-up files"),
        ("read BASH_ENV <<< a.sh; export BASH_ENV; bash -c true", "BASH_ENV or ENV"),
        ('set -a; printf -v "BASH_$x" a.sh; bash -c true', "printf -v"),
    ],
)
def test_what_cannot_be_read_from_the_line_says_so(command: str, why: str) -> None:
    assert why in unreadable(command)


# --- a plain command's arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "covered", "said"),
    [
        (["ls", "-la"], 1, ""),
        (["find", ".", "-delete"], 1, "-delete"),
        (["find", ".", "-exec", "rm", "{}", ";"], 1, "-exec"),
        (["sed", "-i", "s/a/b/", "f"], 1, "-i"),
        (["sed", "-n", "w out", "f"], 1, "w"),
        (["sed", "s/a/b/e", "f"], 1, "e"),
        (["sed", "s/a/b/g", "f"], 1, ""),
        (["awk", '{ system("rm x") }'], 1, "system"),
        (["awk", '{ print > "out" }'], 1, ">"),
        (["awk", "{ print $1 }"], 1, ""),
        (["git", "status"], 2, ""),
        (["git", "-c", "core.pager=rm", "log"], 1, "-c"),
        (["sort", "-o", "out", "in"], 1, "-o"),
    ],
)
def test_the_arguments_of_a_plain_command_beyond_the_rule(words: list[str], covered: int, said: str) -> None:
    found = risk(words, covered)
    assert (said in found) if said else found == ""
    if said:
        assert found


@pytest.mark.parametrize(
    ("words", "covered", "said"),
    [
        (["python3", "-c", "print(1)"], 1, "`-c` runs a program"),
        (["python3", "tool.py", "-c", "x"], 1, ""),  # -c is tool.py's
        (["python3", "-m", "pytest", "-x"], 3, ""),  # the rule names `python3 -m pytest`
        (["node", "--require=./hook.js", "app.js"], 1, "`--require=./hook.js` runs a program"),
        (["perl", "-i.bak", "-pe", "s/a/b/", "f"], 1, "writes files"),
        (["perl", "-ne", "print", "f"], 1, "runs a program"),  # a cluster: -n, then -e
        (["vim", "-R", "f"], 1, ""),
        (["vim", "-c", ":!rm x", "f"], 1, "runs a program"),
        (["vim", "+:!rm x", "f"], 1, "`vim +:!rm x` runs a program"),
        (["more", "+10", "f"], 1, ""),
        (["more", "+/needle", "f"], 1, ""),
        (["less", "+!rm x", "f"], 1, "runs a program"),
        (["less", "-ofile", "f"], 1, "writes files"),
        (["tar", "xzf", "a.tgz"], 1, "writes files"),  # old style: x extracts
        (["tar", "-tzf", "a.tgz"], 1, ""),
        (["tar", "-tf", "a.tar", "--to-command=sh"], 1, "`--to-command=sh` runs a program"),
        (["rsync", "-avze", "ssh", "a", "b"], 1, "runs a program"),
        (["rsync", "-a", "host:path", "."], 1, "reaches the network"),
        (["rsync", "-a", "--delete", "a/", "b/"], 1, "writes files"),
        (["sort", "-ofile", "in"], 1, "writes files"),
        (["find", ".", "-fprint", "out"], 1, "writes files"),
        (["sed", "--in-pl=.b", "s/a/b/", "f"], 1, "writes files"),  # getopt_long's prefixes
        (["git", "format-patch", "--output-d=/tmp", "-1"], 2, "writes files"),
        (["sed", "--quiet", "p", "f"], 1, ""),
        (["pytest", "--basetemp=/home/me", "-q"], 1, "writes files"),
        (["pytest", "-p", "evil_plugin"], 1, "runs a program"),
        (["pytest", "-q", "-p", "no:cacheprovider", "-pno:randomly"], 1, ""),  # plugins turned off
        (["pytest", "-q", "-x", "tests/test_api.py", "-k", "add"], 1, ""),
        (["npm", "test", "--script-shell=/tmp/sh"], 2, "runs a program"),
        (["npm", "test", "--", "--shell=x", "-c"], 2, ""),  # the test script's own arguments
        (["npm", "test"], 2, ""),
        (["curl", "-fsSLo", "/etc/x", "https://a"], 1, "writes files"),
        (["curl", "--output=../x", "https://a"], 1, "writes files"),
        (["curl", "-K", "cfg", "https://a"], 1, "from a file"),
        (["curl", "-fsSL", "https://a"], 1, ""),
        (["wget", "-qO", "/etc/x", "https://a"], 1, "writes files"),
        (["wget", "-e", "use_proxy=on", "https://a"], 1, "runs a program"),
        (["wget", "-q", "https://a"], 1, ""),
        (["git", "archive", "-o", "/tmp/x.tar", "HEAD"], 2, "writes files"),
        (["git", "archive", "HEAD"], 2, ""),
        (["sqlite3", "db", ".shell rm x"], 1, "runs a program"),
        (["sqlite3", "db", "select writefile('/x', 1)"], 1, "writes files"),
        (["sqlite3", "-cmd", ".system rm x", "db"], 1, "runs a program"),
        (["sqlite3", "db", "select 1; .tables"], 1, ""),
        (["xargs", "-0", "rm"], 1, "xargs runs a program on its input (`rm`)"),
        (["xargs", "-0"], 1, ""),
        (["env", "A=1", "ls"], 1, "env runs a program"),
        (["env", "A=1"], 1, ""),
        (["git", "log", "--output=/elsewhere"], 2, "`git log --output=/elsewhere` writes files"),
        (["git", "-C", "sub", "status"], 1, ""),
        (["git", "rebase", "-x", "make", "main"], 2, "`git rebase -x` runs a program"),
        (["git", "bisect", "run", "make"], 2, "`git bisect run` runs a program"),
        (["git", "submodule", "foreach", "make"], 2, "runs a program"),
        (["git", "config", "core.pager", "less"], 1, "writes a setting git may run later"),
        (["git", "config", "user.name", "me"], 2, ""),  # the rule names `git config`
        (["git", "format-patch", "-o", "out"], 2, "writes files"),
        (["git", "--exec-path=/x", "status"], 1, "runs a program"),
    ],
)
def test_options_that_write_run_or_reach_the_network(words: list[str], covered: int, said: str) -> None:
    found = risk(words, covered)
    assert (said in found and found) if said else found == "", found


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("1e touch X", "`e` runs a program"),
        ("w out", "`w` writes files"),
        ("$W out", "`W` writes files"),
        ("/x/r /etc/passwd", "`r` reads files it names"),
        ("1~2R f", "`R` reads files it names"),
        ("s/a/b/e", "`s///e` runs a program"),
        ("s|a|b|gw out", "`s///w` writes files"),
        (r"s/a\/b/c/g;y/abc/xyz/", ""),
        ("/start/,/end/d", ""),
        ("\\%x%Id;1,+3p;$!N", ""),
        (":a;N;ba;tb;Tc;{p};=;l40;q5", ""),
        ("a\\\ntext w here\n# w comment\np", ""),
        ("1i inserted w text", ""),
        ("2c changed", ""),
        ("v 4.2", ""),
        ("s/a", "`s` that kimi cannot read"),
        ("s\\a\\b\\", "`s` that kimi cannot read"),
        ("k", "`k`, a command kimi cannot read"),
    ],
)
def test_sed_scripts_are_read_command_by_command(script: str, said: str) -> None:
    found = risk(["sed", "-n", script, "f"])
    assert (said in found and found) if said else found == "", found


def test_sed_scripts_given_as_options_and_from_files() -> None:
    assert "`w` writes files" in risk(["sed", "-e", "p", "-e", "w out", "f"])
    assert "`w` writes files" in risk(["sed", "--expression=w out", "f"])
    assert "`w` writes files" in risk(["sed", "-ew out", "f"])
    assert "from a file" in risk(["sed", "-f", "edit.sed", "f"])
    assert risk(["sed", "--sandbox", "-e", "w out", "f"]) == ""  # GNU sed refuses w, e and r itself


@pytest.mark.parametrize(
    ("program", "said"),
    [
        ('{ system("rm x") }', "`system()` runs a program"),
        ('{ print | "sort" }', "`|` runs a program"),
        ('{ "date" | getline d }', "`|` runs a program"),
        ('{ print > "out" }', "`print >` writes files"),
        ('{ printf "%s", $1 >> "out" }', "`print >` writes files"),
        ('@load "filefuncs"', "`@load` runs a program"),
        ("{ print ($1 > 2) }", ""),
        ('$1 > 2 || $2 == "a|b" { print }', ""),
        ('{ print "a > b" }', ""),
    ],
)
def test_awk_programs(program: str, said: str) -> None:
    found = risk(["awk", "-F:", program, "f"])
    assert (said in found and found) if said else found == "", found
    assert "from a file" in risk(["awk", "-f", "prog.awk", "f"]) and risk(["awk", "-v", "x=1", "{print x}"]) == ""


# --- the reading every approval check uses -------------------------------------------------------------------


def test_a_plain_command_its_words_redirects_and_offer() -> None:
    reading = read_shell("npm test -- --watch=false > out.txt 2>&1")
    assert reading.plain and reading.words == ["npm", "test", "--", "--watch=false"]
    assert [r.op for r in reading.redirects] == [">", "2>&"] and reading.offer == "npm test"
    assert read_shell("python3 -m pytest -q").offer == "python3 -m pytest"
    assert read_shell("ls -la").offer == "ls" and read_shell("git status").offer == "git status"
    assert read_shell("find . -delete").offer == ""  # its own arguments write: no rule is safe to keep


@pytest.mark.parametrize(
    "command",
    [
        "a && b",
        "A=1 ls",
        "ls > /etc/x",
        "ls > ../x",
        "ls > ~/x",
        "ls $HOME",
        "ls *.py",
        "(ls)",
        "if a; then b; fi",
        "echo \x1b]0;x\x07",
        "cat <<< x > -n",
        "for x in a; do b; done",
        "$(ls)",
    ],
)
def test_what_is_not_one_plain_command(command: str) -> None:
    reading = read_shell(command)
    assert not reading.plain and reading.words is None and reading.offer == "" and reading.redirects == []


def test_the_parts_of_a_plain_chain_and_what_is_no_chain() -> None:
    assert read_shell("a x && b | c; d > f").parts == ["a x", "b", "c", "d > f"]
    for command in ("a $(b)", "(a; b)", "if a; then b; fi", "cat <<EOF\nx\nEOF", "a > $(b)", "X=$(y) a", "echo 'open"):
        assert read_shell(command).parts is None, command
    assert read_shell("echo \x1b[2J").parts is None  # control characters: never approved by a rule


def test_a_redirection_that_leaves_the_folder_through_a_link(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "out").symlink_to(tmp_path / "elsewhere")
    ws = str(tmp_path / "ws")
    assert read_shell("ls > out/x").leaves(ws)
    assert not read_shell("ls > mine.txt 2>&1 >/dev/null").leaves(ws) and not read_shell("ls > out/x").leaves(None)
    assert not read_shell("cat <<EOF > fine\nx\nEOF").leaves(ws)


def test_an_unreadable_line_has_no_script_and_says_why() -> None:
    reading = read_shell("echo 'open")
    assert reading.script is None and reading.opaque and reading.parts is None and not reading.plain
