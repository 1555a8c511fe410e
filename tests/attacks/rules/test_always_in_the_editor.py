"""`Always allow` over ACP names the safe shape (issue 40, finding 3): the rule kept from a harmless `sed -n 1p`
is `sed`, which runs `sed -n 2p` without asking but still asks for `sed -n '1e touch marker'` (a program) and
says why; a line whose own arguments write (`git log --output=...`) is offered no `always` at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
from acp.schema import AllowedOutcome, RequestPermissionResponse

from acp_support import RecordingClient, run
from scripted_server import ScriptedModelServer
from support import tool_call


class AlwaysWhenOffered(RecordingClient):
    """Picks `allow_always` where it is offered, else rejects; keeps each request's options and details."""

    def __init__(self) -> None:
        super().__init__("reject")
        self.options: list[dict[str, str]] = []
        self.details: list[str] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permissions.append(tool_call)
        self.options.append({o.option_id: o.name for o in options})
        self.details.append("".join(c.content.text for c in tool_call.content or [] if c.type == "content"))
        chosen = "allow_always" if any(o.option_id == "allow_always" for o in options) else "reject"
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=chosen, outcome="selected"))


def test_always_in_the_editor_keeps_a_rule_that_still_asks_for_what_writes_or_runs(
    repo: Path, env: dict, tmp_path: Path, server: ScriptedModelServer
) -> None:
    marker, outside = tmp_path / "marker", tmp_path / "outside-log"
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "sed -n 1p README.md"}, "s1")]},
        {"tool_calls": [tool_call("Shell", {"command": "sed -n 2p calc.py"}, "s2")]},
        {"tool_calls": [tool_call("Shell", {"command": f"sed -n '1e touch {marker}' README.md"}, "s3")]},
        {"tool_calls": [tool_call("Shell", {"command": f"git log --output={outside} -1"}, "s4")]},
        {"text": "ok"},
    )
    client = AlwaysWhenOffered()

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="ask")
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"
    assert len(client.permissions) == 3  # sed -n 2p ran under the kept rule, unasked
    assert client.options[0]["allow_always"] == "Always allow `sed`"
    assert "allow_always" not in client.options[1] and "runs a program" in client.details[1]
    assert "allow_always" not in client.options[2]  # no rule is safe to keep from a line that writes
    assert not marker.exists() and not outside.exists()
