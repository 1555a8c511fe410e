"""Custom commands in a running session, shared by the terminal, `kimi -p "/name args"` and ACP.

`CommandSet` knows the commands that apply (built-in names are never shadowed); `prepare` expands one with
the session's Shell tool (its sandbox and approver run the `!cmd` lines); `TurnScope` applies the command's
`model` and `allowed-tools` for its own turn and puts them back afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kimi_cli.approval.policy import CallApproval
from kimi_cli.approval.rules import Rules
from kimi_cli.extensions.custom_commands.expand import Expansion, RunShell, allow_rules, expand
from kimi_cli.extensions.custom_commands.loader import CustomCommand, load_commands


@dataclass
class CommandSet:
    """The custom commands of a workspace, minus names the front end already uses."""

    workdir: Path
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    shadowed: list[CustomCommand] = field(default_factory=list)  # named like a built-in: not offered
    trusted: bool = False  # the folder's trust decision: its project commands may run `!cmd`, pre-approve

    @classmethod
    def load(cls, workdir: Path, builtins: Iterable[str] = (), folder: Any = None) -> CommandSet:
        """The commands of the workspace; the project's as read by the snapshot of `folder` (the session's
        kimi_cli.hostsafe.trust.FolderTrust, else trust.current), so what runs is what its trust decision saw."""
        from kimi_cli.hostsafe import trust

        state = folder if folder is not None else trust.current(workdir)
        taken = set(builtins)
        found = load_commands(workdir, state.project.commands)
        return cls(
            workdir,
            {name: c for name, c in found.items() if name not in taken},
            [c for name, c in found.items() if name in taken],
            state.applies,
        )

    def find(self, line: str) -> tuple[CustomCommand, str] | None:
        """`/name args` -> (command, args) when `name` is a custom command."""
        text = line.strip()
        if not text.startswith("/"):
            return None
        name, _, args = text[1:].partition(" ")
        command = self.commands.get(name.strip())
        return (command, args.strip()) if command is not None else None

    def may_run(self, command: CustomCommand) -> bool:
        """A user command's `!cmd` lines run; a project command's only in a trusted folder."""
        return command.source != "project" or self.trusted

    def notices(self) -> list[str]:
        return [f"/{c.name} ({c.label}/{c.rel}) is not offered: /{c.name} is a built-in command" for c in self.shadowed]


def shell_runner(shell: Any, workdir: Path | None = None) -> RunShell | None:
    """`!cmd` through the session's Shell tool: its approver first (deny rules, asking), then its sandbox."""
    if shell is None or not hasattr(shell, "sandbox"):
        return None

    async def run(line: str) -> str:
        approver = getattr(shell, "approver", None)
        where = CallApproval(workdir)  # relative redirections of the line open in the workspace
        refusal = await approver.review_shell(line, shell.sandbox.name, where) if approver is not None else None
        if refusal:
            return f"[`{line}` not run: {refusal}]"
        try:
            result = await shell.sandbox.run(line, shell.default_timeout)
        except RuntimeError as exc:
            return f"[`{line}` failed: {exc}]"
        output = result.output.rstrip("\n")
        if getattr(result, "timed_out", False):
            output += f"\n[timed out after {shell.default_timeout} s]"
        elif result.exit_code:
            output += f"\n[exit code {result.exit_code}]"
        return output

    return run


async def prepare(commands: CommandSet, command: CustomCommand, args: str, registry: Any) -> Expansion:
    shell = registry.get("Shell") if registry is not None else None
    runner = shell_runner(shell, commands.workdir)
    return await expand(command, args, commands.workdir, runner, commands.may_run(command))


class TurnScope:
    """The command's `model` and `allowed-tools` for its turn only. allowed-tools of a project command apply
    only in a trusted folder (they approve without asking)."""

    def __init__(self, command: CustomCommand, trusted: bool) -> None:
        self.command = command
        self.rules = allow_rules(command.allowed_tools) if (trusted or command.source != "project") else []
        self._undo: list[Callable[[], None]] = []

    def enter(self, approver: Any, provider: Any = None, runtime: Any = None) -> list[str]:
        """Apply; returns notes for the user."""
        notes = []
        rules = _rules_of(approver)
        if rules is not None and self.rules:
            added = [r for r in self.rules if r not in rules.allow]
            for rule in added:
                rules.add_allow(rule)

            def forget() -> None:
                for rule in added:
                    rules.remove_allow(rule)

            self._undo.append(forget)
            notes.append(f"/{self.command.name} allows for this turn: {', '.join(self.rules)}")
        model = self.command.model
        if model and provider is not None and runtime is not None and model != runtime.endpoint.model:
            old_endpoint, old_info = runtime.endpoint, runtime.info()
            info = runtime.info(model)
            provider.set_model(replace(old_endpoint, model=model), info)
            self._undo.append(lambda: provider.set_model(old_endpoint, old_info))
            notes.append(f"/{self.command.name} uses the model {model} for this turn")
        return notes

    def exit(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def _rules_of(approver: Any) -> Rules | None:
    """The session's rules, which the approval engine reads live (a wrapper forwards `rules`)."""
    rules = getattr(approver, "rules", None)
    return rules if isinstance(rules, Rules) else None
