"""Issue 30's features over ACP: plan mode as a session mode (a plan is approved with a permission request,
which switches back to the mode before and starts the work in the same prompt), custom commands as the
session's available commands (`/review args` in a prompt expands as in the terminal). Hooks need nothing
here: they run in the shared runtime."""

from __future__ import annotations

from typing import Any

from kimi_cli.agent.loop import RunOutcome
from kimi_cli.util.logs import get_logger

log = get_logger("acp")
BUILT_INS = {"init": "write or improve AGENTS.md from the repository (undo takes it back)"}
MODE_DESCRIPTIONS = {
    "ask": ("Ask", "Ask before every command"),
    "auto": ("Auto", "Sandboxed commands run; the rest asks"),
    "plan": ("Plan", "Read-only study that ends with a plan to approve"),
    "yolo": ("Yolo", "Approve everything (the sandbox still applies)"),
}


def session_modes(current: str) -> Any:
    from acp.schema import SessionMode, SessionModeState

    modes = [SessionMode(id=mode, name=name, description=text) for mode, (name, text) in MODE_DESCRIPTIONS.items()]
    return SessionModeState(current_mode_id=current, available_modes=modes)


def commands_update(session: Any) -> Any:
    """The custom commands as ACP's available commands (the editor's `/` menu)."""
    from acp.helpers import update_available_commands
    from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

    from kimi_cli.extensions.custom_commands.session import CommandSet

    commands = CommandSet.load(session.runtime.workdir, BUILT_INS, session.runtime.folder_trust)
    session.custom_commands = commands
    listed = [AvailableCommand(name=name, description=text) for name, text in BUILT_INS.items()]
    for command in commands.commands.values():
        hint = command.argument_hint
        listed.append(
            AvailableCommand(
                name=command.name,
                description=f"{command.description} ({command.label})",
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
            )
        )
    return update_available_commands(listed)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


async def run_prompt(session: Any, message: dict[str, Any]) -> RunOutcome:
    """One prompt: a custom command expanded, the turn, and in plan mode the plan's approval."""
    message, scope = await _expand(session, message)
    try:
        outcome = await session.agent.run(message)
    finally:
        if scope is not None:
            scope.exit()
    mode = session.runtime.mode
    if mode.plan and outcome.reason == "done" and outcome.text.strip() and await _approve(session):
        from acp.helpers import update_current_mode

        from kimi_cli.approval.modes.plan import APPROVED

        back = mode.leave_plan()
        session.queue.put_nowait(update_current_mode(back))
        outcome = await session.agent.run({"role": "user", "content": APPROVED})
    return outcome


async def _expand(session: Any, message: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    from kimi_cli.agent.events import Notice
    from kimi_cli.extensions.custom_commands.session import CommandSet, TurnScope, prepare

    text = _text_of(message)
    if text.strip() == "/init":  # the built-in: the AGENTS.md task, as in the terminal
        from kimi_cli.frontends.init_agents import init_prompt

        return {"role": "user", "content": init_prompt(session.runtime.workdir)}, None
    commands = getattr(session, "custom_commands", None) or CommandSet.load(
        session.runtime.workdir, BUILT_INS, session.runtime.folder_trust
    )
    found = commands.find(text) if text.startswith("/") else None
    if found is None:
        return message, None
    command, args = found
    expansion = await prepare(commands, command, args, session.agent.registry)
    scope = TurnScope(command, commands.trusted)
    for note in expansion.notes + scope.enter(session.approver, session.agent.provider, session.runtime):
        session.agent.emit(Notice(note))
    return {"role": "user", "content": expansion.prompt}, scope


async def _approve(session: Any) -> bool:
    """Ask the editor: approve the plan (and start), or keep planning."""
    from acp.schema import PermissionOption, ToolCallUpdate

    options = [
        PermissionOption(option_id="approve", name="Approve the plan and start", kind="allow_once"),
        PermissionOption(option_id="keep_planning", name="Keep planning", kind="reject_once"),
    ]
    call = ToolCallUpdate(tool_call_id=f"plan-{session.id}", title="Approve the plan?", kind="think", status="pending")
    try:
        response = await session.conn.request_permission(session_id=session.id, tool_call=call, options=options)
    except Exception as exc:  # an editor that cannot answer: the plan stays a plan
        log.debug("plan approval request failed: %s", exc)
        return False
    return getattr(response.outcome, "option_id", None) == "approve"
