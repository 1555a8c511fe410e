"""`/undo` and `/rewind`: the files, the conversation or both put back before an earlier prompt.

`/undo` goes back before the last prompt that changed files and says what it takes back (the files, the
prompt and its turn); when later prompts changed nothing, it names them and asks (one key) before cutting
them too. `/rewind` offers the conversation's prompts in an arrow-key picker, each with its turn and the files it
changed, and asks which one and whether code, conversation or both go back. Both use the undo store
(kimi_cli.session.undo: points, rewind) and the log's truncate record; nothing here writes files itself.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text

from kimi_cli.frontends.terminal.slash_registry import CommandRegistry, SlashCommand
from kimi_cli.session.undo.points import UndoPlan, apply_undo, describe_points, plan_undo, undo_state
from kimi_cli.session.undo.rewind import Prompt, later_prompts, plan_rewind, prompts, rewind, with_changes
from kimi_cli.session.undo.shadow import CheckpointError, ShadowRepo
from kimi_cli.util.sanitize import visible, visible_text

PICK = "rewind to before which prompt? ↑/↓ and Enter (Esc: none)"
MODE = "go back: b both, c code only, v conversation only (Enter: cancel) › "
MODE_KEYS = {"b": "both", "c": "code", "v": "conversation"}
VERBS = {"A": "restore", "D": "delete", "M": "rewrite"}


def quoted(prompt: str, width: int = 60) -> str:
    text = " ".join(prompt.split())
    return f'"{text[:width]}{"…" if len(text) > width else ""}"'


class RewindCommands:
    """Registered once per interactive session; `app` is the InteractiveApp (its input asks one key)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.console = app.console

    def register(self, registry: CommandRegistry) -> None:
        registry.add(SlashCommand("undo", "put files back as they were before your last prompt", self.cmd_undo,
                                  "/undo [N | list]"))  # fmt: skip
        registry.add(SlashCommand("rewind", "go back before an earlier prompt: code, conversation or both",
                                  self.cmd_rewind))  # fmt: skip

    def say(self, text: str, style: str = "") -> None:
        self.console.print(visible_text(text, style) if style else visible_text(text))

    async def cmd_undo(self, arg: str) -> None:
        runtime = self.app.runtime
        shadow = ShadowRepo(runtime.workdir)
        records = runtime.session.records()
        if arg in ("list", "--list"):
            state = undo_state(records)
            self.say("\n".join(describe_points(shadow, state) if state.points else ["no undo points yet"]))
            return
        try:
            plan = plan_undo(shadow, runtime.session, int(arg) if arg.isdigit() else None)
        except CheckpointError as exc:
            self.say(str(exc), "yellow")
            return
        target = plan.target
        found = prompts(records)
        if target.kind == "turn":
            turn = next((p.turn for p in found if p.message_index == target.message_index), 0)
            self.say(f"undo takes back turn {turn}, the prompt {quoted(target.label)}:" if turn
                     else f"undo takes back the prompt {quoted(target.label)}:")  # fmt: skip
        else:
            self.say(f"undo takes back {target.label} and what came after it:")
        self.print_changes(plan)
        later = later_prompts(records, target)
        if later and target.kind == "turn":  # the prompts after it changed nothing: they go too, so ask
            names = "; ".join(f"turn {p.turn} {quoted(p.prompt, 40)}" for p in later[:5])
            more = f" and {len(later) - 5} more" if len(later) > 5 else ""
            self.say(f"{len(later)} later prompt(s) changed no file and leave the conversation too: {names}{more}"
                     " (/rewind picks the point and what goes back)", "yellow")  # fmt: skip
            if not await self.app.ask_yes("undo past them?"):
                self.say("undo cancelled")
                return
        if not await self.confirm_overwrite(plan):
            return
        apply_undo(shadow, runtime.session, plan)
        self.app.reload_history()
        self.say(f"restored the files; the conversation now ends {target.where()}")

    async def cmd_rewind(self, arg: str) -> None:
        runtime = self.app.runtime
        shadow = ShadowRepo(runtime.workdir)
        try:
            found = with_changes(shadow, prompts(runtime.session.records()))
        except CheckpointError as exc:
            self.say(str(exc), "yellow")
            return
        if not found:
            self.say("no earlier prompt to rewind to")
            return
        labels = [self.label(prompt) for prompt in found]
        index = await self.app.ask_pick(PICK, labels, len(labels) - 1)  # the latest prompt marked
        if index is None:
            self.console.print(Text("  → none", style="dim"))
            return
        chosen = found[index]
        from kimi_cli.frontends.terminal.input import Question

        answer = await self.app.input.ask(Question(MODE, dict(MODE_KEYS), default=""))  # one key: its value
        mode = answer if answer in MODE_KEYS.values() else ""
        self.console.print(Text(f"  → {mode or 'cancel'}", style="dim"))
        if not mode:
            return
        plan: UndoPlan | None = None
        if mode != "conversation":
            try:
                plan = plan_rewind(shadow, runtime.session, chosen)
            except CheckpointError as exc:
                self.say(str(exc), "yellow")
                return
            self.print_changes(plan)
            if not await self.confirm_overwrite(plan):
                return
        rewind(shadow, runtime.session, chosen, mode, plan)
        if mode != "code":
            self.app.reload_history()
        where = f"before turn {chosen.turn}, the prompt {quoted(chosen.prompt)}"
        done = {"both": f"restored the files; the conversation now ends {where}",
                "code": f"restored the files as they were {where}; the conversation is kept",
                "conversation": f"the conversation now ends {where}; the files are as they are"}  # fmt: skip
        self.say(done[mode])

    @staticmethod
    def label(prompt: Prompt) -> str:
        """`  2  14:03:11  "make b"  b.txt (A)`: the picker fits it to the width."""
        when = time.strftime("%H:%M:%S", time.localtime(prompt.time)) if prompt.time else "--:--:--"
        return visible(f"{prompt.turn:>3}  {when}  {quoted(prompt.prompt, 50)}  {prompt.files()}", one_line=True)

    def print_changes(self, plan: UndoPlan) -> None:
        for change in plan.changes:
            self.say(f"  {VERBS.get(change.status, change.status)} {change.path}")
        if not plan.changes:
            self.say("  (no file to put back)")

    async def confirm_overwrite(self, plan: UndoPlan) -> bool:
        if not plan.user_edits:
            return True
        names = ", ".join(c.path for c in plan.user_edits)
        self.say(f"you changed {names} after the agent's last step; going back overwrites them", "yellow")
        if await self.app.ask_yes("overwrite them?"):
            return True
        self.say("cancelled")
        return False
