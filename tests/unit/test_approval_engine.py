"""The approval engine in process: modes as data, rules parsed once, one reading per call, decisions that say
what decided them, a hook's allow that never beats a deny rule, and rules saved as TOML."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from kimi_cli.approval.engine import Approver
from kimi_cli.approval.persist import RuleNotSaved, save_allow_rule
from kimi_cli.approval.policy import ASK, MODES, REFUSE, RUN, CallApproval, Question, row
from kimi_cli.approval.rules import Rules
from kimi_cli.approval.shell import lexer
from kimi_cli.approval.shell.reading import read_shell

HOOK = CallApproval(hook_allowed="the hook said so")


def asked_engine(mode: str = "auto", allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> tuple[Approver, list]:
    questions: list[tuple[str, str, str]] = []

    async def ask(question: Question, rule: str) -> str:
        questions.append((str(question), rule, question.why))
        return "no:test"

    return Approver(Rules.parse(allow, deny), mode, ask), questions


def review(engine: Approver, command: str, sandbox: str = "bwrap", call: CallApproval | None = None) -> str | None:
    return asyncio.run(engine.review_shell(command, sandbox, call))


# --- modes are data ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "sandbox", "network", "expected"),
    [
        ("auto", "bwrap", False, RUN),
        ("auto", "bwrap", True, ASK),
        ("auto", "none", False, ASK),
        ("ask", "bwrap", False, ASK),
        ("never", "bwrap", False, RUN),
        ("never", "none", False, REFUSE),
        ("yolo", "none", True, RUN),
        ("headless", "bwrap", True, RUN),
        ("headless", "none", False, REFUSE),
    ],
)
def test_each_mode_decides_a_plain_command_by_its_row(mode: str, sandbox: str, network: bool, expected: str) -> None:
    engine, _ = asked_engine(mode)
    engine.network = network
    decision = engine.decide_shell(read_shell("touch x"), sandbox)
    assert decision.action == expected
    assert f"mode {mode}" in decision.by


def test_plan_mode_keeps_the_row_of_the_mode_before_it_and_refuses_writes() -> None:
    engine, _ = asked_engine("never")
    engine.set_mode("plan")
    assert engine.row.unsandboxed == MODES["never"].unsandboxed and engine.row.writes == REFUSE
    assert engine.who == "never"
    engine.set_mode("auto")
    assert engine.row is MODES["auto"] and row("plan", "yolo").unsandboxed == RUN
    with pytest.raises(ValueError):
        row("sometimes")


# --- rules first, and a decision says what decided it -------------------------------------------------------


def test_a_deny_rule_refuses_and_names_itself_in_every_mode() -> None:
    for mode in ("ask", "auto", "never", "yolo"):
        engine, questions = asked_engine(mode, deny=("rm",))
        decision = engine.decide_shell(read_shell("true && /bin/rm -rf x"), "none")
        assert decision.action == REFUSE and decision.by == "deny rule `rm`" and not questions
    headless = Approver.unattended(Rules.parse(deny=["rm"]), yolo=True)
    assert "do not try another way" in (review(headless, "env rm x") or "")


def test_an_allow_rule_approves_a_plain_command_and_says_so() -> None:
    engine, questions = asked_engine("ask", allow=("pytest",))
    decision = engine.decide_shell(read_shell("pytest -q tests"), "none")
    assert (decision.action, decision.by) == (RUN, "allow rule `pytest`")
    assert review(engine, "pytest -q tests", "none") is None and not questions


def test_an_allow_rule_asks_for_arguments_that_run_a_program_and_says_why() -> None:
    engine, questions = asked_engine("auto", allow=("sed", "git log"))
    assert review(engine, "sed -n '1e touch X' README.md", "none") == "the user said no: test"
    assert review(engine, "git log --output=/tmp/elsewhere -1", "none") == "the user said no: test"
    assert [q[1] for q in questions] == ["", ""]  # nothing safe to remember from either
    assert "`sed` is allowed, but here its script `e` runs a program" in questions[0][2]
    assert "--output" in questions[1][2]
    assert review(engine, "sed -n 1,5p README.md", "none") is None  # the safe shape still runs unasked
    assert review(engine, "git log -1", "none") is None
    headless = Approver.unattended(Rules.parse(["sed"]), yolo=False)
    assert "runs a program, and a headless run cannot ask" in (review(headless, "sed 's/a/b/e' f", "none") or "")


def test_a_line_the_deny_rules_cannot_vet_asks_or_is_refused_unattended() -> None:
    engine, questions = asked_engine("yolo", deny=("rm",))
    assert review(engine, "$x file", "none") == "the user said no: test" and questions[0][1] == ""
    headless = Approver.unattended(Rules.parse(deny=["rm"]), yolo=True)
    assert "cannot be checked" in (review(headless, "$x file") or "")
    never, _ = asked_engine("never", deny=("rm",))
    assert "deny rules cannot be checked" in (review(never, "eval $x") or "")


# --- hooks: passed with the call, never above a deny rule --------------------------------------------------


def test_a_hooks_allow_spares_the_question_the_mode_would_ask() -> None:
    engine, questions = asked_engine("ask")
    assert review(engine, "touch x", "none", HOOK) is None and not questions
    decision = engine.decide_shell(read_shell("touch x"), "none", HOOK)
    assert decision.by == "a PreToolUse hook (the hook said so)"
    assert asyncio.run(engine.review_mcp("mcp__s__t", "{}", HOOK)) is None
    assert asyncio.run(engine.review_web("example.com", "https://example.com", HOOK)) is None
    assert not questions


def test_a_hooks_allow_never_overrides_a_deny_rule() -> None:
    engine, questions = asked_engine("auto", deny=("rm", "mcp__s__*"))
    assert "denied by the rule `rm`" in (review(engine, "rm -rf x", "none", HOOK) or "")
    assert "denied by the rule `mcp__s__*`" in (asyncio.run(engine.review_mcp("mcp__s__t", "{}", HOOK)) or "")
    assert review(engine, "$x file", "none", HOOK) == "the user said no: test"  # a possible match still asks
    assert len(questions) == 1


def test_the_call_carries_the_folder_its_redirections_open_in(tmp_path: Path) -> None:
    (tmp_path / "out.txt").symlink_to("/etc/passwd")
    engine, questions = asked_engine("auto", allow=("ls",))
    assert review(engine, "ls > out.txt", "none", CallApproval(tmp_path)) == "the user said no: test"
    assert review(engine, "ls > inside.txt", "none", CallApproval(tmp_path)) is None
    assert len(questions) == 1


# --- one reading per call, rules lexed once ---------------------------------------------------------------


def test_a_call_is_read_once_and_rules_are_lexed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = Rules.parse(["pytest", "npm test", "git status"], ["rm", "curl"])
    engine = Approver(rules, "auto")
    parsed: list[str] = []
    real = lexer.parse

    def counting(command: str, depth: int = 0) -> lexer.Script:
        parsed.append(command)
        return real(command, depth)

    monkeypatch.setattr("kimi_cli.approval.shell.reading.parse", counting)
    monkeypatch.setattr("kimi_cli.approval.rules.parse", counting)
    for _ in range(3):
        assert review(engine, "pytest -q tests/test_api.py", "none") is None
    assert parsed == ["pytest -q tests/test_api.py"] * 3  # the command once a call; no rule again


def test_one_reading_serves_allow_deny_redirects_and_the_panel() -> None:
    reading = read_shell("npm test && git status | head -3; ls")
    assert reading.parts == ["npm test", "git status", "head -3", "ls"] and reading.words is None
    plain = read_shell("python -m pytest -q > out.txt 2>&1")
    assert plain.words == ["python", "-m", "pytest", "-q"] and plain.offer == "python -m pytest"
    assert [r.op for r in plain.redirects] == [">", "2>&"]
    assert read_shell("sed -n '1e touch X' f").offer == ""  # no rule is safe to remember from it
    assert read_shell("r\\\nm x").found.names[0][0] == "rm"  # joined as bash joins it


def test_rules_added_and_removed_at_run_time_are_lexed_as_they_come() -> None:
    rules = Rules.parse(["web:example.com", "mcp__s__*"])
    rules.add_allow("make test")
    rules.add_deny("curl")
    assert rules.check(read_shell("make test -j2")).kind == "allowed"
    assert rules.check(read_shell("env curl x")).kind == "denied"
    assert rules.web_allowed("example.com") and rules.mcp_allowed("mcp__s__t") == "mcp__s__*"
    assert rules.check(read_shell("mcp__s__t")).kind == "none"  # a tool rule is not a command
    rules.remove_allow("make test")
    assert rules.check(read_shell("make test")).kind == "none" and rules.allow == ["web:example.com", "mcp__s__*"]


def test_always_keeps_the_rule_for_the_session_and_save_hands_it_on() -> None:
    saved: list[str] = []

    async def ask(question: Question, rule: str) -> str:
        return "save"

    engine = Approver(Rules(), "auto", ask, save=saved.append)
    assert review(engine, "pytest -q", "none") is None
    assert engine.rules.allow == ["pytest"] and saved == ["pytest"]
    assert review(engine, "pytest -x", "none") is None  # the kept rule now decides


# --- rules saved as TOML, in the workspace's own .kimi only ------------------------------------------------


def test_a_rule_saved_into_a_multi_line_allow_keeps_the_file_valid_toml(tmp_path: Path) -> None:
    (tmp_path / ".kimi").mkdir()
    config = tmp_path / ".kimi" / "config.toml"
    config.write_text(
        '# mine\n[approval]\nallow = [\n  "pytest",\n]\ndeny = ["rm"]  # never\n\n[web]\nenabled = true\n'
    )
    assert save_allow_rule(tmp_path, "npm test")
    text = config.read_text()
    assert tomllib.loads(text) == {"approval": {"allow": ["pytest", "npm test"], "deny": ["rm"]},
                                   "web": {"enabled": True}}  # fmt: skip
    assert text.startswith("# mine\n") and "# never" in text
    assert not save_allow_rule(tmp_path, "npm test")  # once


def test_a_rule_saved_in_a_fresh_folder_makes_its_config(tmp_path: Path) -> None:
    accepted: list[tuple[str, bytes]] = []
    assert save_allow_rule(tmp_path, "make test", lambda rel, data: accepted.append((rel, data)))
    assert tomllib.loads((tmp_path / ".kimi" / "config.toml").read_text()) == {"approval": {"allow": ["make test"]}}
    assert accepted == [(".kimi/config.toml", (tmp_path / ".kimi" / "config.toml").read_bytes())]


@pytest.mark.parametrize("where", [".kimi", ".kimi/config.toml"])
def test_a_link_on_the_way_refuses_to_save_and_writes_nothing(tmp_path: Path, where: str) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    if where == ".kimi":
        (ws / ".kimi").symlink_to(outside)
    else:
        (ws / ".kimi").mkdir()
        (ws / ".kimi" / "config.toml").symlink_to(outside / "planted.toml")  # dangling
    with pytest.raises(RuleNotSaved, match="link"):
        save_allow_rule(ws, "touch")
    assert list(outside.iterdir()) == []


def test_a_config_that_is_not_toml_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".kimi").mkdir()
    (tmp_path / ".kimi" / "config.toml").write_text("[approval\nallow = ")
    with pytest.raises(RuleNotSaved, match="not valid TOML"):
        save_allow_rule(tmp_path, "touch")
    assert (tmp_path / ".kimi" / "config.toml").read_text() == "[approval\nallow = "
