"""Folder trust over ACP: the terminal's start-up question becomes one `session/request_permission`.

ACP names a session in every request, so the question waits for the first prompt; a yes reopens the session
with the folder's settings applied (its MCP servers started, its endpoint used)."""

from __future__ import annotations

from typing import Any

from kimi_cli.hostsafe.trust import FolderTrust

TRUST, DECLINE = "trust_folder", "do_not_trust"


async def ask_folder_trust(conn: Any, session_id: str, state: FolderTrust) -> bool:
    """The folder's asks, the most dangerous first (host programs, endpoints), none cut silently: the title
    holds as many whole asks as fit and counts the rest, the details list them all. A list too long even for
    the details cannot be trusted from the editor (`kimi trust FOLDER` in a terminal shows it whole). The
    details name the file each ask comes from, as the terminal's box does."""
    import acp
    from acp.schema import PermissionOption, ToolCallUpdate

    from kimi_cli.frontends.questions import by_danger, join, listing, show
    from kimi_cli.hostsafe.trust_sources import source_of

    ordered = by_danger(state.asks)
    asks = [w.description for w in ordered]
    folder = show(str(state.folder), one_line=True).plain
    head = f"Trust {folder}? Its files ask kimi to ({len(asks)}, the most dangerous first): "
    title = head + join(asks, what="asks, listed in the details").plain
    details = listing([f"{w.description} (from {source_of(w.key, state.project)})" for w in ordered])  # each file
    body = details.plain
    options = [PermissionOption(option_id=DECLINE, name="Do not trust (its settings stay ignored)",
                                kind="reject_always")]  # fmt: skip
    if details.complete:
        options.insert(0, PermissionOption(option_id=TRUST, name="Trust this folder", kind="allow_always"))
    else:
        body += f"\nToo many to show here: review and trust them in a terminal with `kimi trust {folder}`."
    call = ToolCallUpdate(tool_call_id="trust-folder", title=title, kind="other", status="pending",
                          content=[acp.tool_content(acp.text_block(body))],
                          raw_input={"folder": str(state.folder), "asks": asks})  # fmt: skip
    response = await conn.request_permission(session_id=session_id, tool_call=call, options=options)
    return details.complete and getattr(response.outcome, "option_id", None) == TRUST
