"""InteractiveApp: the prompt loop. Turns run as tasks, so Ctrl-C cancels the turn and not the session."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from kimi_cli.agent.guard import LoopGuard
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.images import build_user_message
from kimi_cli.paths import kimi_home
from kimi_cli.runtime import Runtime, SessionChoice
from kimi_cli.signals import CancelOnSignal
from kimi_cli.ui.interactive.approvals import ApprovalRules, InteractiveApprover
from kimi_cli.ui.interactive.commands import EXIT, HELP, SlashCommands
from kimi_cli.ui.interactive.prompt import KimiCompleter, make_prompt_session
from kimi_cli.ui.interactive.render import Pricing, SessionStatus, TerminalRenderer
from kimi_cli.ui.sanitize import is_clean, visible, visible_text

PROMPT = "❯ "


class InteractiveApp:
    def __init__(self, runtime: Runtime, resumed: bool) -> None:
        self.runtime = runtime
        self.resumed = resumed
        self.console = Console(highlight=False, markup=False, emoji=False)  # untrusted text is never markup
        cfg = runtime.config
        self.status = SessionStatus(
            runtime.endpoint.model,
            runtime.endpoint.provider,
            runtime.context_length,
            runtime.sandbox.name,
            self.pricing(),
        )
        self.renderer = TerminalRenderer(self.console, self.status)
        self.rules = ApprovalRules(list(cfg.approval.allow), list(cfg.approval.deny))
        self.approver = InteractiveApprover(
            cfg.approval.policy,
            self.rules,
            self.ask_approval,
            cfg.sandbox.allow_network,
            cfg.yolo,
            runtime.workdir / ".kimi" / "config.toml",
        )
        self.agent, self.provider = runtime.make_agent(self.renderer, self.approver)
        self.status.effort = self.effort_label()
        self.status.running_tasks = lambda: len(runtime.tasks.running()) if runtime.tasks else 0
        self.pending_images: list[str] = []
        self.commands = SlashCommands(self)
        completer = KimiCompleter(list(HELP), self._paths)
        self.prompt: PromptSession[str] = make_prompt_session(kimi_home() / "history", completer, self.status.line)

    def _paths(self) -> list[str]:
        from kimi_cli.context.enumerate import list_paths

        return list_paths(self.runtime.workdir)

    # --- session management ---------------------------------------------------------------------------

    def switch(self, choice: SessionChoice) -> None:
        self.runtime.switch_session(choice)
        self.agent, self.provider = self.runtime.make_agent(self.renderer, self.approver)

    def reload_history(self) -> None:
        self.agent.messages[:] = self.runtime.session.messages()

    def set_model(self, model: str) -> None:
        self.runtime.endpoint = replace(self.runtime.endpoint, model=model)
        self.runtime.model_info = self.runtime.info(model)
        self.provider.set_model(self.runtime.endpoint, self.runtime.model_info)
        self.status.model = model
        self.status.pricing = self.pricing()
        self.status.effort = self.effort_label()

    def pricing(self) -> Pricing:
        """The model table's rates for the model in use ([pricing] in the config overrides them)."""
        from kimi_cli.llm.costs import rates_for

        rates = rates_for(self.runtime.info(), self.runtime.config.pricing)
        return Pricing(rates.input, rates.cached_input, rates.output)

    def effort_label(self) -> str:
        """`effort high` for the status line; empty for a model that takes no reasoning control."""
        if self.runtime.info().reasoning == "none":
            return ""
        return f"effort {self.provider.effort or self.runtime.effort}"

    def set_effort(self, effort: str) -> None:
        """`/effort LEVEL`: this and later agents of the session send it (a new prefix is not needed)."""
        self.runtime.effort = effort
        self.provider.effort = effort
        self.status.effort = self.effort_label()

    def print_recap(self) -> None:
        msgs = [m for m in self.agent.messages if m.get("role") in ("user", "assistant") and m.get("content")]
        self.console.print(
            Text(f"resumed session {self.runtime.session.id} ({len(self.agent.messages)} messages)", style="bold")
        )
        for msg in msgs[-4:]:
            content = msg["content"] if isinstance(msg["content"], str) else "[message with images]"
            who = "you" if msg["role"] == "user" else "kimi"
            self.console.print(visible_text(f"{who}: {' '.join(content.split())[:300]}", "dim"))

    # --- questions asked while a turn runs ------------------------------------------------------------

    async def ask_line(self, question: str) -> str:
        self.renderer.stop_spinner()
        try:
            return (await PromptSession[str]().prompt_async(question)).strip().lower()
        except (KeyboardInterrupt, EOFError):
            return ""

    async def ask_approval(self, command: str, prefix: str) -> str:
        self.renderer.stop_spinner()
        # Exactly the bytes that will run: control characters written out (reverse video), never obeyed.
        body = visible_text(command, exact_bytes=True)
        if not is_clean(command.replace("\n", "").replace("\t", "")):
            body.append("\n(holds control characters, shown as \\xNN; `always` is not offered)", style="bold red")
        self.console.print(Panel(body, title="run this command?", border_style="yellow", expand=False))
        if prefix:
            shown = visible(prefix, one_line=True)
            answer = await self.ask_line(f"[y] yes once  [a] always `{shown}`  [s] always, saved  [n] no › ")
        else:
            answer = await self.ask_line("[y] yes once  [n] no › ")
        if answer in ("y", "yes"):
            return "yes"
        if answer in ("a", "always") and prefix:
            return "always"
        if answer in ("s", "save") and prefix:
            return "save"
        reason = await self.ask_line("why not? (sent to the model; Enter to skip) › ")
        return f"no:{reason}"

    # --- the loop ---------------------------------------------------------------------------------------

    async def run(self) -> int:
        rt = self.runtime
        self.console.print(
            Text.assemble(
                ("kimi", "bold cyan"),
                visible(f" · {rt.endpoint.model} · sandbox {rt.sandbox.name} · {rt.workdir} · /help for commands"),
            )
        )
        if self.resumed:
            self.print_recap()
        while True:
            try:
                line = await self.prompt.prompt_async(PROMPT)
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                if await self.commands.dispatch(line) == EXIT:
                    break
                continue
            await self.turn(line)
        return 0

    def pasted_image(self, text: str) -> Path | None:
        """A message that is only the path of an image (a drag-and-drop or a paste) attaches it."""
        candidate = text.strip().strip("'\"").replace("\\ ", " ")
        if "\n" in candidate or not candidate.lower().endswith((".png", ".jpg", ".jpeg", ".webp", ".gif")):
            return None
        path = Path(candidate).expanduser()
        path = path if path.is_absolute() else self.runtime.workdir / path
        return path if path.is_file() else None

    async def turn(self, text: str) -> None:
        image = self.pasted_image(text)
        if image is not None:
            self.pending_images.append(str(image))
            self.console.print(visible_text(f"attached {image.name}; it goes with your next message"))
            return
        try:
            message = build_user_message(text, self.pending_images, self.runtime.workdir, self.runtime.image_limits())
        except KimiError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.pending_images.clear()
        if self.runtime.session.meta.get("title") in ("", "interactive"):
            self.runtime.session.meta["title"] = text.splitlines()[0][:200]
        preamble = [{"role": "user", "content": self.runtime.resume_note}] if self.runtime.resume_note else []
        self.runtime.resume_note = ""
        self.agent.steps = 0
        self.agent.guard = LoopGuard()
        task = asyncio.ensure_future(self.agent.run(message, preamble))
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            outcome = await task
            if outcome.reason != "done" and outcome.message:
                self.console.print(visible_text(f"stopped: {outcome.message}", "yellow"))
        except asyncio.CancelledError:
            self.console.print(Text("cancelled", style="yellow"))
        except KimiError as exc:
            self.console.print(visible_text(f"✗ {self.provider.redact(str(exc))}", "red"))
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            self.renderer.finish_turn()
            self.runtime.session.set_status("idle")


def run_interactive(workdir: Path, flags: dict[str, Any], choice: SessionChoice) -> int:
    from kimi_cli.ui.interactive.trust_prompt import ask_folder_trust

    try:
        runtime = Runtime.build(workdir, flags, choice, ask_trust=ask_folder_trust)
    except KimiError as exc:
        sys.stderr.write(f"kimi: {exc}\n")
        return int(exc.exit_code)
    app = InteractiveApp(runtime, resumed=bool(choice.continue_latest or choice.resume_id))

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None
        # Ctrl-C cancels a turn (handled per turn); SIGTERM ends the session, with a watchdog for cleanup.
        on_term = CancelOnSignal(task)  # type: ignore[arg-type]
        on_term.install(asyncio.get_running_loop(), (signal.SIGTERM,))
        try:
            return await app.run()
        except asyncio.CancelledError:
            return int(ExitCode.CANCELLED)
        finally:
            await runtime.aclose()
            runtime.session.close()
            on_term.disarm()

    return asyncio.run(main())
