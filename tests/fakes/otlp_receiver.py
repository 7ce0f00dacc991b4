"""An OTLP/HTTP trace receiver on loopback: what an OpenTelemetry collector would be sent.

    with OtlpReceiver() as receiver:
        env = receiver.env()                 # OTEL_* variables for a Palaver server
        ...
        receiver.wait_for(lambda spans: any(s.name == "chat gpt-test" for s in spans))

`POST /v1/traces` bodies are decoded with OpenTelemetry's own protobuf classes
(`opentelemetry-proto`), gzip or not, and kept as `Span`s with their resource's attributes.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    links: list[tuple[str, str]] = field(default_factory=list)
    """(trace id, span id) of each linked span."""
    status_code: int = 0
    events: list[str] = field(default_factory=list)
    scope: str = ""
    """The instrumentation that made it: `palaver`, or a library's instrumentation."""


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self, **more: str) -> dict[str, str]:
        """The variables that point a server's traces here, exported within a tenth of a second."""
        return {
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": "palaver-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            **more,
        }

    def _take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[Span] = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    found.append(
                        Span(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            kind=KINDS.get(s.kind, str(s.kind)),
                            attributes=_attributes(s.attributes),
                            resource=resource,
                            links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                            status_code=s.status.code,
                            events=[e.name for e in s.events],
                            scope=scope_spans.scope.name,
                        )
                    )
        with self._lock:
            self.bodies.append(body)
            self.spans.extend(found)

    def snapshot(self) -> list[Span]:
        with self._lock:
            return list(self.spans)

    def wait_for(
        self, predicate: Callable[[list[Span]], bool], timeout: float = 15, what: str = "spans"
    ) -> list[Span]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.snapshot()
            if predicate(spans):
                return spans
            time.sleep(0.05)
        names = sorted({s.name for s in self.snapshot()})
        raise AssertionError(f"no {what} within {timeout} s; received: {names}")

    def trace(self, trace_id: str) -> list[Span]:
        return [s for s in self.snapshot() if s.trace_id == trace_id]

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()
            self.bodies.clear()

    def __enter__(self) -> OtlpReceiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def children(spans: list[Span], parent: Span) -> list[Span]:
    return [s for s in spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]


def tree(spans: list[Span], root: Span, palaver_only: bool = True) -> Iterator[tuple[int, Span]]:
    """The spans under `root`, depth first, with their depth; the libraries' own (SQL, HTTP
    client) left out unless asked for."""
    stack = [(0, root)]
    while stack:
        depth, span = stack.pop()
        yield depth, span
        below = children(spans, span)
        if palaver_only:
            below = [s for s in below if s.scope == "palaver"]
        stack.extend((depth + 1, s) for s in reversed(below))


def _attributes(values: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in values if isinstance(kv, KeyValue)}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None
