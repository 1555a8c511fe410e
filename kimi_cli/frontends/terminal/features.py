"""The terminal side of issue 30's features: /plan and Shift+Tab (modes), approving a plan, /hooks, /skills,
/fork, /init, and the user's own commands (.kimi/commands, .claude/commands) in the `/` menu and /help.

Everything registers through the session's command registry and key bindings; the session calls
`after_turn` once a turn ends (a plan to approve) and `notify` when it asks the user something (the
Notification hook).
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text

from kimi_cli.frontends.terminal.slash_registry import CommandRegistry, SlashCommand
from kimi_cli.util.sanitize import visible_text

MODE_LABELS = {"plan": "⏸ plan mode", "ask": "ask mode", "auto": "auto mode", "yolo": "yolo mode"}
FLASH = 2.5  # seconds the new mode is named on the status line
APPROVE_PLAN = "approve the plan? y: approve and start (no Enter) · or type what to change · Enter: keep planning › "


class SessionFeatures:
    """Registered once per interactive session; `app` is the InteractiveApp."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.console = app.console
        self._tasks: set[asyncio.Future[Any]] = set()
        mode = app.runtime.mode
        mode.listeners.append(self.on_mode)
        self.on_mode(mode.current)

    # --- registration ------------------------------------------------------------------------------------

    def register(self, registry: CommandRegistry) -> None:
        add = registry.add
        add(SlashCommand("plan", "plan mode: read-only study, then a plan to approve (Shift+Tab cycles modes)",
                         self.cmd_plan, "/plan [off | TASK]"))  # fmt: skip
        add(SlashCommand("hooks", "the hooks that run at session events", self.cmd_hooks))
        add(SlashCommand("skills", "the skills the model may use", self.cmd_skills))
        add(SlashCommand("fork", "continue in a copy of this session (same history and undo points)", self.cmd_fork))
        add(SlashCommand("init", "have kimi write or improve AGENTS.md, then show the diff", self.cmd_init))
        self.add_custom(registry)

    def add_custom(self, registry: CommandRegistry) -> None:
        """The user's and the project's commands; a name a built-in has is skipped (and said once)."""
        from kimi_cli.extensions.custom_commands.session import CommandSet

        runtime = self.app.runtime
        self.custom = CommandSet.load(runtime.workdir, [c.name for c in registry.listed()], runtime.folder_trust)
        for command in self.custom.commands.values():
            usage = f"/{command.name} {command.argument_hint}".rstrip()
            handler = self._custom_handler(command.name)
            registry.add(SlashCommand(command.name, command.description or "(no description)", handler, usage,
                                      source=command.label), replace=True)  # fmt: skip
        for notice in self.custom.notices():
            self.console.print(visible_text(notice, "yellow"))

    def bind_keys(self, bindings: Any) -> None:
        from prompt_toolkit.filters import Condition

        app = self.app

        def plain() -> bool:  # not while a question waits, nor over the completion menu
            buffer = app.input.session.default_buffer
            return app.input.question is None and buffer.complete_state is None

        @bindings.add("s-tab", filter=Condition(plain))
        def _cycle(event: Any) -> None:
            mode = app.runtime.mode.cycle()
            app.status.flash(f"{MODE_LABELS.get(mode, mode)} (shift+tab: next mode)", FLASH)
            app.input.invalidate()
            asyncio.get_running_loop().call_later(FLASH + 0.1, app.input.invalidate)  # the hint goes away

    # --- modes ---------------------------------------------------------------------------------------------

    def on_mode(self, mode: str) -> None:
        """Keep the approver and the status line in step with the mode."""
        self.app.approver.set_mode(mode)  # plan mode keeps the approval row of the mode before it
        self.app.status.mode = MODE_LABELS.get(mode, mode)
        if hasattr(self.app, "input"):
            self.app.input.invalidate()

    async def cmd_plan(self, arg: str) -> None:
        mode = self.app.runtime.mode
        if arg in ("off", "exit", "stop"):
            if mode.plan:
                mode.leave_plan()
            self.console.print(f"plan mode is off ({MODE_LABELS.get(mode.current, mode.current)})")
            return
        if not mode.plan:
            mode.set("plan")
        self.console.print("plan mode: kimi studies with read-only tools and ends with a plan for you to approve")
        if arg:
            await self.app.turn(arg)

    async def after_turn(self, outcome: Any) -> None:
        """A turn in plan mode ended with a plan: approve it (back to the mode before, and the work starts),
        comment on it (a new turn, still in plan mode), or leave it (Enter)."""
        from kimi_cli.approval.modes.plan import APPROVED
        from kimi_cli.frontends.terminal.input import Question

        mode = self.app.runtime.mode
        if not mode.plan or outcome is None or outcome.reason != "done" or not str(outcome.text).strip():
            return
        answer = (await self.app.input.ask(Question(APPROVE_PLAN, first_keys={"y": "y"}))).strip()
        if answer.lower() in ("y", "yes", "approve"):
            back = mode.leave_plan()
            self.console.print(Text(f"  → plan approved; {MODE_LABELS.get(back, back)}", style="dim"))
            await self.app.turn(APPROVED)
        elif answer:
            await self.app.turn(answer)

    # --- the Notification hook -----------------------------------------------------------------------------

    def notify(self, message: str) -> None:
        """Fire the Notification hooks without waiting (the question is shown meanwhile)."""
        hooks = self.app.runtime.hooks
        if hooks is None or not hooks.has("Notification"):
            return
        task = asyncio.ensure_future(hooks.notification(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- listings ------------------------------------------------------------------------------------------

    async def cmd_hooks(self, arg: str) -> None:
        runtime = self.app.runtime
        lines = runtime.hooks.listing() if runtime.hooks is not None else []
        if not lines:
            lines = ["no hooks: add [[hooks.EVENT]] tables to ~/.kimi/config.toml (or .kimi/config.toml); "
                     "Claude Code's settings.json hooks are read too"]  # fmt: skip
        trust = runtime.folder_trust
        if trust is not None and not trust.applies and any(w.key.startswith(("hooks", "claude.hooks"))
                                                           for w in trust.asks):  # fmt: skip
            lines.append("this folder's own hooks are ignored: it is not trusted (kimi trust)")
        self.console.print(visible_text("\n".join(lines)))

    async def cmd_skills(self, arg: str) -> None:
        skills = self.app.runtime.skills
        if not skills:
            self.console.print("no skills: add folders with a SKILL.md to .kimi/skills/ or ~/.kimi/skills/")
            return
        for skill in skills:
            line = visible_text(skill.name, "bold", one_line=True)
            self.console.print(line.append_text(visible_text(f"  {skill.description}  ({skill.skill_md})")))

    # --- fork and init -------------------------------------------------------------------------------------

    async def cmd_fork(self, arg: str) -> None:
        from kimi_cli.agent.bootstrap import SessionChoice
        from kimi_cli.errors import KimiError
        from kimi_cli.session.fork import fork_session

        runtime = self.app.runtime
        original = runtime.session.id
        try:
            new_id = fork_session(runtime.workdir, original)
            self.app.switch(SessionChoice(resume_id=new_id))
        except KimiError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.console.print(visible_text(f"forked: now in {new_id}; {original} is kept as it was (kimi -r {original})"))

    async def cmd_init(self, arg: str) -> None:
        from kimi_cli.frontends.init_agents import agents_diff, init_prompt, read_instructions

        workdir = self.app.runtime.workdir
        before = read_instructions(workdir)
        await self.app.turn(init_prompt(workdir))
        after = read_instructions(workdir)
        diff = agents_diff(before, after)
        if before == after:
            self.console.print(diff)
            return
        from kimi_cli.frontends.terminal.panels import diff_stats

        stats = diff_stats(diff)
        try:  # a write or edit tool's panel showed the diff already: said once, not twice
            shown = "AGENTS.md" in self.app.agent.files_written()
        except Exception:
            shown = False
        if not shown:  # written some other way (a shell command): the diff is shown here
            from rich.syntax import Syntax

            from kimi_cli.util.sanitize import visible

            self.console.print(Syntax(visible(diff), "diff", theme="ansi_dark"))
        line = f"AGENTS.md: +{stats.added} -{stats.removed} lines; /undo takes it back; new sessions read it"
        self.console.print(Text(line, style="dim"))

    # --- custom commands -----------------------------------------------------------------------------------

    def _custom_handler(self, name: str) -> Any:
        async def run(arg: str) -> None:
            await self.run_custom(name, arg)

        return run

    async def run_custom(self, name: str, args: str) -> None:
        from kimi_cli.extensions.custom_commands.session import TurnScope, prepare

        command = self.custom.commands[name]
        app = self.app
        expansion = await prepare(self.custom, command, args, app.agent.registry)
        scope = TurnScope(command, self.custom.trusted)
        for note in expansion.notes + scope.enter(app.approver, app.provider, app.runtime):
            self.console.print(visible_text(note, "dim"))
        try:
            await app.turn(expansion.prompt)
        finally:
            scope.exit()
