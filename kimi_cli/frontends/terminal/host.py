"""What slash commands may use of the running session: a Protocol, so commands never import the app."""

from __future__ import annotations

from typing import Protocol

from rich.console import Console

from kimi_cli.agent.bootstrap import Runtime, SessionChoice
from kimi_cli.agent.loop import Agent
from kimi_cli.approval.rules import Rules
from kimi_cli.frontends.terminal.render import TerminalRenderer
from kimi_cli.frontends.terminal.status import SessionStatus
from kimi_cli.llm.provider import ChatProvider


class SessionHost(Protocol):
    """The interactive session as the slash commands see it."""

    console: Console
    runtime: Runtime
    agent: Agent
    provider: ChatProvider
    renderer: TerminalRenderer
    status: SessionStatus
    rules: Rules
    pending_images: list[str]

    def switch(self, choice: SessionChoice) -> None: ...
    def reload_history(self) -> None: ...
    def set_model(self, model: str) -> None: ...
    def set_effort(self, effort: str) -> None: ...
    def print_recap(self) -> None: ...
    def save_rule(self, rule: str) -> bool: ...
    async def ask_line(self, question: str) -> str: ...
    async def ask_yes(self, question: str) -> bool: ...
    async def ask_pick(self, question: str, labels: list[str], selected: int = 0) -> int | None: ...
    async def show_last(self) -> None: ...
