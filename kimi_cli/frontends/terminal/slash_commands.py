"""The terminal's built-in slash commands about the conversation: help, sessions, undo, cost, the last
output, images. (Not `kimi` subcommands, kimi_cli.cli; nor a user's own slash commands from files,
kimi_cli.extensions.custom_commands, which join the same registry.)

Each is registered as data (kimi_cli.frontends.terminal.slash_registry): the `/` menu and /help read the
registry, so features add their own commands the same way. Settings commands are in slash_settings.py.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from kimi_cli.agent.bootstrap import SessionChoice
from kimi_cli.errors import KimiError
from kimi_cli.frontends.terminal.host import SessionHost
from kimi_cli.frontends.terminal.picker import print_choices
from kimi_cli.frontends.terminal.slash_registry import EXIT, CommandRegistry, SlashCommand
from kimi_cli.session.store import list_sessions
from kimi_cli.session.undo.shadow import ShadowRepo
from kimi_cli.util.sanitize import visible, visible_text

KEYS_HELP = (
    "Enter sends · Esc+Enter or Alt+Enter: newline · Esc or Ctrl-C: interrupt the turn · "
    "typing during a turn queues a message (↑ edits it; Ctrl-S sends it into the running turn) · "
    "Ctrl-V or /paste: the clipboard's image · Ctrl-O: the last tool output in full · "
    "Ctrl-C twice or Ctrl-D: exit · @path completes files, @shot.png attaches · Shift+Tab: ask → auto → plan mode"
)


class SlashCommands:
    """Dispatches `/name args` through the registry; registers the built-ins."""

    def __init__(self, app: SessionHost) -> None:
        from kimi_cli.frontends.terminal.slash_export import ExportCommand
        from kimi_cli.frontends.terminal.slash_lsp import LspCommand
        from kimi_cli.frontends.terminal.slash_rewind import RewindCommands
        from kimi_cli.frontends.terminal.slash_settings import SettingsCommands

        self.app = app
        self.console = app.console
        self.registry = CommandRegistry()
        add = self.registry.add
        add(SlashCommand("help", "the commands and keys", self.cmd_help))
        add(SlashCommand("exit", "leave (Ctrl-D or Ctrl-C twice work too)", self.cmd_exit, aliases=("quit",)))
        add(SlashCommand("clear", "start a new session", self.cmd_clear))
        add(SlashCommand("sessions", "this folder's sessions (all: failed runs too)", self.cmd_sessions,
                         "/sessions [all]"))  # fmt: skip
        add(SlashCommand("resume", "switch to an earlier session (a picker without ID)", self.cmd_resume,
                         "/resume [ID or its start]"))  # fmt: skip
        add(SlashCommand("compact", "summarise the conversation now to free context", self.cmd_compact))
        RewindCommands(app).register(self.registry)  # /undo and /rewind
        add(SlashCommand("diff", "what this session changed in the workspace", self.cmd_diff))
        add(SlashCommand("last", "the last tool call's whole output, in a pager (Ctrl-O)", self.cmd_last))
        add(SlashCommand("cost", "tokens and cost so far", self.cmd_cost))
        add(SlashCommand("image", "attach an image to your next message", self.cmd_image, "/image PATH"))
        add(SlashCommand("reasoning", "show or hide the model's reasoning; N: print an earlier turn's",
                         self.cmd_reasoning, "/reasoning [on | off | N]"))  # fmt: skip
        SettingsCommands(app).register(self.registry)
        ExportCommand(app).register(self.registry)
        LspCommand(app).register(self.registry)

    async def dispatch(self, line: str) -> str | None:
        name, _, arg = line[1:].strip().partition(" ")
        command = self.registry.get(name) if name else None
        if command is None:
            close = self.registry.suggest(name)
            hint = f" Did you mean /{close}?" if close else ""
            self.console.print(visible_text(f"unknown command /{name}.{hint} /help lists them.", "yellow"))
            return None
        return await command.handler(arg.strip())

    async def cmd_help(self, arg: str) -> None:
        table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
        table.add_column(no_wrap=True, style="bold")
        table.add_column(overflow="fold")
        for command in self.registry.listed():
            usage = command.usage or f"/{command.name}"
            source = "" if command.source == "built-in" else f" ({command.source})"
            table.add_row(visible_text(usage, one_line=True), visible_text(command.description + source))
        self.console.print(table)
        self.console.print(Text(KEYS_HELP, style="dim"))

    async def cmd_exit(self, arg: str) -> str:
        return EXIT

    async def cmd_clear(self, arg: str) -> None:
        self.app.switch(SessionChoice())
        self.console.print(f"new session {self.app.runtime.session.id}")

    async def cmd_sessions(self, arg: str) -> None:
        from kimi_cli.frontends.session_list import hidden_note, visible_sessions

        infos, hidden = visible_sessions(list_sessions(self.app.runtime.workdir), arg == "all")
        if not infos:
            self.console.print("no sessions in this folder yet")
        print_choices(self.console, infos[:20], self.app.runtime.session.id)
        if hidden:
            self.console.print(Text(hidden_note(hidden, "/sessions all"), style="dim"))

    async def cmd_resume(self, arg: str) -> None:
        if not arg:
            from kimi_cli.frontends.terminal.picker import pick_session_async

            arg = await pick_session_async(self.app, exclude=self.app.runtime.session.id) or ""
            if not arg:
                return
        try:
            self.app.switch(SessionChoice(resume_id=arg))
        except KimiError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.app.print_recap()

    async def cmd_compact(self, arg: str) -> None:
        if self.app.agent.context is None:
            self.console.print("compaction needs the repository context")
            return
        try:
            await self.app.agent.compact()
        except KimiError as exc:
            self.console.print(visible_text(f"compaction failed: {exc}", "red"))

    async def cmd_diff(self, arg: str) -> None:
        from rich.syntax import Syntax

        runtime = self.app.runtime
        records = runtime.session.records()
        first = next((r["tree"] for r in records if r.get("kind") == "checkpoint"), None)
        if first is None:
            self.console.print("this session has not changed any files")
            return
        shadow = ShadowRepo(runtime.workdir)
        patch = shadow.diff(first, shadow.snapshot())
        self.console.print(Syntax(visible(patch), "diff", theme="ansi_dark") if patch else "no changes")

    async def cmd_last(self, arg: str) -> None:
        await self.app.show_last()

    async def cmd_cost(self, arg: str) -> None:
        from kimi_cli.llm.costs import cost_of, first_request_line, rates_for

        st = self.app.status
        rt = self.app.runtime
        usage = {"prompt_tokens": st.prompt_tokens, "cached_tokens": st.cached_tokens,
                 "completion_tokens": st.completion_tokens}  # fmt: skip
        rates = rates_for(rt.info(), rt.config.pricing)
        self.console.print(Text("this session: ") + Text(cost_of(usage, rates).summary()))
        self.console.print(first_request_line(self.app.provider.first_usage))
        if rates.priced:
            self.console.print(visible_text(f"rates: {rates.line()} ({rates.source})", "dim"))
        else:
            self.console.print(visible_text(f"no price: {rates.source}", "dim"))
        self.console.print(
            visible_text(
                f"context window {rt.context_length:,} tokens, from {rt.context_source} · "
                f"{rt.endpoint.provider} {rt.endpoint.base_url} · {rt.info().describe()}",
                "dim",
            )
        )

    async def cmd_image(self, arg: str) -> None:
        if not arg:
            self.console.print(
                Text("usage: /image PATH: attaches an image to your next message (@shot.png in a message works too)")
            )
            return
        from kimi_cli.frontends.attachments import named_by_user, read_attachment
        from kimi_cli.media.pipeline import prepare

        limits = self.app.runtime.image_limits()
        try:  # read as it will be sent: inside the workspace no-follow, or your own file by absolute path
            item = named_by_user(arg, self.app.runtime.workdir)
            prepared = prepare(read_attachment(item, self.app.runtime.workdir), limits, arg)  # sized as sent
        except KimiError as exc:
            self.console.print(visible_text(str(exc).removeprefix("cannot attach image: "), "yellow"))
            return
        except ValueError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.app.pending_images.append(arg)
        tokens = prepared.tokens(limits.patch)
        self.console.print(
            visible_text(f"attached {arg} ({prepared.note()}, ~{tokens:,} tokens); it goes with your next message")
        )

    async def cmd_reasoning(self, arg: str) -> None:
        """No argument toggles; on/off say it; N prints the reasoning of the Nth turn back (1: the last)."""
        renderer = self.app.renderer
        if arg.isdigit():
            self.print_reasoning(int(arg))
            return
        if arg and arg not in ("on", "off"):
            self.console.print(Text("usage: /reasoning [on | off | N] (N: the turn N back, 1 is the last)"))
            return
        renderer.show_reasoning = arg == "on" if arg else not renderer.show_reasoning
        state = "shown" if renderer.show_reasoning else "hidden"
        self.console.print(f"reasoning {state} (/reasoning 1 prints the last turn's)")

    def print_reasoning(self, back: int) -> None:
        """The reasoning the model gave in one earlier turn, from the session's history."""
        turns = reasoning_by_turn(self.app.agent.messages)
        if back < 1 or back > len(turns):
            self.console.print(Text(f"no turn {back} back: this session has {len(turns)}", style="yellow"))
            return
        prompt, parts = turns[-back]
        self.console.print(visible_text(f"reasoning of the turn “{prompt[:80]}”:", "dim", one_line=True))
        self.console.print(visible_text("\n\n".join(parts) if parts else "(the model gave no reasoning)", "italic"))


def reasoning_by_turn(messages: list[dict[str, object]]) -> list[tuple[str, list[str]]]:
    """(the prompt, its assistant messages' reasoning) for each turn the user started; notes kimi or a hook
    added as user messages (`[kimi] ...`, `[hook] ...`) belong to the turn they came in."""
    turns: list[tuple[str, list[str]]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "user":
            parts = content if isinstance(content, list) else []
            text = content if isinstance(content, str) else " ".join(str(p.get("text", "")) for p in parts)
            if not text.startswith("[") or not turns:
                turns.append((" ".join(text.split()), []))
        elif message.get("role") == "assistant" and turns and message.get("reasoning_content"):
            turns[-1][1].append(str(message["reasoning_content"]))
    return turns
