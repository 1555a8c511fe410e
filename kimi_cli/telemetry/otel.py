"""The OpenTelemetry exporter of a session: a span per session, turn, model request and tool call, and metrics
for tokens, cost, tool failures and retries, sent over OTLP/HTTP (protobuf) by the SDK's batch processors.

Span tree: `kimi.session` > `kimi.turn` > `kimi.model_request` (one per step) and `kimi.tool_call` (one per
call). Text (the prompt, answers, tool arguments and output; reasoning never) is attached only with
`log_prompts = true`, and then through the one redactor (kimi_cli.util.redact). Nothing here may stop the
session: every event is handled defensively, and a collector that is down only costs the exit a bounded
flush.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode

from kimi_cli import __version__
from kimi_cli.telemetry import ExportSettings, SessionFacts
from kimi_cli.util.logs import get_logger
from kimi_cli.util.redact import redact

EXPORT_TIMEOUT_S = 5.0  # one POST to the collector
FLUSH_MS = 3000  # what a collector that is down may add to the exit
METRICS_EVERY_MS = 30_000
TEXT_CHARS = 8192  # an attribute of text is cut here (collectors refuse huge attributes)
FAILED = ("error", "provider_unavailable", "loop_detected")
log = get_logger("telemetry")


class OtelSession:
    """Observes one runtime's events (Agent.observers); `switch` moves to another session, `close` ends it."""

    def __init__(self, settings: ExportSettings, facts: SessionFacts) -> None:
        self.settings = settings
        self.facts = facts
        for note in settings.notes:
            log.warning(note)
        resource = Resource.create({"service.name": "kimi", "service.version": __version__})
        headers = dict(settings.headers)
        self.tracing = TracerProvider(resource=resource)
        if settings.traces_url:
            exporter = OTLPSpanExporter(endpoint=settings.traces_url, headers=headers, timeout=EXPORT_TIMEOUT_S)
            self.tracing.add_span_processor(BatchSpanProcessor(exporter))
        readers = []
        if settings.metrics_url:
            metric_exporter = OTLPMetricExporter(endpoint=settings.metrics_url, headers=headers,
                                                 timeout=EXPORT_TIMEOUT_S)  # fmt: skip
            readers.append(PeriodicExportingMetricReader(metric_exporter, export_interval_millis=METRICS_EVERY_MS))
        self.metering = MeterProvider(resource=resource, metric_readers=readers)
        self.tracer = self.tracing.get_tracer("kimi_cli")
        meter = self.metering.get_meter("kimi_cli")
        self.tokens = meter.create_counter("kimi.tokens", unit="{token}", description="tokens by kind")
        self.cost = meter.create_counter("kimi.cost", unit="USD", description="what the requests cost")
        self.tool_calls = meter.create_counter("kimi.tool.calls", unit="{call}", description="tool calls")
        self.tool_failures = meter.create_counter("kimi.tool.failures", unit="{call}", description="failed calls")
        self.retries = meter.create_counter("kimi.retries", unit="{retry}", description="model request retries")
        self.session: Span | None = None
        self.turn: Span | None = None
        self.request: Span | None = None
        self.tools: dict[str, Span] = {}
        self.approved: dict[str, str] = {}
        self.turns = 0
        self.request_retries = 0
        self.text: list[str] = []
        self.last_text = ""
        self._start_session(facts.session_id, facts.resumed)

    # --- the session --------------------------------------------------------------------------------------

    def _start_session(self, session_id: str, resumed: bool) -> None:
        self.facts.session_id = session_id
        self.session = self.tracer.start_span("kimi.session", attributes={
            "session.id": session_id, "kimi.session.resumed": resumed, "kimi.provider": self.facts.provider,
            "gen_ai.request.model": self.facts.model(),
        })  # fmt: skip
        self.turns = 0

    def switch(self, session_id: str, resumed: bool) -> None:
        self._end_session()
        self._start_session(session_id, resumed)

    def _end_session(self) -> None:
        self._end_turn("closed", 0, 0, "")
        if self.session is not None:
            self.session.set_attribute("kimi.turns", self.turns)
            self.session.end()
            self.session = None

    def close(self) -> None:
        """End the session's spans and send what is left, within FLUSH_MS."""
        try:
            self._end_session()
            self.tracing.force_flush(FLUSH_MS)
            self.metering.force_flush(FLUSH_MS)
        except Exception:
            log.debug("telemetry flush failed", exc_info=True)
        finally:
            self.tracing.shutdown()
            self.metering.shutdown(timeout_millis=FLUSH_MS)

    # --- events ---------------------------------------------------------------------------------------------

    def __call__(self, event: Any) -> None:
        handler = getattr(self, "_on_" + str(getattr(event, "type", "")), None)
        if handler is not None:
            handler(event)

    def _on_turn_begin(self, event: Any) -> None:
        self._end_turn("closed", 0, 0, "")
        self.turns += 1
        attributes: dict[str, Any] = {"kimi.turn": self.turns, "kimi.prompt.length": len(event.prompt)}
        if self.settings.log_prompts:
            attributes["kimi.prompt"] = _text(event.prompt)
        self.turn = self.tracer.start_span("kimi.turn", context=self._under(self.session), attributes=attributes)
        self.last_text = ""

    def _on_turn_end(self, event: Any) -> None:
        self._end_turn(event.reason, event.exit_code, event.steps, event.message)

    def _end_turn(self, reason: str, exit_code: int, steps: int, message: str) -> None:
        self._end_request()
        for call_id in list(self.tools):
            self._end_tool(call_id, None)
        if self.turn is None:
            return
        self.turn.set_attributes({"kimi.reason": reason, "kimi.exit_code": exit_code, "kimi.steps": steps})
        if self.settings.log_prompts and self.last_text:
            self.turn.set_attribute("kimi.response", _text(self.last_text))
        if reason in FAILED:
            self.turn.set_status(Status(StatusCode.ERROR, redact(message)[:500]))
        self.turn.end()
        self.turn = None

    def _on_step_begin(self, event: Any) -> None:
        self._end_request()
        self.request_retries = 0
        self.text = []
        self.request = self.tracer.start_span("kimi.model_request", context=self._under(self.turn), attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": self.facts.model(), "kimi.step": event.step,
        })  # fmt: skip

    def _on_text_delta(self, event: Any) -> None:
        if self.settings.log_prompts and self.request is not None:
            self.text.append(event.text)

    def _on_retry(self, event: Any) -> None:
        self.request_retries += 1
        self.retries.add(1, {"gen_ai.request.model": self.facts.model()})
        if self.request is not None:
            self.request.add_event("retry", {"kimi.attempt": event.attempt, "kimi.wait_s": event.wait_s,
                                             "kimi.error": redact(event.error)[:500]})  # fmt: skip

    def _on_usage(self, event: Any) -> None:
        usage = {k: int(v or 0) for k, v in event.usage.items()}
        prompt, cached = usage.get("prompt_tokens", 0), usage.get("cached_tokens", 0)
        output = usage.get("completion_tokens", 0)
        cost = float(self.facts.price(usage))
        model = self.facts.model()
        kinds = (("input", prompt - min(cached, prompt)), ("cached", min(cached, prompt)), ("output", output))
        for kind, count in kinds:
            self.tokens.add(count, {"kimi.token.type": kind, "gen_ai.request.model": model})
        self.cost.add(cost, {"gen_ai.request.model": model})
        if self.request is None:
            return
        self.request.set_attributes({
            "gen_ai.usage.input_tokens": prompt, "gen_ai.usage.cache_read.input_tokens": cached,
            "gen_ai.usage.output_tokens": output, "kimi.cost_usd": cost, "kimi.retries": self.request_retries,
        })  # fmt: skip
        text = "".join(self.text)
        if text:
            self.last_text = text
            if self.settings.log_prompts:
                self.request.set_attribute("kimi.response", _text(text))
        self._end_request()

    def _end_request(self) -> None:
        if self.request is not None:
            self.request.end()
            self.request = None

    def _on_tool_call(self, event: Any) -> None:
        attributes: dict[str, Any] = {"gen_ai.tool.name": event.name, "gen_ai.tool.call.id": event.id,
                                      "kimi.approval": "auto"}  # an approval event says otherwise  # fmt: skip
        if self.settings.log_prompts:
            attributes["kimi.tool.arguments"] = _text(event.arguments)
        self.tools[event.id] = self.tracer.start_span("kimi.tool_call", context=self._under(self.turn),
                                                      attributes=attributes)  # fmt: skip

    def _on_approval(self, event: Any) -> None:
        span = self.tools.get(event.call_id)
        if span is None:
            return
        span.set_attribute("kimi.approval", event.outcome)
        if event.answer:
            span.set_attribute("kimi.approval.answer", event.answer)
        span.add_event("approval", {"kimi.approval.kind": event.kind, "kimi.approval.outcome": event.outcome})

    def _on_tool_result(self, event: Any) -> None:
        self.tool_calls.add(1, {"gen_ai.tool.name": event.name})
        if event.is_error:
            self.tool_failures.add(1, {"gen_ai.tool.name": event.name})
        self._end_tool(event.id, event)

    def _end_tool(self, call_id: str, result: Any) -> None:
        span = self.tools.pop(call_id, None)
        if span is None:
            return
        if result is None:
            span.set_attribute("kimi.tool.unfinished", True)
            span.end()
            return
        attributes: dict[str, Any] = {"kimi.tool.is_error": bool(result.is_error),
                                      "kimi.tool.duration_ms": float(result.duration_ms)}  # fmt: skip
        display = result.display if isinstance(result.display, dict) else {}
        if isinstance(display.get("exit_code"), int):
            attributes["kimi.tool.exit_code"] = display["exit_code"]
        if self.settings.log_prompts:
            attributes["kimi.tool.output"] = _text(result.output)
        span.set_attributes(attributes)
        if result.is_error:
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def _on_compacted(self, event: Any) -> None:
        if self.turn is not None:
            self.turn.add_event("compaction", {"kimi.tokens_before": event.tokens_before,
                                               "kimi.messages_after": event.messages_after})  # fmt: skip

    def _on_error(self, event: Any) -> None:
        if self.turn is not None:
            self.turn.add_event("error", {"kimi.message": redact(event.message)[:500]})

    def _under(self, parent: Span | None) -> Any:
        return trace.set_span_in_context(parent) if parent is not None else None


def _text(value: str) -> str:
    return redact(value)[:TEXT_CHARS]
