"""The session prefix: the one place the system message is assembled, for sessions, subagents and compaction.

Its order is the contract. First the part every agent of a session shares (the system prompt, AGENTS.md,
the skills), then the packed repository, then whatever a mode adds: plan mode, a subagent kind, a custom
agent. A mode only ever appends, so the shared bytes, which the provider's prompt cache keys on, stay
identical between the session, its subagents and the history after compaction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kimi_cli.agent.prompt import system_prompt
from kimi_cli.context.agents_md import load_agents_md
from kimi_cli.llm.types import Message

AGENTS_MD_HEADER = "Project instructions (AGENTS.md):\n"


class PrefixBuilder:
    """Builds the system message: shared part, then the pack, then the mode."""

    def __init__(self, root: Path, skills: Callable[[Path], str] | None = None) -> None:
        self.root = root
        self._skills = skills

    def skills_section(self) -> str:
        """The slot for skills (a listing the skills feature renders for `root`); empty until one is set."""
        return self._skills(self.root).strip() if self._skills is not None else ""

    def shared(self) -> list[str]:
        """The sections every agent of the session starts with, in order."""
        parts = [system_prompt(self.root)]
        agents = load_agents_md(self.root)
        if agents:
            parts.append(AGENTS_MD_HEADER + agents)
        skills = self.skills_section()
        if skills:
            parts.append(skills)
        return parts

    def message(self, pack: str = "", mode: str = "") -> Message:
        """The system message: the shared sections, the pack section (already introduced), the mode's part."""
        parts = self.shared()
        if pack:
            parts.append(pack)
        if mode.strip():
            parts.append(mode.strip())
        return {"role": "system", "content": "\n\n".join(parts)}
