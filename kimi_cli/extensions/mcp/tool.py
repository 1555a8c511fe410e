"""McpTool: one tool of one MCP server, as the agent sees it. It runs on the host, so it asks first."""

from __future__ import annotations

import base64
import json
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from kimi_cli.approval.policy import CallApproval
from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.manager import McpError, McpManager
from kimi_cli.tools.base import Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.output import cap_text
from kimi_cli.tools.schema import convert_parameters

TEXT_CAP = 30_000
PIPELINE_MAX_BYTES = 40 * 1024 * 1024  # larger MCP images are not decoded (the caps leave them out)


class McpApprover(Protocol):
    async def review_mcp(self, tool_name: str, arguments: str, call: CallApproval | None = None) -> str | None: ...


class McpArgs(BaseModel):
    """Whatever the server's schema asks for: the server validates its own arguments."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArgs]):
    Params = McpArgs

    def __init__(
        self, manager: McpManager, server: str, config: ServerConfig, tool: Any, name: str, approver: McpApprover
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.description = (tool.description or f"{tool.name} from the MCP server {server}")[:2000]  # type: ignore[misc]
        self.manager = manager
        self.server = server
        self.tool_name = tool.name
        self.input_schema = tool.input_schema or {"type": "object", "properties": {}}
        # Converted once, here: a schema that cannot be converted leaves this one tool out (see wiring).
        self.parameters, self.schema_problem = convert_parameters(self.input_schema)
        self.approver = approver
        self.config = config
        self._facts = mcp_facts(getattr(tool, "annotations", None), tool.name in config.read_only)

    def schema(self) -> dict[str, Any]:
        params = self.parameters if self.parameters is not None else {"type": "object", "properties": {}}
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": params}}  # fmt: skip

    def declared(self) -> ToolFacts:
        return self._facts

    async def run(self, params: McpArgs, ctx: ToolContext) -> ToolResult:
        arguments = params.model_dump()
        refusal = await self.approver.review_mcp(self.name, json.dumps(arguments, ensure_ascii=False), ctx.approval())
        if refusal:
            raise ToolError(f"{self.name} was not run: {refusal}")
        try:
            result = await self.manager.call(self.server, self.tool_name, arguments)
        except McpError as exc:
            raise ToolError(str(exc)) from None
        import asyncio

        return await asyncio.to_thread(convert_result, result, ctx.image_limits)  # Pillow: off the loop


def sized_image(mime_type: str | None, data_b64: str, limits: Any) -> tuple[str | None, str]:
    """(mime, base64) of an MCP image after the pipeline: downscaled to the model's bound. Data that is not
    a picture the pipeline can read, or too big to decode, goes on unchanged to the caps, which judge it."""
    from kimi_cli.extensions.mcp.result_limits import decoded_size
    from kimi_cli.media.image import ImageError, ImageLimits
    from kimi_cli.media.pipeline import prepare

    if not data_b64 or decoded_size(data_b64) > PIPELINE_MAX_BYTES:
        return mime_type, data_b64
    try:
        prepared = prepare(base64.b64decode(data_b64, validate=False), limits or ImageLimits(), "MCP image")
    except (ImageError, ValueError):
        return mime_type, data_b64
    if not prepared.changed:
        return mime_type, data_b64
    return prepared.mime, base64.b64encode(prepared.data).decode("ascii")


def mcp_facts(annotations: Any, configured_read_only: bool) -> ToolFacts:
    """What an MCP tool may do, from the server's annotations where it gives them, else the worst case.
    The user's `read_only` list wins; readOnlyHint marks a read; openWorldHint false keeps it off the
    network. A tool that may write could write anything (paths unknown): checkpoints and change notes follow."""
    read_only = configured_read_only or getattr(annotations, "read_only_hint", None) is True
    network = getattr(annotations, "open_world_hint", None) is not False
    if read_only:
        return ToolFacts(reads=True, network=network)
    # destructiveHint false only says updates are additive: the call still changes something.
    return ToolFacts(reads=True, writes=True, network=network)


def convert_result(result: Any, limits: Any = None) -> ToolResult:
    """Text (capped), images as image parts (sized for the model by the image pipeline, then held to the
    result caps), structured content as JSON, isError as an error."""
    from kimi_cli.extensions.mcp.result_limits import ImageBudget

    texts: list[str] = []
    images: list[str] = []
    budget = ImageBudget()
    for part in getattr(result, "content", None) or []:
        kind = getattr(part, "type", "")
        if kind == "text":
            texts.append(part.text)
        elif kind == "image":  # sized for the model, then capped before anything keeps it (result_limits)
            mime, data = sized_image(part.mime_type, part.data or "", limits)
            url, note = budget.image_part(mime, data)
            if url:
                images.append(url)
            texts.append(note)
        elif kind == "audio":
            texts.append(f"[audio: {getattr(part, 'mime_type', '?')}, not shown]")
        elif kind == "resource_link":
            texts.append(f"[resource link: {getattr(part, 'name', '')} {getattr(part, 'uri', '')}]")
        elif kind == "resource":
            resource = part.resource
            texts.append(getattr(resource, "text", None) or f"[resource {getattr(resource, 'uri', '')}]")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        texts.append("structured content:\n" + json.dumps(structured, indent=1, ensure_ascii=False))
    output = cap_text("\n".join(texts) or "(no content)", TEXT_CAP)
    return ToolResult(output, is_error=bool(getattr(result, "is_error", False)), images=images)
