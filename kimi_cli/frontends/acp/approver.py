"""Approvals over ACP: whatever would ask in the terminal becomes `session/request_permission`."""

from __future__ import annotations

from typing import Any

from kimi_cli.approval.engine import Approver
from kimi_cli.approval.rules import Rules

MODES = ("ask", "auto", "yolo")  # the modes the editor may pick (plan mode aside)


class AcpAsk:
    """Asks the client: allow once, allow always (the terminal's prefix rules), or reject."""

    def __init__(self, conn: Any, session_id: str, hooks: Any = None) -> None:
        self.conn = conn
        self.session_id = session_id
        self.count = 0
        self.hooks = hooks  # the session's HookSession: Notification fires as the editor is asked

    async def __call__(self, command: str, prefix: str) -> str:
        why = getattr(command, "why", "")  # the engine's reason for asking (a Question), shown with the details
        from acp.schema import PermissionOption, ToolCallUpdate

        from kimi_cli.frontends.questions import TITLE_LIMIT, show
        from kimi_cli.util.sanitize import visible

        self.count += 1
        if self.hooks is not None and self.hooks.has("Notification"):  # not waited for, as in the terminal
            self.hooks.notification_in_background(f"kimi needs your permission: {command[:300]}")
        # The title is the whole command on one line: blank runs counted (`npm test⎵×260; echo PWNED`), control
        # characters written out. Past the title limit a mark counts what is left out, and `always` is not
        # offered: nobody may approve for good what they could not read. The details hold the command as lines
        # (same rules, a larger limit); raw_input keeps the exact bytes that would run.
        title = show(command, one_line=True, limit=TITLE_LIMIT)
        details = show(command + (f"\n\n({why})" if why else ""))
        always = bool(prefix) and title.complete and details.complete
        options = [PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once")]
        if always:  # "" : not one plain command (or it holds control characters): no `always` for it
            options.append(PermissionOption(option_id="allow_always", name=f"Always allow `{visible(prefix)}`",
                                            kind="allow_always"))  # fmt: skip
        options.append(PermissionOption(option_id="reject", name="Reject", kind="reject_once"))
        call = ToolCallUpdate(tool_call_id=f"permission-{self.count}", title=title.plain, kind="execute",
                              status="pending", content=[_text(details.plain)],
                              raw_input={"command": command})  # fmt: skip
        response = await self.conn.request_permission(session_id=self.session_id, tool_call=call, options=options)
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None)
        if chosen == "allow_once":
            return "yes"
        if chosen == "allow_always" and always:
            return "always"
        return "no:rejected in the editor"


def _text(text: str) -> Any:
    import acp

    return acp.tool_content(acp.text_block(text))


def make_approver(
    conn: Any, session_id: str, policy: str, rules: Rules, network: bool = False, hooks: Any = None
) -> Approver:
    """The session's approval engine with the editor as the one who answers: the terminal's rules and modes,
    the same network policy, and the Notification hooks fire as the editor is asked."""
    return Approver(rules, policy, AcpAsk(conn, session_id, hooks), network)


def set_mode(approver: Approver, mode: str) -> None:
    approver.set_mode(mode)
