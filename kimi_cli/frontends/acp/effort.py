"""Reasoning effort over ACP: a session config option (`effort`, category thought_level), low | high | max.

Modes stay what they are (approvals: ask, auto, yolo); effort is a separate select the editor shows beside
them. A model that takes no reasoning control offers no option at all.
"""

from __future__ import annotations

from typing import Any

from kimi_cli.llm.models import EFFORTS

OPTION_ID = "effort"
DESCRIPTIONS = {
    "low": "Answer fast; think briefly",
    "high": "Think before acting (the default in an editor)",
    "max": "Think as long as the task needs (slowest, most thorough)",
}


def effort_options(session: Any) -> list[Any]:
    """The config options of an ACP session: the effort select, or none for a model that takes none."""
    from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

    if session.runtime.info().reasoning == "none":
        return []
    current = session.agent.provider.effort or session.runtime.effort or "high"
    return [
        SessionConfigOptionSelect(
            id=OPTION_ID,
            name="Reasoning effort",
            description="How long the model thinks before it answers (sent as the model takes it)",
            category="thought_level",
            type="select",
            current_value=current,
            options=[SessionConfigSelectOption(value=e, name=e, description=DESCRIPTIONS[e]) for e in EFFORTS],
        )
    ]


def set_effort(session: Any, config_id: str, value: Any) -> Any:
    """session/set_config_option: later requests of this session carry the new effort, and the session keeps
    it (its meta, as the terminal's /effort does), so loading it again or `kimi -c` goes on with it."""
    from acp import RequestError
    from acp.schema import SetSessionConfigOptionResponse

    from kimi_cli.agent.toolbox import keep_effort

    if config_id != OPTION_ID or not effort_options(session):
        raise RequestError.invalid_params({"message": f"unknown config option {config_id!r}"})
    if value not in EFFORTS:
        raise RequestError.invalid_params({"message": f"effort must be one of {', '.join(EFFORTS)}, not {value!r}"})
    session.runtime.effort = value
    session.agent.provider.effort = value
    keep_effort(session.runtime, value)
    return SetSessionConfigOptionResponse(config_options=effort_options(session))
