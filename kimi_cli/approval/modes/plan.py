"""Plan mode: the model studies with read-only tools and answers with a plan; the user approves or comments.

What is offered is decided by tool facts (kimi_cli.tools.base): a call that may write files or run commands
is refused with a result that says why; reads, Glob, Grep, read-only Git, FetchURL, explore subagents and
SetTodoList run. No tool is known by name.

The prompt cache: neither the system message nor the tools block changes when the mode changes. Plan mode
is told as a message at the END of the conversation when it begins ("enter") and when it ends ("leave"), so
a switch costs only that message: the system prompt, the pack and the whole history stay a cached prefix.
(Appending the mode to the system message would re-send everything after the pack on each switch; removing
tools from the block would invalidate the whole prefix.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class Facts(Protocol):
    """What plan mode reads of a call's facts (kimi_cli.tools.base.ToolFacts; approval sits below the tools)."""

    @property
    def read_only(self) -> bool: ...

    @property
    def commands(self) -> bool: ...


class Offerable(Protocol):
    """What plan mode reads of a tool (kimi_cli.tools.base.Tool): its name and the most it may do."""

    @property
    def name(self) -> str: ...

    def declared(self) -> Facts: ...


ENTER = (
    "[kimi] Plan mode is on. Study the task and the code, but change nothing: only read-only tools run now "
    "({tools}, and the calls of other tools that only read, such as a read-only Git command or an explore "
    "subagent); a call that writes files or runs commands is refused. Ask the user if something is unclear. "
    "Finish with your plan as the answer: the steps, the files to change and what changes in each, and how "
    "you will check the result. The user either approves the plan (you then carry it out with every tool) or "
    "comments on it (you revise it, still in plan mode)."
)
LEAVE = "[kimi] Plan mode is over (mode: {mode}): every tool is available again."
APPROVED = (
    "I approve the plan. Carry it out now, step by step (SetTodoList for its steps), then say what you "
    "changed and how you checked it."
)
REFUSED = (
    "refused: plan mode is on, and this {name} call may {what}. Only read-only calls run in plan mode ({tools}). "
    "Keep studying, then answer with your plan; the user approves it before anything changes."
)


def told_in(messages: Iterable[dict[str, Any]]) -> bool:
    """Whether a conversation (a resumed session's) was last told that plan mode is on."""
    for message in reversed(list(messages)):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, str):
            continue
        if content.startswith(ENTER[:30]):
            return True
        if content.startswith(LEAVE[:30]):
            return False
    return False


def offered(tools: Iterable[Offerable]) -> list[str]:
    """The tools plan mode runs: those whose declared facts change nothing (SetTodoList included)."""
    names = []
    for tool in tools:
        try:
            if tool.declared().read_only:
                names.append(tool.name)
        except Exception:  # a tool whose facts cannot be read is not offered
            continue
    return names


def enter_note(tools: Iterable[Offerable]) -> str:
    return ENTER.format(tools=", ".join(offered(tools)) or "none")


def leave_note(mode: str) -> str:
    return LEAVE.format(mode=mode)


def refusal(name: str, facts: Facts, tools: Iterable[Offerable]) -> str | None:
    """Why a call may not run in plan mode, or None when it only reads."""
    if facts.read_only:
        return None
    what = "run commands" if facts.commands else "change files"
    return REFUSED.format(name=name, what=what, tools=", ".join(offered(tools)) or "none")
