"""tools/list, one tool at a time: a tool the protocol does not allow is left out, never its whole server.

The SDK's `list_tools` validates the whole answer as one model, so a single tool with an array-rooted,
missing or null `inputSchema` (real servers ship such tools) fails the listing and with it every tool of
that server. When that happens the page is asked for again as plain JSON and each tool is validated on its
own; the ones that fail are returned with the reason, for one notice each. The tools kept are handed to
the session as its own listing would be (output-schema validators, the 2026 header rules), so calls need
no second listing. The normal case (every tool valid) stays on the SDK's public `list_tools`.
"""

from __future__ import annotations

from typing import Any

MAX_PAGES = 50
MAX_REJECTED = 100  # kept by name; past it only counted (a server may send thousands on every page)


async def list_tools(session: Any) -> tuple[list[Any], list[tuple[str, str]]]:
    """(the server's valid tools, [(tool name, why it was left out)])."""
    from mcp import types
    from pydantic import ValidationError

    tools: list[Any] = []
    rejected: list[tuple[str, str]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        try:
            listing = await session.list_tools(params=params)  # every tool valid: the SDK's own path
        except ValidationError as whole:
            answer = await _unchecked_page(session, types.ListToolsRequest(params=params), whole)
            listing = _one_by_one(session, answer, rejected, first_page=cursor is None)
        tools += listing.tools
        cursor = listing.next_cursor
        if not cursor:
            break
    if len(rejected) > MAX_REJECTED:
        extra = len(rejected) - MAX_REJECTED
        rejected = [*rejected[:MAX_REJECTED], (f"{extra} more tools", "not valid MCP either; not listed one by one")]
    return tools, rejected


async def _unchecked_page(session: Any, request: Any, whole: Exception) -> dict[str, Any]:
    """The page as the server sent it, past the SDK's check of the whole answer (its request path, minus
    that check). An SDK without these parts gets the original error: the server then fails as before."""
    dispatcher, stamp = getattr(session, "_dispatcher", None), getattr(session, "_stamp", None)
    if dispatcher is None or stamp is None:
        raise whole
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    stamp(data, opts)
    answer = await dispatcher.send_raw_request(data["method"], data.get("params"), opts)
    if not isinstance(answer, dict) or not isinstance(answer.get("tools"), list):
        raise ValueError("the server's tools/list answer holds no list of tools")
    return answer


def _one_by_one(session: Any, answer: dict[str, Any], rejected: list[tuple[str, str]], first_page: bool) -> Any:
    from mcp import types
    from pydantic import ValidationError

    page: list[Any] = []
    for item in answer["tools"]:
        try:
            page.append(types.Tool.model_validate(item, by_name=False))
        except ValidationError as exc:
            rejected.append((_name_of(item), _first_problem(exc) if len(rejected) < MAX_REJECTED else ""))
    after = answer.get("nextCursor")
    listing = types.ListToolsResult(tools=page, next_cursor=after if isinstance(after, str) and after else None)
    absorb = getattr(session, "_absorb_tool_listing", None)  # what the SDK's list_tools does with a listing
    if absorb is not None:
        listing = absorb(listing, complete=first_page and listing.next_cursor is None)
    return listing


def _name_of(item: object) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return name[:120] if isinstance(name, str) and name else "(a tool without a name)"


def _first_problem(exc: Any) -> str:
    """`inputSchema.type: Input should be 'object'`: where and what, from the first validation error."""
    errors = exc.errors(include_url=False)
    if not errors:
        return "not a valid tool description"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}" if where else f"{first.get('msg', 'invalid')}{more}"
