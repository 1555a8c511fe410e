"""Finding skills: folders with a SKILL.md (front matter `name`, `description`) in .kimi/skills/ and
.claude/skills/ of the project, then ~/.kimi/skills/ and ~/.claude/skills/. The first folder in that
order that has a name wins.

Only names, descriptions and where each SKILL.md is go into the prompt (the skills slot of the prefix,
kimi_cli.agent.prefix), sorted by name and read once at session start, so the cached prefix stays the same
for the whole session. The model reads a skill's body and files with ReadFile when it uses the skill. A
user's skill folders lie outside the workspace: ReadFile may read inside exactly those folders, nothing
else there (kimi_cli.tools.read_roots); project skills are workspace files and read as such.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.util import frontmatter

ROOTS: tuple[tuple[str, str], ...] = (
    ("project", ".kimi/skills"),
    ("project", ".claude/skills"),
    ("user", "~/.kimi/skills"),
    ("user", "~/.claude/skills"),
)
MAX_SKILLS = 200
MAX_DESCRIPTION = 1024
HEADER = (
    "Skills: folders of instructions (and scripts or references) for particular kinds of tasks. When a task "
    "matches a skill's description, read its SKILL.md with ReadFile before you start and follow it; read the "
    "other files it names the same way (paths relative to its folder). Available skills:"
)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    source: str  # "project" | "user"
    shown: str  # the folder as the model is told it: `.claude/skills/pdf`, `~/.kimi/skills/pdf`
    real: Path  # the folder on disk (resolved)

    @property
    def skill_md(self) -> str:
        return f"{self.shown}/SKILL.md"


def _read(source: str, workdir: Path, folder: Path) -> str | None:
    try:
        if source == "project":
            from kimi_cli.hostsafe import fs as safe_fs

            data = safe_fs.read_bytes(workdir, os.path.relpath(folder / "SKILL.md", workdir), 512 * 1024)
        else:
            from kimi_cli.hostsafe.settings_read import read_settings_bytes

            data = read_settings_bytes(folder / "SKILL.md", 512 * 1024, head=True)
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")


def _from(source: str, root: str, workdir: Path) -> list[Skill]:
    base = workdir / root if source == "project" else Path(os.path.expanduser(root))
    if not base.is_dir() or (source == "project" and base.is_symlink()):
        return []
    found = []
    for entry in sorted(base.iterdir(), key=lambda p: p.name)[: MAX_SKILLS * 2]:
        if entry.name.startswith(".") or not entry.is_dir() or (source == "project" and entry.is_symlink()):
            continue
        text = _read(source, workdir, entry)
        if text is None:
            continue
        meta, body = frontmatter.split(text)
        name = frontmatter.text_of(meta, "name").strip() or entry.name
        description = " ".join(frontmatter.text_of(meta, "description").split())
        if not description:
            description = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
        shown = f"{root}/{entry.name}"
        found.append(Skill(name, description[:MAX_DESCRIPTION], source, shown, entry.resolve()))
    return found


def load_skills(workdir: Path) -> list[Skill]:
    """Every skill, by name (project before user), sorted by name."""
    workdir = workdir.resolve()
    found: dict[str, Skill] = {}
    for source, root in ROOTS:
        for skill in _from(source, root, workdir):
            found.setdefault(skill.name, skill)
    return [found[name] for name in sorted(found)][:MAX_SKILLS]


def render(skills: list[Skill]) -> str:
    """The prompt's skills section ("" when there are none)."""
    if not skills:
        return ""
    lines = [HEADER]
    for skill in skills:
        lines.append(f"- {skill.name}: {skill.description} (read {skill.skill_md})")
    return "\n".join(lines)


def skills_slot(workdir: Path) -> tuple[list[Skill], Callable[[Path], str]]:
    """The skills and the PrefixBuilder slot that lists them (rendered once: the prefix stays the same)."""
    skills = load_skills(workdir)
    text = render(skills)
    return skills, lambda root: text


def read_roots(skills: list[Skill]) -> list[tuple[str, Path]]:
    """The user's skill folders ReadFile may read: (the folder as shown, expanded; the folder on disk)."""
    return [(os.path.expanduser(s.shown), s.real) for s in skills if s.source == "user"]
