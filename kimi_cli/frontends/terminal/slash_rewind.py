"""`/undo` and `/rewind`: the files, the conversation or both put back before an earlier prompt.

`/undo` goes back before the last prompt that changed files and says what it takes back (the files, the
prompt and its turn); when later prompts changed nothing, it names them and asks (one key) before cutting
them too. `/rewind` lists the conversation's prompts, each with its turn and the files it changed, and
asks which one and whether code, conversation or both go back. Both use the undo store
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
from kimi_cli.util.sanitize import visible_text

SHOWN = 15  # prompts the picker lists (the latest)
PICK = "rewind to before which prompt? its turn number (Enter: none) › "
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
        for prompt in found[-SHOWN:]:
            self.print_prompt(prompt)
        answer = await self.app.ask_line(PICK)
        chosen = next((p for p in found if answer.isdigit() and p.turn == int(answer)), None)
        if chosen is None:
            if answer:
                self.say(f"no turn {answer} in the list", "yellow")
            return
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

    def print_prompt(self, prompt: Prompt) -> None:
        when = time.strftime("%H:%M:%S", time.localtime(prompt.time)) if prompt.time else "--:--:--"
        line = visible_text(f"{prompt.turn:>3}  {when}  {quoted(prompt.prompt, 50)}  ", one_line=True)
        line.append_text(visible_text(prompt.files(), "dim", one_line=True))
        line.truncate(max(self.console.width - 1, 20), overflow="ellipsis")
        self.console.print(line)

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
