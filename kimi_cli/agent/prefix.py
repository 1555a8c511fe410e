"""The session prefix: the one place the system message is assembled, for sessions, subagents and compaction.

Its order is the contract. First the part every agent of a session shares (the system prompt, AGENTS.md,
the skills), then the packed repository, then the environment block (workspace, sandbox, network, model
window, date: fixed at session start), then whatever a mode adds: plan mode, a subagent kind, a custom
agent. A mode only ever appends, so the shared bytes, which the provider's prompt cache keys on, stay
identical between the session, its subagents and the history after compaction. The environment comes
after the pack because it is the part most likely to differ between two sessions of one workspace (the
date, --allow-network): putting it last keeps the pack in the cached prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kimi_cli.context.agents_md import load_agents_md
from kimi_cli.instructions.prompt import Environment, system_prompt
from kimi_cli.llm.types import Message

AGENTS_MD_HEADER = "Project instructions (AGENTS.md):\n"


class PrefixBuilder:
    """Builds the system message: shared part, then the pack, then the environment, then the mode."""

    def __init__(
        self, root: Path, skills: Callable[[Path], str] | None = None, environment: Environment | None = None
    ) -> None:
        self.root = root
        self._skills = skills
        self.environment = environment  # None: no environment block (tests, tools that print the prefix bare)

    def skills_section(self) -> str:
        """The slot for skills (a listing the skills feature renders for `root`); empty until one is set."""
        return self._skills(self.root).strip() if self._skills is not None else ""

    def shared(self) -> list[str]:
        """The sections every agent of the session starts with, in order."""
        parts = [system_prompt()]
        agents = load_agents_md(self.root)
        if agents:
            parts.append(AGENTS_MD_HEADER + agents)
        skills = self.skills_section()
        if skills:
            parts.append(skills)
        return parts

    def message(self, pack: str = "", mode: str = "") -> Message:
        """The system message: the shared sections, the pack section (already introduced), the environment,
        the mode's part."""
        parts = self.shared()
        if pack:
            parts.append(pack)
        if self.environment is not None:
            parts.append(self.environment.block())
        if mode.strip():
            parts.append(mode.strip())
        return {"role": "system", "content": "\n\n".join(parts)}
