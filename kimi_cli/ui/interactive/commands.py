"""Slash commands of the interactive session."""

from __future__ import annotations

import difflib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from kimi_cli.checkpoints import CheckpointError, ShadowRepo
from kimi_cli.commands.undo import target_text
from kimi_cli.errors import KimiError
from kimi_cli.runtime import SessionChoice
from kimi_cli.session.checkpointing import apply_undo, describe_points, plan_undo, undo_state
from kimi_cli.session.store import list_sessions
from kimi_cli.ui.interactive.host import SessionHost
from kimi_cli.ui.sanitize import visible, visible_text

EXIT = "exit"
HELP = {
    "help": "this list",
    "exit": "leave (Ctrl-D works too)",
    "clear": "start a new session",
    "compact": "summarise the conversation now to free context",
    "undo": "/undo [N | list]: put files back as they were before your last prompt (or undo point N)",
    "model": "/model [NAME]: show or change the model (and its entry in the model table)",
    "effort": "/effort [low|high|max]: show or change the reasoning effort",
    "sessions": "list this folder's sessions",
    "resume": "/resume ID: switch to an earlier session",
    "image": "/image PATH: attach an image to your next message",
    "diff": "what this session changed in the workspace",
    "cost": "tokens and cost so far",
    "sandbox": "how shell commands are sandboxed",
    "allow": "/allow PREFIX [--save]: run commands starting with PREFIX without asking",
    "deny": "/deny PREFIX: never run commands starting with PREFIX",
    "reasoning": "show or hide the model's reasoning",
    "tasks": "/tasks [stop ID]: background commands, running and finished",
    "mcp": "/mcp [reconnect NAME]: MCP servers, their status and tools",
    "web": "/web on|off: let FetchURL fetch, or refuse every fetch for this session",
}


class SlashCommands:
    def __init__(self, app: SessionHost) -> None:
        self.app = app
        self.console = app.console

    async def dispatch(self, line: str) -> str | None:
        name, _, arg = line[1:].strip().partition(" ")
        handler: Callable[[str], Awaitable[str | None]] | None = getattr(self, f"cmd_{name}", None)
        if not name or handler is None:
            close = difflib.get_close_matches(name, list(HELP), n=1)
            hint = f" Did you mean /{close[0]}?" if close else ""
            self.console.print(visible_text(f"unknown command /{name}.{hint} /help lists them.", "yellow"))
            return None
        return await handler(arg.strip())

    async def cmd_help(self, arg: str) -> None:
        table = Table(show_header=False, box=None)
        for name, text in HELP.items():
            table.add_row(f"/{name}", text)
        self.console.print(table)
        self.console.print("Enter sends · Esc+Enter inserts a newline · Ctrl-C cancels a turn · @path.png attaches")

    async def cmd_exit(self, arg: str) -> str:
        return EXIT

    async def cmd_clear(self, arg: str) -> None:
        self.app.switch(SessionChoice())
        self.console.print(f"new session {self.app.runtime.session.id}")

    async def cmd_compact(self, arg: str) -> None:
        if self.app.agent.context is None:
            self.console.print("compaction needs the repository context")
            return
        self.app.renderer.spin("compacting")
        try:
            await self.app.agent.compact()
        except KimiError as exc:
            self.console.print(visible_text(f"compaction failed: {exc}", "red"))
        finally:
            self.app.renderer.stop_spinner()

    async def cmd_undo(self, arg: str) -> None:
        runtime = self.app.runtime
        shadow = ShadowRepo(runtime.workdir)
        if arg in ("list", "--list"):
            state = undo_state(runtime.session.records())
            lines = describe_points(shadow, state) if state.points else ["no undo points yet"]
            self.console.print(visible_text("\n".join(lines)))
            return
        try:
            plan = plan_undo(shadow, runtime.session, int(arg) if arg.isdigit() else None)
        except CheckpointError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        for change in plan.changes:
            verb = {"A": "restore", "D": "delete", "M": "rewrite"}.get(change.status, change.status)
            self.console.print(visible_text(f"  {verb} {change.path}"))
        if plan.user_edits:
            names = ", ".join(c.path for c in plan.user_edits)
            self.console.print(
                visible_text(f"you changed {names} after the agent's last step; undo overwrites them", "yellow")
            )
            if await self.app.ask_line("overwrite? [y/N] ") not in ("y", "yes"):
                self.console.print("undo cancelled")
                return
        apply_undo(shadow, runtime.session, plan)
        self.app.reload_history()
        self.console.print(
            visible_text(
                f"restored the files; the conversation now ends {target_text(plan.target.kind, plan.target.label)}"
            )
        )

    async def cmd_model(self, arg: str) -> None:
        if arg:
            self.app.set_model(arg)
        runtime = self.app.runtime
        self.console.print(f"model: {runtime.endpoint.model} ({runtime.endpoint.provider})")
        self.console.print(Text(f"model table: {runtime.info().describe()}", style="dim"))

    async def cmd_effort(self, arg: str) -> None:
        from kimi_cli.llm.models import EFFORTS, reasoning_fields

        if arg and arg not in EFFORTS:
            self.console.print(Text(f"usage: /effort {'|'.join(EFFORTS)}", style="yellow"))
            return
        if arg:
            self.app.set_effort(arg)
        info = self.app.runtime.info()
        effort = self.app.provider.effort or ""
        sent, note = reasoning_fields(info, effort)
        how = ", ".join(f"{k}={v}" for k, v in sent.items()) or f"nothing: {info.id} takes no reasoning control"
        self.console.print(f"effort {effort}: sent as {how}" + (f" ({note})" if note else ""))

    async def cmd_sessions(self, arg: str) -> None:
        current = self.app.runtime.session.id
        for info in list_sessions(self.app.runtime.workdir)[:20]:
            mark = "*" if info.id == current else " "
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
            line = f"{mark} {info.id}  {when}  {info.steps:>3} steps  {info.title[:60]}"
            self.console.print(visible(line, one_line=True))

    async def cmd_resume(self, arg: str) -> None:
        if not arg:
            self.console.print("usage: /resume ID (see /sessions)")
            return
        try:
            self.app.switch(SessionChoice(resume_id=arg))
        except KimiError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.app.print_recap()

    async def cmd_image(self, arg: str) -> None:
        path = Path(arg).expanduser()
        path = path if path.is_absolute() else self.app.runtime.workdir / path
        from kimi_cli.image_pipeline import prepare

        limits = self.app.runtime.image_limits()
        try:
            prepared = prepare(path.read_bytes(), limits, str(path))  # sized as it will be sent
        except FileNotFoundError:
            self.console.print(visible_text(f"image not found: {path}", "yellow"))
            return
        except OSError as exc:
            self.console.print(visible_text(f"cannot read image {path}: {exc.strerror}", "yellow"))
            return
        except ValueError as exc:
            self.console.print(visible_text(str(exc), "yellow"))
            return
        self.app.pending_images.append(str(path))
        self.console.print(
            visible_text(
                f"attached {arg} ({prepared.note()}, ~{prepared.tokens(limits.patch):,} tokens); it goes with your "
                "next message"
            )
        )

    async def cmd_diff(self, arg: str) -> None:
        runtime = self.app.runtime
        records = runtime.session.records()
        first = next((r["tree"] for r in records if r.get("kind") == "checkpoint"), None)
        if first is None:
            self.console.print("this session has not changed any files")
            return
        shadow = ShadowRepo(runtime.workdir)
        patch = shadow.diff(first, shadow.snapshot())
        self.console.print(Syntax(visible(patch), "diff", theme="ansi_dark") if patch else "no changes")

    async def cmd_cost(self, arg: str) -> None:
        from kimi_cli.llm.costs import cost_of, first_request_line, rates_for

        st = self.app.status
        rt = self.app.runtime
        usage = {"prompt_tokens": st.prompt_tokens, "cached_tokens": st.cached_tokens,
                 "completion_tokens": st.completion_tokens}  # fmt: skip
        rates = rates_for(rt.info(), rt.config.pricing)
        self.console.print(cost_of(usage, rates).summary())
        self.console.print(first_request_line(self.app.provider.first_usage))
        per = f"${rates.input:g} miss / ${rates.cached_input:g} hit / ${rates.output:g} output per 1M tokens"
        self.console.print(Text(f"rates: {per} ({rates.source})", style="dim"))
        self.console.print(
            Text(
                f"context window {rt.context_length:,} tokens, from {rt.context_source} · "
                f"{rt.endpoint.provider} {rt.endpoint.base_url} · {rt.info().describe()}",
                style="dim",
            )
        )

    async def cmd_sandbox(self, arg: str) -> None:
        runtime = self.app.runtime
        net = "on" if runtime.config.sandbox.allow_network else "off"
        self.console.print(
            f"sandbox {runtime.sandbox.name} ({runtime.sandbox_reason}): writable {runtime.workdir} and a private tmp; "
            f".git read-only; network {net}; approvals {runtime.config.approval.policy}"
        )
        from kimi_cli.tools.sandbox.limits import describe

        self.console.print(Text("\n".join(describe(runtime.sandbox))))

    async def cmd_allow(self, arg: str) -> None:
        prefix, save = arg.replace("--save", "").strip(), "--save" in arg
        if not prefix:
            self.console.print(f"allowed without asking: {', '.join(self.app.rules.allow) or '(none)'}")
            return
        self.app.rules.allow.append(prefix)
        if save:
            from kimi_cli.ui.interactive.approvals import save_allow_rule

            save_allow_rule(self.app.runtime.workdir / ".kimi" / "config.toml", prefix)
        self.console.print(visible(f"commands starting with `{prefix}` run without asking{' (saved)' if save else ''}"))

    async def cmd_deny(self, arg: str) -> None:
        if not arg:
            self.console.print(f"denied: {', '.join(self.app.rules.deny) or '(none)'}")
            return
        self.app.rules.deny.append(arg)
        self.console.print(visible(f"`{arg}` will be refused wherever it appears in a command line"))

    async def cmd_reasoning(self, arg: str) -> None:
        self.app.renderer.show_reasoning = not self.app.renderer.show_reasoning
        self.console.print(f"reasoning {'shown' if self.app.renderer.show_reasoning else 'hidden'}")

    async def cmd_tasks(self, arg: str) -> None:
        tasks = self.app.runtime.tasks
        if tasks is None or not tasks.tasks:
            self.console.print("no background tasks (Shell with background: true starts one)")
            return
        verb, _, task_id = arg.partition(" ")
        if verb == "stop" and task_id:
            try:
                self.console.print(visible_text(await tasks.stop(task_id.strip())))
            except Exception as exc:
                self.console.print(visible_text(str(exc), "yellow"))
            return
        for task in tasks.tasks.values():
            line = f"{task.id}  {task.status():<28} {task.total:>9,} bytes  {task.command[:70]}"
            self.console.print(visible(line, one_line=True))

    async def cmd_mcp(self, arg: str) -> None:
        manager = self.app.runtime.mcp
        if manager is None:
            self.console.print("no MCP servers configured (kimi mcp add NAME -- COMMAND, or .kimi/mcp.json)")
            return
        verb, _, name = arg.partition(" ")
        if verb == "reconnect" and name.strip() in manager.states:
            ok = await manager.reconnect(name.strip())
            self.console.print(
                f"{name.strip()}: {'ready' if ok else 'still failing'} (tools stay as they were at start)"
            )
            return
        for server, state in manager.states.items():
            detail = f"{len(state.tools)} tools" if state.status == "ready" else state.error
            self.console.print(visible(f"{server:<20} {state.status:<9} {detail}", one_line=True))

    async def cmd_web(self, arg: str) -> None:
        services = self.app.agent.ctx.services
        if arg in ("on", "off"):
            services["web_off"] = arg == "off"
        state = "off" if services.get("web_off") else "on"
        self.console.print(f"web fetching is {state} (the tool stays declared, so the prompt cache is kept)")
