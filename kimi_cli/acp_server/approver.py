"""Approvals over ACP: whatever would ask in the terminal becomes `session/request_permission`."""

from __future__ import annotations

from typing import Any

from kimi_cli.ui.interactive.approvals import ApprovalRules, InteractiveApprover

MODES = {"ask": "ask", "auto": "auto", "yolo": "auto"}


class AcpAsk:
    """Asks the client: allow once, allow always (the terminal's prefix rules), or reject."""

    def __init__(self, conn: Any, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self.count = 0

    async def __call__(self, command: str, prefix: str) -> str:
        from acp.schema import PermissionOption, ToolCallUpdate

        self.count += 1
        options = [
            PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="allow_always", name=f"Always allow `{prefix}`", kind="allow_always"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        call = ToolCallUpdate(tool_call_id=f"permission-{self.count}", title=command[:200], kind="execute",
                              status="pending", raw_input={"command": command})  # fmt: skip
        response = await self.conn.request_permission(session_id=self.session_id, tool_call=call, options=options)
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None)
        if chosen == "allow_once":
            return "yes"
        if chosen == "allow_always":
            return "always"
        return "no:rejected in the editor"


def make_approver(conn: Any, session_id: str, policy: str, allow: list[str], deny: list[str]) -> InteractiveApprover:
    return InteractiveApprover(policy, ApprovalRules(list(allow), list(deny)), AcpAsk(conn, session_id), False)


def set_mode(approver: InteractiveApprover, mode: str) -> None:
    approver.policy = MODES[mode]
    approver.yolo = mode == "yolo"
