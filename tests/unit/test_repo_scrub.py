"""repo_scrub's config rewrite: what git reads back is exactly what was kept, for any text a command can write."""

from __future__ import annotations

from kimi_cli.sandbox.guard.repo_scrub import list_config, render_config, scrub_config

TRICKY = (
    b'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch X"\n'
    b'[user]\n\tname = "  spaced  "\n\temail = a#b;c\n\tbare\n\tempty =\n'
    b'[remote "o.r\\"g\\\\x"]\n\turl = "line\\none\\ttab \\\\ \\"q\\""\n'
    b'[url "https://x.y/"]\n\tinsteadOf = q\n[a.b]\n\tc = 1\n[core]\n\tpager = less \\\n\t-R\n'
    b'[alias]\n\tst = status\n\tx = "  !rm -rf ."\n[submodule "s"]\n\tupdate = checkout\n'
)


def test_a_rendered_config_reads_back_as_the_entries_it_was_made_from() -> None:
    entries = list_config(TRICKY)
    assert entries is not None and len(entries) > 10
    assert list_config(render_config(entries)) == entries


def test_scrub_takes_out_program_entries_only_and_keeps_the_ones_allowed() -> None:
    allowed = frozenset({(b"core.pager", b"less  -R")})  # a continued line: git keeps its whitespace, as one
    text, bad = scrub_config(TRICKY, allowed)
    assert text is not None
    assert {k for k, _ in bad} == {b"core.fsmonitor", b"alias.x"}
    kept = dict((k, v) for k, v in list_config(text) or [])
    assert kept[b"core.pager"] == b"less  -R" and kept[b"alias.st"] == b"status"
    assert kept[b"submodule.s.update"] == b"checkout" and b"core.fsmonitor" not in kept
    assert kept[b"user.bare"] is None and kept[b"user.empty"] == b""


def test_a_config_git_refuses_is_left_alone() -> None:
    assert list_config(b"[core\n\tfsmonitor = x\n") is None
    assert scrub_config(b"[core\n\tfsmonitor = x\n", frozenset()) == (None, [])
