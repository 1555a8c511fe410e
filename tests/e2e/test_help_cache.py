"""`kimi --help` from its cache (issue 47) prints exactly what Typer renders, for each width and colour setting,
and a change to any of kimi's modules is a different key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kimi_cli.cli import help_cache


def kimi_help(cache: Path, **env: str) -> bytes:
    full = {**os.environ, "XDG_CACHE_HOME": str(cache), **env}
    full.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
    out = subprocess.run([sys.executable, "-m", "kimi_cli", "--help"], env=full, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("env", [{}, {"COLUMNS": "60"}, {"FORCE_COLOR": "1", "COLUMNS": "100"}, {"NO_COLOR": "1"}])
def test_the_cached_help_is_what_typer_renders(tmp_path: Path, env: dict[str, str]) -> None:
    rendered = kimi_help(tmp_path, _KIMI_HELP_CACHE="off", **env)
    assert not (tmp_path / "kimi" / "help").exists() or not any((tmp_path / "kimi" / "help").iterdir())
    first = kimi_help(tmp_path, **env)  # a miss: rendered and stored
    assert len(list((tmp_path / "kimi" / "help").iterdir())) == 1
    second = kimi_help(tmp_path, **env)  # a hit
    assert rendered == first == second and b"Usage: " in second


def test_another_width_or_colour_is_another_entry_not_the_first_ones_bytes(tmp_path: Path) -> None:
    wide = kimi_help(tmp_path, COLUMNS="120")
    narrow = kimi_help(tmp_path, COLUMNS="60")
    coloured = kimi_help(tmp_path, COLUMNS="120", FORCE_COLOR="1")
    assert len({wide, narrow, coloured}) == 3 and b"\x1b[" in coloured and b"\x1b[" not in wide
    assert len(list((tmp_path / "kimi" / "help").iterdir())) == 3


def test_a_changed_module_anywhere_in_the_package_changes_the_key(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    module = tmp_path / "engine" / "cli.py"
    module.write_text("HELP = 'one'\n")
    before = help_cache._tree(tmp_path)
    module.write_text("HELP = 'two, longer'\n")
    assert help_cache._tree(tmp_path) != before


def test_a_link_planted_at_the_cache_entry_is_not_followed(tmp_path: Path) -> None:
    kimi_help(tmp_path, COLUMNS="80")
    (entry,) = (tmp_path / "kimi" / "help").iterdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("not help\n")
    entry.unlink()
    entry.symlink_to(secret)
    out = kimi_help(tmp_path, COLUMNS="80")
    assert b"not help" not in out and b"Usage: " in out
