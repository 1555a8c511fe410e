"""OpenTelemetry for a session: spans and metrics over OTLP/HTTP, off unless asked for.

Switched on by `[telemetry] otlp_endpoint` (a collector's base URL) or the standard variables
(OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _METRICS_ENDPOINT); OTEL_SDK_DISABLED=true
turns it off. This module reads only settings: the SDK is imported by kimi_cli.telemetry.otel, and only when
telemetry is on, so a start without it (and `kimi --help`) imports nothing of OpenTelemetry.

The exporter is an observer of the agent's events (kimi_cli.agent.events: Agent.observers), the same events
the front ends render, plus the turn boundaries; the session's own start and end come from the runtime.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

HTTP_PROTOBUF = "http/protobuf"


class ExportSettings:
    """Where spans and metrics go, with which headers, and whether text may go with them. (Plain classes
    here: this module is imported on every start, telemetry on or off.)"""

    def __init__(self, traces_url: str, metrics_url: str, headers: dict[str, str] | None = None,
                 log_prompts: bool = False, notes: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.traces_url = traces_url
        self.metrics_url = metrics_url
        self.headers = dict(headers or {})
        self.log_prompts = log_prompts
        self.notes = notes  # what the user should hear once (a protocol kimi does not speak)


class SessionFacts:
    """What the exporter may ask the session: its id and model, and the price of a request's usage."""

    def __init__(self, session_id: str, resumed: bool, provider: str, model: Callable[[], str],
                 price: Callable[[Mapping[str, int]], float]) -> None:  # fmt: skip
        self.session_id = session_id
        self.resumed = resumed
        self.provider = provider
        self.model = model
        self.price = price


if TYPE_CHECKING:

    class SessionTelemetry(Protocol):
        def __call__(self, event: Any) -> None: ...
        def switch(self, session_id: str, resumed: bool) -> None: ...
        def close(self) -> None: ...


def export_settings(section: Any, environ: Mapping[str, str] | None = None) -> ExportSettings | None:
    """The export to make, or None when telemetry is off. `section` is the config's [telemetry]; the
    OTEL_* variables of the user's own environment fill what it leaves unset."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    base = (getattr(section, "otlp_endpoint", None) or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")).strip()
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or _signal_url(base, "traces")
    metrics = env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip() or _signal_url(base, "metrics")
    if not (traces or metrics):
        return None
    headers = parse_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
    headers.update(dict(getattr(section, "otlp_headers", None) or {}))
    notes = []
    protocol = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
    if protocol and protocol != HTTP_PROTOBUF:
        notes.append(f"telemetry: kimi exports OTLP over {HTTP_PROTOBUF} only, not {protocol}; sending {HTTP_PROTOBUF}")
    return ExportSettings(traces, metrics, headers, bool(getattr(section, "log_prompts", False)), tuple(notes))


def _signal_url(base: str, signal: str) -> str:
    """The OTLP/HTTP rule: a base endpoint gets /v1/<signal> appended."""
    return f"{base.rstrip('/')}/v1/{signal}" if base else ""


def parse_headers(text: str) -> dict[str, str]:
    """`key1=value1,key2=value2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS writes them."""
    from urllib.parse import unquote

    headers: dict[str, str] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if eq and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers


def open_telemetry(
    section: Any, facts: SessionFacts, environ: Mapping[str, str] | None = None
) -> SessionTelemetry | None:
    """The session's exporter, or None when telemetry is off (nothing of OpenTelemetry is imported then)."""
    settings = export_settings(section, environ)
    if settings is None:
        return None
    from kimi_cli.util.redact import register_secret

    for value in settings.headers.values():  # an auth header never shows in a log line
        register_secret(value)
    try:
        from kimi_cli.telemetry.otel import OtelSession
    except ImportError as exc:  # a broken install: the session runs without telemetry, and says so
        from kimi_cli.util.logs import get_logger

        get_logger("telemetry").warning("telemetry is configured but OpenTelemetry cannot load: %s", exc)
        return None
    return OtelSession(settings, facts)
