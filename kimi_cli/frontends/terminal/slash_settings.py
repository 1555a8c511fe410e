"""The terminal's built-in slash commands about the session's settings: model, effort, sandbox, rules, tasks,
MCP, web."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text

from kimi_cli.frontends.terminal.host import SessionHost
from kimi_cli.frontends.terminal.slash_registry import CommandRegistry, SlashCommand
from kimi_cli.util.sanitize import visible, visible_text

MODELS_TIMEOUT = 5.0


class SettingsCommands:
    def __init__(self, app: SessionHost) -> None:
        self.app = app
        self.console = app.console

    def register(self, registry: CommandRegistry) -> None:
        add = registry.add
        add(SlashCommand("model", "show the server's models, or switch to one", self.cmd_model, "/model [NAME]"))
        add(SlashCommand("effort", "show or change the reasoning effort", self.cmd_effort, "/effort [low|high|max]"))
        add(SlashCommand("sandbox", "how shell commands are sandboxed", self.cmd_sandbox))
        add(SlashCommand("allow", "run commands starting with PREFIX without asking", self.cmd_allow,
                         "/allow [PREFIX [--save]]"))  # fmt: skip
        add(SlashCommand("deny", "never run PREFIX, wherever it appears in a command line", self.cmd_deny,
                         "/deny [PREFIX]"))  # fmt: skip
        add(SlashCommand("tasks", "background commands; with an id, its output", self.cmd_tasks,
                         "/tasks [ID | stop ID]"))  # fmt: skip
        add(SlashCommand("mcp", "MCP servers, their status and tools", self.cmd_mcp, "/mcp [reconnect NAME]"))
        add(SlashCommand("web", "let kimi fetch web pages, or not, in this session", self.cmd_web, "/web [on|off]"))

    # --- model ---------------------------------------------------------------------------------------------

    async def server_models(self) -> tuple[list[str] | None, str]:
        """The ids the server's /v1/models lists, or None and why not."""
        from kimi_cli.llm.endpoint_info import _get_json

        endpoint = self.app.runtime.endpoint
        try:
            data: Any = await asyncio.to_thread(_get_json, endpoint.base_url + "/models", endpoint.api_key,
                                                MODELS_TIMEOUT)  # fmt: skip
        except Exception as exc:
            return None, f"{endpoint.base_url}/models did not answer ({type(exc).__name__}: {exc})"
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            return None, f"{endpoint.base_url}/models answered without a model list"
        return [str(e.get("id")) for e in entries if isinstance(e, dict) and e.get("id")], ""

    async def cmd_model(self, arg: str) -> None:
        runtime = self.app.runtime
        models, why = await self.server_models()
        if arg:
            if models is not None and arg not in models:
                offered = ", ".join(models[:12]) + (", ..." if len(models) > 12 else "")
                self.console.print(
                    visible_text(f"{runtime.endpoint.base_url} does not list {arg!r} (it offers: {offered})", "yellow")
                )
                if not await self.app.ask_yes(f"switch to {visible(arg, one_line=True)} anyway?"):
                    self.console.print("model unchanged")
                    return
            elif models is None:
                self.console.print(visible_text(f"cannot check the name: {why}", "yellow"))
            self.app.set_model(arg)
        self.console.print(visible_text(f"model: {runtime.endpoint.model} ({runtime.endpoint.provider})", "bold"))
        self.console.print(visible_text(f"model table: {runtime.info().describe()}", "dim"))
        if models is None:
            self.console.print(visible_text(f"the server's models: unknown ({why})", "dim"))
        elif not arg and len(models) > 1:  # a choice to make: the picker (Esc keeps the model)
            await self.pick_model(models)
        elif not arg:
            listed = Text("the server offers: ")
            for index, name in enumerate(models):
                if index:
                    listed.append(", ")
                listed.append_text(visible_text(name, "bold" if name == runtime.endpoint.model else "", one_line=True))
            listed.append(" (/model NAME switches)", style="dim")
            self.console.print(listed)

    async def pick_model(self, models: list[str]) -> None:
        """`/model` with no name: the server's models in an arrow-key picker, the one in use marked."""
        current = self.app.runtime.endpoint.model
        index = await self.app.ask_pick("switch to which model?", models, models.index(current) if current in
                                        models else 0)  # fmt: skip
        if index is None or models[index] == current:
            self.console.print(visible_text(f"model unchanged: {current}", "dim"))
            return
        self.app.set_model(models[index])
        self.console.print(visible_text(f"model: {models[index]} ({self.app.runtime.endpoint.provider})", "bold"))
        self.console.print(visible_text(f"model table: {self.app.runtime.info().describe()}", "dim"))

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
        self.console.print(visible_text(f"effort {effort}: sent as {how}" + (f" ({note})" if note else "")))

    # --- sandbox and rules -----------------------------------------------------------------------------------

    async def cmd_sandbox(self, arg: str) -> None:
        runtime = self.app.runtime
        net = "on" if runtime.config.sandbox.allow_network else "off"
        self.console.print(
            visible_text(
                f"sandbox {runtime.sandbox.name} ({runtime.sandbox_reason}): writable {runtime.workdir} and a private "
                f"tmp; .git read-only; network {net}; approvals {runtime.config.approval.policy}"
            )
        )
        from kimi_cli.sandbox.limits import describe

        self.console.print(visible_text("\n".join(describe(runtime.sandbox))))

    async def cmd_allow(self, arg: str) -> None:
        prefix, save = arg.replace("--save", "").strip(), "--save" in arg
        if not prefix:
            self.console.print(visible_text(f"allowed without asking: {', '.join(self.app.rules.allow) or '(none)'}"))
            return
        self.app.rules.add_allow(prefix)
        saved = " (saved in .kimi/config.toml)" if save and self.app.save_rule(prefix) else ""
        self.console.print(visible_text(f"commands starting with `{prefix}` run without asking{saved}"))

    async def cmd_deny(self, arg: str) -> None:
        if not arg:
            self.console.print(visible_text(f"denied: {', '.join(self.app.rules.deny) or '(none)'}"))
            return
        self.app.rules.add_deny(arg)
        self.console.print(visible_text(f"`{arg}` will be refused wherever it appears in a command line"))

    # --- tasks, MCP, web -------------------------------------------------------------------------------------

    async def cmd_tasks(self, arg: str) -> None:
        tasks = self.app.runtime.tasks
        if tasks is None or not tasks.tasks:
            self.console.print("no background tasks (kimi starts one with Shell and background: true)")
            return
        verb, _, rest = arg.partition(" ")
        try:
            if verb == "stop" and rest.strip():
                self.console.print(visible_text(await tasks.stop(rest.strip())))
                return
            if verb:
                task = tasks.get(verb)
                head = f"{task.id} · {task.status()} · {task.total:,} bytes of output · $ {task.command}"
                self.console.print(visible_text(head, "bold", one_line=True))
                kept = bytes(task.buffer).decode("utf-8", errors="replace")
                if task.total > len(task.buffer):
                    self.console.print(Text(f"(the first {task.total - len(task.buffer):,} bytes are no longer kept)",
                                            style="dim"))  # fmt: skip
                self.console.print(visible_text(kept.rstrip("\n") or "(no output yet)", drop_colors=True))
                return
        except Exception as exc:  # ToolError: an unknown id, said in words
            self.console.print(visible_text(str(exc), "yellow"))
            return
        for task in tasks.tasks.values():
            line = visible_text(f"{task.id}  {task.status():<26} {task.total:>9,} bytes  {task.command}", one_line=True)
            line.truncate(max(self.console.width - 1, 20), overflow="ellipsis")
            self.console.print(line)
        self.console.print(Text("/tasks ID shows one's output; /tasks stop ID stops it", style="dim"))

    async def cmd_mcp(self, arg: str) -> None:
        manager = self.app.runtime.mcp
        if manager is None:
            self.console.print("no MCP servers configured (kimi mcp add NAME -- COMMAND, or .kimi/mcp.json)")
            return
        verb, _, name = arg.partition(" ")
        if verb == "reconnect" and name.strip() in manager.states:
            ok = await manager.reconnect(name.strip())
            self.console.print(
                visible_text(f"{name.strip()}: {'ready' if ok else 'still failing'} (tools stay as they were at start)")
            )
            return
        for server, state in manager.states.items():
            detail = f"{len(state.tools)} tools" if state.status == "ready" else state.error
            self.console.print(visible_text(f"{server:<20} {state.status:<9} {detail}", one_line=True))

    async def cmd_web(self, arg: str) -> None:
        if arg not in ("", "on", "off"):
            self.console.print(Text("usage: /web on|off", style="yellow"))
            return
        if not self.app.runtime.config.web.enabled:
            self.console.print("kimi has no web tools in this session ([web] enabled = false in the config)")
            return
        ctx = self.app.agent.ctx
        if arg:
            ctx.web_off = arg == "off"
        if ctx.web_off:
            self.console.print("web fetching is off for this session: kimi cannot fetch pages (/web on allows it)")
        else:
            self.console.print("web fetching is on: kimi may fetch pages, asking first for hosts nobody named")
