"""What kimi prints about a folder's own config never reaches the terminal raw.

The attack: a workspace `.kimi/config.toml` whose key is an OSC 52 sequence made `kimi pack`,
`kimi prompt` and `kimi ci-repair` print it raw in their configuration error (the clipboard was written);
`kimi -p` already showed it as text. Beside it: an ordinary bad key is still named plainly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support import run_kimi

OSC52 = "\\u001b]52;c;SGVsbG8=\\u0007"  # as TOML writes it: the parsed key holds ESC ... BEL


@pytest.mark.parametrize(
    "args", [["pack"], ["prompt"], ["ci-repair", "--test", "true"], ["-p", "hi"]], ids=lambda a: a[0]
)
def test_a_config_error_about_the_folders_key_shows_its_escapes_as_text(
    args: list[str], tmp_path: Path, env: dict
) -> None:
    ws = tmp_path / "ws"
    (ws / ".kimi").mkdir(parents=True)
    (ws / ".kimi" / "config.toml").write_text(f'"{OSC52}" = 1\nplain_bad_key = 2\n')
    proc = run_kimi(args, ws, {**env, "KIMI_API_KEY": "sk-x"})
    assert proc.returncode == 2, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "\\x1b]52;c;SGVsbG8=\\x07" in proc.stderr  # shown, as text
    assert "plain_bad_key: Extra inputs are not permitted" in proc.stderr  # the ordinary error reads as before
