"""One `SERVER` span per HTTP request, while traces are on (docs/TRACING.md).

A pure ASGI middleware, outermost: the span is named `{method} {route template}` once routing
has matched (`POST /api/messages`), carries the conventions' HTTP attributes and the response's
status, and continues a `traceparent` the client sent. It replaces FastAPI's own telemetry,
whose wrapped `send` and `receive` cost a post several times as much, and the instrumentation
package's middleware, which does the same.
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_PROPAGATOR = TraceContextTextMapPropagator()
_TRACEPARENT = b"traceparent"


class RequestSpans:
    def __init__(self, app: ASGIApp, tracer: trace.Tracer) -> None:
        self.app = app
        self._tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(("/assets/", "/favicon")):
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        parent = _parent(scope)
        span = self._tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": path,
                "url.scheme": scope.get("scheme", "http"),
            },
        )
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        status = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            # One call for the attributes the answer settles: each call takes the span's lock.
            settled: dict[str, str | int] = {"http.response.status_code": status}
            route = getattr(scope.get("route"), "path", None)
            if route:
                span.update_name(f"{method} {route}")
                settled["http.route"] = route
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))
                settled["error.type"] = str(status)
            span.set_attributes(settled)
            otel_context.detach(token)
            span.end()


def _parent(scope: Scope) -> otel_context.Context | None:
    """The caller's trace, when it sent a `traceparent`; a new one otherwise."""
    for name, value in scope.get("headers", ()):
        if name == _TRACEPARENT:
            return _PROPAGATOR.extract({"traceparent": value.decode("latin-1")})
    return None
