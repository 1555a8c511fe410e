"""A loopback OTLP/HTTP receiver for tests: it decodes what an exporter POSTs (protobuf, opentelemetry-proto)
to /v1/traces and /v1/metrics and keeps the spans and metric points, with the headers each request came with."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


@dataclass
class ReceivedSpan:
    name: str
    span_id: str
    parent_id: str
    trace_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status: int
    start_ns: int
    end_ns: int
    resource: dict[str, Any]


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    metrics: dict[str, list[tuple[float, dict[str, Any]]]] = field(default_factory=dict)
    headers: list[dict[str, str]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpReceiver:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                owner.raw.append(body)
                if self.path.endswith("/v1/traces"):
                    owner._traces(body)
                    reply = ExportTraceServiceResponse().SerializeToString()
                elif self.path.endswith("/v1/metrics"):
                    owner._metrics(body)
                    reply = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(ReceivedSpan(
                        span.name, span.span_id.hex(), span.parent_span_id.hex(), span.trace_id.hex(),
                        {a.key: _value(a.value) for a in span.attributes},
                        [(e.name, {a.key: _value(a.value) for a in e.attributes}) for e in span.events],
                        span.status.code, span.start_time_unix_nano, span.end_time_unix_nano, resource,
                    ))  # fmt: skip

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in request.resource_metrics:
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    points = getattr(metric, kind).data_points if kind in ("sum", "gauge") else []
                    for point in points:
                        value = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
                        attrs = {a.key: _value(a.value) for a in point.attributes}
                        self.metrics.setdefault(metric.name, []).append((float(value), attrs))

    def named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]

    def total(self, metric: str, **match: Any) -> float:
        """A cumulative counter's latest value per attribute set, summed over the sets that match."""
        latest: dict[tuple[tuple[str, Any], ...], float] = {}
        for value, attrs in self.metrics.get(metric, []):
            if all(attrs.get(k) == v for k, v in match.items()):
                latest[tuple(sorted(attrs.items()))] = value
        return sum(latest.values())
