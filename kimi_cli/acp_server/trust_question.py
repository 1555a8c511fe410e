"""Folder trust over ACP: the terminal's start-up question becomes one `session/request_permission`.

ACP names a session in every request, so the question waits for the first prompt; a yes reopens the session
with the folder's settings applied (its MCP servers started, its endpoint used)."""

from __future__ import annotations

from typing import Any

from kimi_cli.trust import FolderTrust

TRUST, DECLINE = "trust_folder", "do_not_trust"


async def ask_folder_trust(conn: Any, session_id: str, state: FolderTrust) -> bool:
    from acp.schema import PermissionOption, ToolCallUpdate

    options = [
        PermissionOption(option_id=TRUST, name="Trust this folder", kind="allow_always"),
        PermissionOption(option_id=DECLINE, name="Do not trust (its settings stay ignored)", kind="reject_always"),
    ]
    asks = "; ".join(state.summary())
    call = ToolCallUpdate(tool_call_id="trust-folder", title=f"Trust {state.folder}? Its .kimi asks to: {asks}"[:500],
                          kind="other", status="pending",
                          raw_input={"folder": str(state.folder), "asks": state.summary()})  # fmt: skip
    response = await conn.request_permission(session_id=session_id, tool_call=call, options=options)
    return getattr(response.outcome, "option_id", None) == TRUST
