"""The pins of workspace scripts a host command names (kimi_cli/hostsafe/pins.py), on a real temporary folder:
which words name files, and what changes a pin. The attacks on them: tests/attacks/hooks/test_script_pins.py."""

from __future__ import annotations

import os
from pathlib import Path

from kimi_cli.hostsafe import pins


def workspace(tmp_path: Path) -> Path:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "guard.sh").write_text("echo ok\n")
    (tmp_path / "tool.py").write_text("print(1)\n")
    return tmp_path


def test_the_files_a_command_names_however_the_shell_spells_them(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.sh"
    outside.write_text("x")
    command = f"sh '$PWD/hooks/guard.sh';python3 --script=tool.py -v {outside} missing.sh hooks"
    assert pins.named_files(command, root) == ["hooks/guard.sh", "tool.py"]  # no folder, nothing outside
    assert pins.named_files("(sh ${KIMI_PROJECT_DIR}/hooks/guard.sh)|cat", root) == ["hooks/guard.sh"]
    outside.unlink()


def test_a_pin_changes_with_the_content_and_with_a_link_pointed_elsewhere(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "other.sh").write_text("echo ok\n")  # the same content as guard.sh
    os.symlink("hooks/guard.sh", root / "run.sh")
    pinned = pins.pin("sh run.sh && sh tool.py", root)
    assert set(pinned) == {"run.sh", "tool.py"} and pins.changed(pinned, root) == []
    (root / "run.sh").unlink()
    os.symlink("other.sh", root / "run.sh")  # same bytes at the end, another way there
    assert pins.changed(pinned, root) == ["run.sh"]
    (root / "tool.py").write_text("print(2)\n")
    assert pins.changed(pinned, root) == ["run.sh", "tool.py"]


def test_a_script_that_cannot_be_read_is_pinned_by_why(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    os.symlink("nowhere.sh", root / "dangling.sh")
    marker = pins.digest(root, "dangling.sh")
    assert marker.startswith("unreadable:")
    assert marker != pins.digest(root, "hooks/guard.sh")
