"""kimi's Python SDK (docs/sdk.md): Kimi (async), KimiSync, and the events of kimi_cli.sdk.events."""

from __future__ import annotations

from kimi_cli.extensions import hand_down_to_trust
from kimi_cli.frontends.headless.stream import ApprovalRequest
from kimi_cli.sdk.client import ApprovalCallback, Kimi
from kimi_cli.sdk.events import EVENT_SCHEMA_VERSION, Event, Result, parse_event
from kimi_cli.sdk.sync import KimiSync

hand_down_to_trust()  # a program that imports the SDK never runs kimi_cli.entry: folder trust needs them as there

__all__ = ["EVENT_SCHEMA_VERSION", "ApprovalCallback", "ApprovalRequest", "Event", "Kimi", "KimiSync", "Result",
           "parse_event"]  # fmt: skip
