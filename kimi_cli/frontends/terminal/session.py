"""InteractiveApp: the session. One input line stays alive (input.py) while turns run beside it as tasks.

Esc or Ctrl-C cancels the running turn (or command) whatever it is doing: streaming, thinking, running a
command or waiting at an approval. Lines typed meanwhile are queued and sent when the turn ends (Esc sends
them at once; after Ctrl-C they come back to the input line instead). Everything printed goes above the
input line and stays in the scrollback.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from kimi_cli.agent.bootstrap import Runtime, SessionChoice
from kimi_cli.agent.events import Notice
from kimi_cli.agent.guard import LoopGuard
from kimi_cli.agent.toolbox import make_agent
from kimi_cli.approval.engine import Approver
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.frontends.attachments import IMAGE_SUFFIXES, build_user_message
from kimi_cli.frontends.figures import short_tokens
from kimi_cli.frontends.terminal.approval_view import approval_view
from kimi_cli.frontends.terminal.features import SessionFeatures
from kimi_cli.frontends.terminal.input import InputLine, Question
from kimi_cli.frontends.terminal.prompt import KimiCompleter
from kimi_cli.frontends.terminal.recap import recap, resume_hint
from kimi_cli.frontends.terminal.render import TerminalRenderer
from kimi_cli.frontends.terminal.slash_commands import SlashCommands
from kimi_cli.frontends.terminal.slash_registry import EXIT
from kimi_cli.frontends.terminal.status import SessionStatus, elapsed, money
from kimi_cli.util.paths import kimi_home
from kimi_cli.util.sanitize import visible, visible_text
from kimi_cli.util.signals import CancelOnSignal

OUTPUT_EVERY = 0.05
ANSWERS = {"yes": "yes, once", "always": "always", "save": "always (saved)", "no": "no"}


class InteractiveApp:
    def __init__(self, runtime: Runtime, resumed: bool) -> None:
        self.runtime = runtime
        self.resumed = resumed
        self.console = Console(highlight=False, markup=False, emoji=False)  # untrusted text is never markup
        cfg = runtime.config
        self.status = SessionStatus(
            runtime.endpoint.model, runtime.endpoint.provider, runtime.context_length, runtime.sandbox.name,
            self.rates(),
        )  # fmt: skip
        self.status.carry(runtime.session.usage)  # a resumed session's cost goes on from where it was
        self.renderer = TerminalRenderer(self.console, self.status)
        self.rules = runtime.rules  # parsed once at start; /allow and /deny add to them
        self.approver = Approver(
            self.rules, "yolo" if cfg.yolo else cfg.approval.policy, self.ask_approval, cfg.sandbox.allow_network,
            save=self.save_rule,
        )  # fmt: skip
        self.agent, self.provider = make_agent(runtime, self.renderer, self.approver)
        self.status.effort = self.effort_label()
        self.status.running_tasks = lambda: len(runtime.tasks.running()) if runtime.tasks else 0
        if not resumed:
            self.status.pack_tokens = self.first_request_tokens()
        self.pending_images: list[str] = []
        self.commands = SlashCommands(self)
        self.features = SessionFeatures(self)  # /plan, Shift+Tab, /hooks, /skills, /fork, /init, custom commands
        self.features.register(self.commands.registry)
        completer = KimiCompleter(self.commands.registry, self._paths)
        self.input = InputLine(self.status, completer, kimi_home() / "history", self.submitted, self.interrupt,
                               self.request_exit, self.expand_last)  # fmt: skip
        self.features.bind_keys(self.input.bindings)
        from kimi_cli.frontends.terminal.clipboard import ClipboardPaste
        from kimi_cli.frontends.terminal.steering import Steering

        self.clipboard = ClipboardPaste(self)  # Ctrl-V and /paste: the clipboard's image
        self.clipboard.register(self.commands.registry)
        self.clipboard.bind_keys(self.input.bindings)
        self.steering = Steering(self)  # Ctrl-S: typed-ahead text into the running turn
        self.steering.bind_keys(self.input.bindings)
        from kimi_cli.frontends.terminal.notify import Notifier

        self.notifier = Notifier(self)  # [notifications]: a turn ended or kimi waits, while you look elsewhere
        self.notifier.bind_keys(self.input.bindings)
        from kimi_cli.frontends.terminal.btw import SideQuestions
        from kimi_cli.frontends.terminal.status_command import StatusCommand

        self.side = SideQuestions(self)  # /btw: a side question, never in the history
        self.side.register(self.commands.registry)
        from kimi_cli.frontends.terminal.goal import GoalRunner

        self.goal = GoalRunner(self)  # /goal CHECK: rounds until the check passes or a limit is reached
        self.goal.register(self.commands.registry)
        self.status_command = StatusCommand(self)  # [status_line] command: its first line above the status line
        self.input.custom_line = lambda: self.status_command.line
        self.inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.current: asyncio.Task[Any] | None = None  # the turn or command running now
        self.interrupted_by = ""
        self._pager: asyncio.Future[None] | None = None

    def _paths(self) -> list[str]:
        from kimi_cli.context.enumerate import list_paths

        return list_paths(self.runtime.workdir)

    # --- session management ---------------------------------------------------------------------------

    def switch(self, choice: SessionChoice) -> None:
        old = self.runtime.session
        self.runtime.switch_session(choice)
        with contextlib.suppress(OSError):
            old.discard_if_empty()
        self.agent, self.provider = make_agent(self.runtime, self.renderer, self.approver)
        self.status.carry(self.runtime.session.usage)
        self.status.pack_tokens = 0 if choice.resume_id else self.first_request_tokens()

    def reload_history(self) -> None:
        self.agent.messages[:] = self.runtime.session.messages()

    def set_model(self, model: str) -> None:
        self.runtime.endpoint = replace(self.runtime.endpoint, model=model)
        self.runtime.model_info = self.runtime.info(model)
        self.provider.set_model(self.runtime.endpoint, self.runtime.model_info)
        self.status.model = model
        self.status.rates = self.rates()
        self.status.effort = self.effort_label()

    def rates(self) -> Any:
        """The model table's rates for the model in use ([pricing] in the config overrides them)."""
        from kimi_cli.llm.costs import rates_for

        return rates_for(self.runtime.info(), self.runtime.config.pricing)

    def effort_label(self) -> str:
        """`effort high` for the status line; empty for a model that takes no reasoning control."""
        if self.runtime.info().reasoning == "none":
            return ""
        return f"effort {self.provider.effort or self.runtime.effort}"

    def set_effort(self, effort: str) -> None:
        """`/effort LEVEL`: this and later agents of the session send it (a new prefix is not needed)."""
        from kimi_cli.agent.toolbox import keep_effort

        self.runtime.effort = effort
        self.provider.effort = effort
        self.status.effort = self.effort_label()
        keep_effort(self.runtime, effort)  # `kimi -c` goes on with it

    def first_request_tokens(self) -> int:
        """About what the first request will carry: the system message (instructions and the packed
        repository) and the tools' schemas, estimated as the context does."""
        import json

        context = self.runtime.context
        try:
            tools = len(json.dumps(self.agent.registry.schemas())) // 4
            return int(context.estimate(self.agent.messages, 0, 0)) + tools
        except Exception:
            return 0

    def print_recap(self) -> None:
        self.console.print(recap(self.runtime.session, self.agent.messages, self.status.priced, self.status.cost))

    def banner(self) -> None:
        rt = self.runtime
        self.console.print(
            Text.assemble(
                ("kimi", "bold cyan"),
                visible(f" · {rt.endpoint.model} · sandbox {rt.sandbox.name} · {rt.workdir} · /help for commands"),
            )
        )
        pack = rt.context.last_pack
        if pack is not None and not self.resumed:
            tokens = self.status.pack_tokens or pack.tokens
            line = f"packed {len(pack.by_mode('full'))} files in full, {len(pack.by_mode('outline'))} as outlines: "
            line += f"the first request carries ~{tokens:,} tokens"
            rates = self.status.rates
            if rates.priced:
                miss, hit = tokens * rates.input / 1e6, tokens * rates.cached_input / 1e6
                line += f", about {money(miss)} at the cache-miss price ({money(hit)} when cached)"
            else:
                line += f"; no price for {rt.endpoint.model} here, so no cost is counted"
            self.console.print(visible_text(line, "dim"))
        if self.resumed:
            self.print_recap()

    # --- input ------------------------------------------------------------------------------------------

    def submitted(self, text: str) -> None:
        """A line from the input: run it, or queue it while something runs."""
        if self.current is not None and self.side.takes(text):
            return  # /btw mid-turn: answered now, beside the turn
        if self.current is not None or not self.inbox.empty():
            self.input.queued.append(text)
            self.input.invalidate()
        else:
            self.inbox.put_nowait(text)

    def interrupt(self, key: str) -> None:
        if self.current is not None and not self.current.done():
            self.interrupted_by = key
            self.current.cancel()

    def request_exit(self) -> None:
        self.inbox.put_nowait(None)

    def expand_last(self) -> None:
        self._pager = asyncio.ensure_future(self.show_last())

    async def show_last(self) -> None:
        from prompt_toolkit.application import run_in_terminal

        from kimi_cli.frontends.terminal.pager import page

        last = self.renderer.last
        if last is None:
            self.console.print("no tool output yet")
            return
        await run_in_terminal(lambda: page(last.title, last.output), in_executor=True)

    # --- questions asked while a turn runs ------------------------------------------------------------

    async def ask_line(self, question: str) -> str:
        """A line of text; Esc or Ctrl-C answer '' (commands treat that as no)."""
        return (await self.input.ask(Question(question))).strip().lower()

    async def ask_yes(self, question: str) -> bool:
        """One key, no Enter: y is yes; n, Enter (the shown default), Esc or Ctrl-C is no."""
        answer = await self.input.ask(Question(f"{question} y/N (Enter = no) › ", {"y": "y", "n": "n"}, default="n"))
        self.console.print(Text(f"  → {'yes' if answer == 'y' else 'no'}", style="dim"))
        return answer == "y"

    async def ask_pick(self, question: str, labels: list[str], selected: int = 0) -> int | None:
        """An arrow-key picker (kimi_cli.frontends.terminal.choose): the index picked, None on Esc or Ctrl-C."""
        from kimi_cli.frontends.terminal.choose import Choices

        answer = await self.input.ask(Question(f"{question} › ", choices=Choices(labels, selected)))
        return int(answer) if answer.isdigit() else None

    def save_rule(self, rule: str) -> bool:
        """`s` and `/allow --save`: keep the rule in the workspace's .kimi/config.toml; a refusal is told."""
        from kimi_cli.approval.persist import RuleNotSaved

        try:
            return self.runtime.save_rule(rule)
        except RuleNotSaved as exc:
            self.console.print(visible_text(f"the rule `{rule}` applies for this session but was not saved: {exc}",
                                            "yellow"))  # fmt: skip
            return False

    async def ask_approval(self, command: str, prefix: str) -> str:
        self.features.notify(f"kimi needs your permission: {command[:300]}")
        self.notifier.waiting(f"approve {command[:120]}?")
        view = approval_view(command, prefix, why=getattr(command, "why", ""), parts=getattr(command, "parts", None))
        self.console.print(view.renderable)
        phase, self.status.phase = self.status.phase, "waiting for your answer"
        try:
            answer = await self.input.ask(Question(view.prompt, view.keys, default="no", interrupts=True))
            self.console.print(Text(f"  → {ANSWERS.get(answer, answer)}", style="dim"))
            if answer == "no":
                reason = await self.input.ask(Question("why not? (sent to kimi; Enter skips) › ", interrupts=True))
                return f"no:{reason}"
            return answer
        finally:
            self.status.phase = phase

    # --- the loop ---------------------------------------------------------------------------------------

    async def run(self) -> int:
        from prompt_toolkit.patch_stdout import StdoutProxy

        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Ctrl-C while the terminal is not raw
            loop.add_signal_handler(signal.SIGINT, self.interrupt, "ctrl-c")
        # Everything printed goes above the input line; written at most every OUTPUT_EVERY seconds.
        proxy = StdoutProxy(raw=True, sleep_between_writes=OUTPUT_EVERY)
        with proxy, contextlib.redirect_stdout(proxy), contextlib.redirect_stderr(proxy):
            self.banner()
            self.notifier.start()
            self.status_command.start()
            ui = asyncio.ensure_future(self.input.run())
            try:
                while True:
                    line = await self._next(ui)
                    if line is None or await self.handle(line) == EXIT:
                        break
            finally:
                self.notifier.stop()
                self.status_command.stop()
                self.input.exit()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(ui, 5)
        return 0

    async def _next(self, ui: asyncio.Future[Any]) -> str | None:
        getter = asyncio.ensure_future(self.inbox.get())
        done, _ = await asyncio.wait({getter, ui}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            return getter.result()
        getter.cancel()
        return None  # the input line ended (it should not): leave

    async def handle(self, line: str) -> str | None:
        self.echo(line)
        if line.strip().startswith("/"):
            name = line.strip()[1:].split(" ", 1)[0]
            result = await self.busy(self.commands.dispatch(line.strip()), f"/{visible(name, one_line=True)}")
        else:
            await self.turn(line)
            result = None
        self.after_busy()
        return result if result == EXIT else None

    def echo(self, line: str) -> None:
        """The line as sent, in the scrollback (the input line itself is cleared for the next one)."""
        self.console.print(Text("❯ ", style="bold").append_text(visible_text(line.strip("\n"), "bold")))

    def after_busy(self) -> None:
        """Lines typed during the turn: sent now, or (after Ctrl-C) back on the input line."""
        queued = self.steering.leftover() + self.input.take_queued()  # steered but unread: sent first
        key, self.interrupted_by = self.interrupted_by, ""
        if not queued:
            return
        if key == "ctrl-c":
            self.input.put_back("\n".join(queued))
            self.console.print(Text("your queued message is back on the input line (not sent)", style="dim"))
            return
        batch: list[str] = []
        for text in queued:  # consecutive messages go as one; a command runs on its own
            if text.strip().startswith("/"):
                if batch:
                    self.inbox.put_nowait("\n\n".join(batch))
                    batch = []
                self.inbox.put_nowait(text)
            else:
                batch.append(text)
        if batch:
            self.inbox.put_nowait("\n\n".join(batch))

    async def busy(self, work: Any, phase: str) -> Any:
        """Run a turn or a command as a task that Esc and Ctrl-C cancel; None when cancelled."""
        self.current = asyncio.ensure_future(work)
        self.status.begin_turn()
        self.status.phase = phase
        self.input.set_busy(True)
        try:
            return await self.current
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # the session itself is ending (SIGTERM)
                raise
            self.console.print(Text(f"interrupted ({self.interrupted_by or 'cancelled'})", style="yellow"))
            return None
        finally:
            self.current = None
            self.status.end_turn()
            self.input.set_busy(False)

    def pasted_image(self, text: str) -> Path | None:
        """A message that is only the path of an image (a drag-and-drop or a paste) attaches it."""
        candidate = text.strip().strip("'\"").replace("\\ ", " ")
        if "\n" in candidate or not candidate.lower().endswith(IMAGE_SUFFIXES):
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
            message = build_user_message(text, self.pending_images, self.runtime.workdir, self.runtime.image_limits(),
                                         notify=lambda line: self.agent.emit(Notice(line)))  # fmt: skip
        except KimiError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.pending_images.clear()
        session = self.runtime.session
        if session.meta.get("title") in ("", "interactive"):
            session.meta["title"] = text.strip().splitlines()[0][:200]
        preamble = [{"role": "user", "content": self.runtime.resume_note}] if self.runtime.resume_note else []
        self.runtime.resume_note = ""
        self.agent.steps = 0
        self.steering.attach(self.agent)
        self.agent.guard = LoopGuard()
        started = time.monotonic()
        outcome: Any = None
        try:
            outcome = await self.busy(self.agent.run(message, preamble), "thinking")
        except KimiError as exc:
            self.console.print(visible_text(f"✗ {self.provider.redact(str(exc))}", "red"))
        finally:
            self.renderer.finish_turn()
            session.set_status("idle")
        if outcome is not None and outcome.reason != "done" and outcome.message:
            self.console.print(visible_text(f"stopped: {outcome.message}", "yellow"))
        self.footer(outcome, time.monotonic() - started)
        reason = "stopped" if outcome is None else "done" if outcome.reason == "done" else outcome.reason
        self.notifier.turn_ended(f"{reason} · {text.strip().splitlines()[0][:80] if text.strip() else ''}")
        await self.features.after_turn(outcome)  # plan mode: approve the plan or comment on it
        await self.goal.after_turn(outcome)  # /goal: check again, queue the next round or stop

    def footer(self, outcome: Any, seconds: float) -> None:
        """One dim line after each turn: steps, time, tokens and cost of the turn."""
        st = self.status
        steps = int(getattr(outcome, "steps", self.agent.steps))
        parts = [f"{steps} step{'s' if steps != 1 else ''}" if outcome else "stopped"]
        parts.append(elapsed(seconds))
        parts.append(f"↑{short_tokens(st.turn_prompt)} ↓{short_tokens(st.turn_output)}")
        parts.append(f"session {st.cost_text()}")
        self.console.print(Text("  " + " · ".join(parts), style="dim"))


def run_interactive(
    workdir: Path, flags: dict[str, Any], choice: SessionChoice, first_run: Callable[[], bool] | None = None
) -> int:
    """The session. `first_run`: the setup to run in place when no provider is set up (no key where one is
    needed); True when it saved settings, and the session then starts with them."""
    from kimi_cli.errors import MissingKey
    from kimi_cli.frontends.terminal.picker import PICK, pick_session
    from kimi_cli.frontends.terminal.trust_prompt import ask_folder_trust

    if choice.resume_id == PICK:
        choice.resume_id = pick_session(workdir)
    answers: dict[str, bool] = {}

    def ask_trust(state: Any) -> bool:  # asked once: the build after a first run's setup takes the same answer
        if state.digest not in answers:
            answers[state.digest] = ask_folder_trust(state)
        return answers[state.digest]

    try:
        try:
            runtime = Runtime.build(workdir, flags, choice, ask_trust=ask_trust)
        except MissingKey:
            if first_run is None or not sys.stdin.isatty() or not first_run():
                raise
            runtime = Runtime.build(workdir, flags, choice, ask_trust=ask_trust)
    except KimiError as exc:
        sys.stderr.write(f"kimi: {visible(str(exc))}\n")
        return int(exc.exit_code)
    from kimi_cli.frontends.quiet import quiet_child_watcher

    quiet_child_watcher()
    app = InteractiveApp(runtime, resumed=bool(choice.continue_latest or choice.resume_id))

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None
        # SIGTERM ends the session, with a watchdog for cleanup; Ctrl-C is a key of the input line.
        on_term = CancelOnSignal(task)
        on_term.install(asyncio.get_running_loop(), (signal.SIGTERM,))
        try:
            return await app.run()
        except asyncio.CancelledError:
            return int(ExitCode.CANCELLED)
        finally:
            await runtime.aclose()
            for warning in runtime.exit_warnings():
                sys.stdout.write(f"warning: {visible(warning)}\n")
            session = runtime.session
            session.close()
            if not session.discard_if_empty():
                sys.stdout.write(resume_hint(session) + "\n")
            on_term.disarm()

    return asyncio.run(main())
