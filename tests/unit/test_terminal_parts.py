"""In-process tests of the terminal's parts: the command registry and the `/` menu's descriptions, session
ids by prefix, the recap's choice of exchanges, the config edit `kimi login` makes, and the filter that
keeps asyncio's already-reaped-child warning off the screen."""

from __future__ import annotations

import io
import logging
import tomllib
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from kimi_cli.cli.login import updated_config
from kimi_cli.errors import ConfigError
from kimi_cli.frontends.terminal.prompt import KimiCompleter
from kimi_cli.frontends.terminal.recap import exchanges
from kimi_cli.frontends.terminal.slash_registry import CommandRegistry, SlashCommand


async def _noop(arg: str) -> None:
    return None


def registry() -> CommandRegistry:
    reg = CommandRegistry()
    reg.add(SlashCommand("help", "the commands and keys", _noop))
    reg.add(SlashCommand("resume", "switch to an earlier session", _noop, "/resume [ID]"))
    reg.add(SlashCommand("exit", "leave", _noop, aliases=("quit",)))
    return reg


def test_commands_are_data_and_a_taken_name_is_refused_unless_replaced() -> None:
    reg = registry()
    reg.add(SlashCommand("standup", "summarise yesterday", _noop, source="user"))
    assert [c.name for c in reg.listed()] == ["help", "resume", "exit", "standup"]
    assert reg.get("quit") is reg.get("exit") and reg.suggest("hepl") == "help"
    with pytest.raises(ValueError, match="already a command"):
        reg.add(SlashCommand("help", "mine", _noop, source="user"))
    with pytest.raises(ValueError, match="invalid"):
        reg.add(SlashCommand("two words", "x", _noop))
    reg.add(SlashCommand("standup", "v2", _noop, source="user"), replace=True)
    assert reg.get("standup").description == "v2"  # type: ignore[union-attr]


def test_the_slash_menu_offers_names_with_their_descriptions() -> None:
    reg = registry()
    reg.add(SlashCommand("standup", "summarise yesterday", _noop, source="~/.kimi/commands"))
    completer = KimiCompleter(reg, lambda: ["src/app.py", "README.md"])

    def complete(text: str) -> list[tuple[str, str]]:
        found = completer.get_completions(Document(text, len(text)), CompleteEvent(text_inserted=True))
        return [(c.text, c.display_meta_text) for c in found]

    assert complete("/")[:2] == [("/help", "the commands and keys"), ("/resume", "switch to an earlier session")]
    assert complete("/st") == [("/standup", "summarise yesterday (~/.kimi/commands)")]
    assert complete("/resume 2026") == []  # an argument is not a command
    assert [t for t, _ in complete("look at @app")] == ["@src/app.py"]


def test_a_session_id_prefix_must_name_one_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from kimi_cli.session.store import resolve_id
    from kimi_cli.util.paths import sessions_dir

    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "home"))
    work = tmp_path / "work"
    work.mkdir()
    ids = ["20261201-000000-aaaaaa", "20261201-000000-aabbbb", "20261130-120000-cccccc"]
    for sid in ids:
        folder = sessions_dir(work) / sid
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({"id": sid, "title": "t", "status": "done", "prompts": 1}))
    assert resolve_id(work, ids[0]) == ids[0]
    assert resolve_id(work, "20261130") == ids[2]
    assert resolve_id(work, "20261201-000000-aab") == ids[1]
    with pytest.raises(ConfigError, match="give more of the id"):
        resolve_id(work, "20261201-000000-aa")
    with pytest.raises(ConfigError, match="kimi sessions"):
        resolve_id(work, "nope")


def test_the_recap_takes_the_last_two_exchanges_from_the_users_prompts() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "answer 1"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a", "content": "out"},
        {"role": "user", "content": "[kimi] files changed since the pack: calc.py"},  # a note, not the user
        {"role": "assistant", "content": "answer 2"},
        {"role": "user", "content": "third"},
        {"role": "assistant", "content": "answer 3"},
    ]
    assert exchanges(messages, ["first", "second", "third"]) == [("second", "answer 2"), ("third", "answer 3")]
    assert exchanges(messages, []) == [("second", "answer 2"), ("third", "answer 3")]  # old sessions: no turns


def test_login_sets_top_level_keys_and_keeps_the_rest_of_the_file() -> None:
    before = '# my settings\nmodel = "old"\n\n[retry]\nbase_delay = 0.5\n\n[approval]\nallow = ["pytest"]\n'
    after = updated_config(before, {"provider": "openai", "base_url": 'http://h/"v1"', "model": "m", "api_key": None})
    data = tomllib.loads(after)
    assert data["provider"] == "openai" and data["base_url"] == 'http://h/"v1"' and data["model"] == "m"
    assert data["retry"] == {"base_delay": 0.5} and data["approval"] == {"allow": ["pytest"]}
    assert "api_key" not in data and after.startswith("# my settings\n")
    assert tomllib.loads(updated_config("", {"provider": "moonshot", "api_key": "sk-1"})) == {
        "provider": "moonshot",
        "api_key": "sk-1",
    }


def test_asyncios_already_reaped_warning_is_kept_off_the_terminal() -> None:
    from kimi_cli.frontends.quiet import quiet_child_watcher

    quiet_child_watcher()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        logger.warning("Unknown child process pid %d, will report returncode 255", 29942)
        logger.warning("something else about pid %d", 29942)
    finally:
        logger.removeHandler(handler)
    assert "Unknown child process" not in stream.getvalue()
    assert "something else about pid 29942" in stream.getvalue()  # only that message is filtered
