"""What a folder's hooks ask of trust: the workspace scripts its own hooks name (.kimi and .claude), pinned when
the folder's snapshot was read (the pins themselves: kimi_cli.hostsafe.pins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kimi_cli.hostsafe.project_settings import ProjectSettings


def widenings(project: ProjectSettings) -> list[tuple[str, object, str]]:
    """For kimi_cli.hostsafe.trust: the scripts the project's own hooks name (.kimi and .claude), with the digests the
    folder's snapshot took (key, value, words)."""
    scripts: dict[str, str] = {}
    for named in project.hook_pins.values():
        scripts.update(named)
    if not scripts:
        return []
    names = ", ".join(sorted(scripts))
    return [("hooks.scripts", dict(sorted(scripts.items())), f"run these workspace scripts as hooks: {names}")]
