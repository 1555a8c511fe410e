"""The JSON export: the export model as one object, for scripts (`kimi export ID --format json | jq`).

Shape: {"format": "kimi-session-export", "version": 1, "id", "title", "workspace", "model", "provider",
"created", "updated", "status", "git", "rates", "turns": [{"number", "prompt", "time", "notes", "end",
"steps": [{"number", "turn", "text", "reasoning", "calls": [...], "usage": {"uncached", "cached",
"output"}, "cost_usd", "model_ms", "tools_ms", "retries", "notices", "errors", "approvals", "compaction",
"finished"}]}], "skipped_lines", "subagent_runs", "totals"}.
"""

from __future__ import annotations

from kimi_cli.session.export.model import SessionExport
from kimi_cli.util.jsonsafe import dumps

FORMAT = "kimi-session-export"
VERSION = 1


def render_json(export: SessionExport) -> str:
    return dumps({"format": FORMAT, "version": VERSION, **export.as_dict()}, indent=1) + "\n"
