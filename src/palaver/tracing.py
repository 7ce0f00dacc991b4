"""Traces of agents' work in OpenTelemetry's GenAI conventions (docs/TRACING.md pins the
version), off unless the standard `OTEL_*` variables name an OTLP endpoint.

Off, every span helper here returns at its first line, and no instrumentation is installed: the
hot paths pay nothing. On, a reply is one `invoke_agent` trace (linked to the request or the
schedule that caused it) with its `chat`, `execute_tool`, `retrieval`, memory and `embeddings`
spans under it; a chain is one `invoke_workflow` trace with its replies under it. Work that
another node takes over (a reply stored as interrupted, a chain resumed) carries the trace on in
its stored row, so it stays one trace.

Message text, prompts and tool arguments go into spans only with
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; secrets never.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    from palaver.store.db import Database

log = logging.getLogger(__name__)

SEMCONV_VERSION = "1.41.0"
"""The GenAI semantic conventions the span names and attributes follow (docs/TRACING.md)."""

_SCOPE = "palaver"
TRACER = trace.get_tracer(
    _SCOPE, "0.1.0", schema_url=f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
)
_PROPAGATOR = TraceContextTextMapPropagator()
_enabled = False
_capture = False
_provider: TracerProvider | None = None

_OWNS_REPLIES: ContextVar[bool] = ContextVar("palaver_owns_replies", default=False)
"""Set inside a workflow or a tool call: a reply started there is a step of it, a child span,
not a trace of its own."""


class TracingError(RuntimeError):
    """The `OTEL_*` variables ask for something Palaver cannot do; said at start-up."""


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the variables ask for traces: an OTLP endpoint named, the SDK not disabled and
    the traces exporter not `none`."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return bool(endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def enabled() -> bool:
    return _enabled


def capture_content() -> bool:
    """The conventions' opt-in for message text, prompts, tool arguments and results."""
    return _capture


def check(environ: Mapping[str, str] = os.environ) -> None:
    """TracingError if the variables ask for traces in a way this install cannot send."""
    if not wanted(environ):
        return
    exporter_name = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if exporter_name != "otlp" or protocol != "http/protobuf":
        raise TracingError(
            "traces go out over OTLP with the protocol http/protobuf only, not "
            f"OTEL_TRACES_EXPORTER={exporter_name} with OTEL_EXPORTER_OTLP_PROTOCOL={protocol}"
        )


def start(node_id: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Set up the SDK from the variables, once per process; answers whether traces are on.

    The SDK reads the rest itself: `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`, the
    sampler (`OTEL_TRACES_SAMPLER`, `_ARG`), the batch processor (`OTEL_BSP_*`), the exporter's
    endpoint, headers, timeout and compression."""
    global _enabled, _capture, _provider
    if _provider is not None or not wanted(environ):
        return _enabled
    check(environ)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    ours = {SERVICE_INSTANCE_ID: node_id, **({} if named else {SERVICE_NAME: "palaver"})}
    provider = TracerProvider(resource=_hashed_once(Resource.create(ours)))
    provider.add_span_processor(_without_queries())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider = provider
    _enabled = True
    _capture = (
        environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
        == "true"
    )
    log.info("traces go to the OTLP endpoint the OTEL_* variables name")
    return True


def fastapi_options() -> dict[str, Any]:
    """`FastAPI(**fastapi_options())`: FastAPI's own telemetry (0.16x) off, whether traces are
    on or not; Palaver's `RequestSpans` makes the request spans instead, at a fraction of the
    cost (its wrapped `send` and `receive` cost a post more than the span). Older FastAPI has
    no such switch (`{}`)."""
    if "telemetry" not in inspect.signature(FastAPI).parameters:
        return {}
    off = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    return {"telemetry": {**off, "auto_configure": False}}


def instrument(
    app: FastAPI, db: Database, redis: bool, environ: Mapping[str, str] = os.environ
) -> list[str]:
    """Request spans (Palaver's own middleware) and the libraries' own spans from the
    `palaver[otel]` extra when installed (SQL, Redis, outgoing HTTP), less those
    `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS` names (`fastapi,sqlalchemy,redis,httpx`, or `*`).
    Answers the ones installed."""
    if not _enabled:
        return []
    disabled = _disabled(environ)
    wanted = {
        "fastapi": lambda: _fastapi(app),
        "sqlalchemy": lambda: _sqlalchemy(db),
        "httpx": _httpx,
        **({"redis": _redis} if redis else {}),
    }
    done: list[str] = []
    for name, install in wanted.items():
        if name in disabled or "*" in disabled:
            continue
        try:
            install()
        except ImportError:
            continue
        done.append(name)
    if done == ["fastapi"] and not disabled:
        log.info("the libraries' own spans need the extra: pip install 'palaver[otel]'")
    return done


def _disabled(environ: Mapping[str, str]) -> set[str]:
    names = environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "").split(",")
    return {name.strip() for name in names if name.strip()}


def _fastapi(app: FastAPI) -> None:
    """A `SERVER` span per request (`api/request_spans.py`), outermost."""
    from palaver.api.request_spans import RequestSpans

    app.add_middleware(RequestSpans, tracer=TRACER)


def _sqlalchemy(db: Database) -> None:
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

    # Its declared range ends before SQLAlchemy 2.1, which it instruments all the same
    # (tests/test_tracing_cluster.py sees its spans).
    SQLAlchemyInstrumentor().instrument(
        engines=db.engines, enable_commenter=False, skip_dep_check=True
    )


def _httpx() -> None:
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    HTTPXClientInstrumentor().instrument()


def _redis() -> None:
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    RedisInstrumentor().instrument()


def shutdown() -> None:
    """Export what is still buffered; blocking (the exporter's HTTP), so run off the loop."""
    if _provider is not None:
        _provider.force_flush()


@contextmanager
def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    root: bool = False,
    parent: str | None = None,
    owns_replies: bool = False,
) -> Iterator[Span]:
    """A span, current inside the block; an exception marks it failed (`error.type`).

    `root`: the start of a trace of its own, linked to the span that was current (the request
    or the schedule that caused it), unless it runs inside a workflow or a tool call.
    `parent`: a `traceparent` stored by the node that began the work (another node's, perhaps):
    the span continues that trace."""
    if not _enabled:
        yield INVALID_SPAN
        return
    context: otel_context.Context | None = None
    links: Sequence[Link] = ()
    if parent is not None:
        context = _PROPAGATOR.extract({"traceparent": parent})
    elif root and not _OWNS_REPLIES.get():
        current = trace.get_current_span().get_span_context()
        context = otel_context.Context()
        links = [Link(current)] if current.is_valid else []
    token = _OWNS_REPLIES.set(owns_replies) if owns_replies else None
    try:
        with TRACER.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=_clean(attributes),
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        ) as current_span:
            try:
                yield current_span
            except Exception as exc:
                failed(current_span, type(exc).__name__)
                raise
    finally:
        if token is not None:
            _OWNS_REPLIES.reset(token)


def begin(
    name: str, attributes: Mapping[str, Any] | None = None, *, parent: str | None = None
) -> Span:
    """A span begun now and ended by `within` in another task (a chain's drive): a root
    linked to the current span, or a child of a stored `traceparent`."""
    if not _enabled:
        return INVALID_SPAN
    if parent is not None:
        context, links = _PROPAGATOR.extract({"traceparent": parent}), []
    else:
        current = trace.get_current_span().get_span_context()
        context, links = otel_context.Context(), [Link(current)] if current.is_valid else []
    return TRACER.start_span(name, context=context, attributes=_clean(attributes), links=links)


@contextmanager
def within(target: Span) -> Iterator[None]:
    """Make a begun span current for the block, which owns the replies started in it, and
    end it after."""
    if not _enabled:
        yield
        return
    token = _OWNS_REPLIES.set(True)
    try:
        with trace.use_span(target, end_on_exit=True, record_exception=False):
            yield
    finally:
        _OWNS_REPLIES.reset(token)


def failed(target: Span, error_type: str, description: str | None = None) -> None:
    """Mark a span failed the conventions' way: `error.type` and an error status."""
    if target.is_recording():
        target.set_attribute("error.type", error_type)
        target.set_status(Status(StatusCode.ERROR, description))


def carrier(target: Span | None = None) -> str | None:
    """The `traceparent` of a span (the current one by default), to store beside work another
    node may take over; None when traces are off."""
    if not _enabled:
        return None
    found = target if target is not None else trace.get_current_span()
    if not found.get_span_context().is_valid:
        return None
    headers: dict[str, str] = {}
    _PROPAGATOR.inject(headers, context=trace.set_span_in_context(found))
    return headers.get("traceparent")


def content(value: Any) -> str | None:
    """Text for an opt-in content attribute: JSON unless already a string; None without the
    opt-in, so that callers can set it unconditionally."""
    if not (_enabled and _capture):
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


_URL_ATTRIBUTES = ("http.url", "http.target", "url.full")


def _hashed_once(resource: Resource) -> Resource:
    """The same resource, hashed once: the SDK's `Resource` hashes itself by writing its
    attributes as JSON, and the OTLP exporter hashes it for every span it sends (it groups
    spans by resource), a tenth of the export's time. A process's resource never changes."""
    from opentelemetry.sdk.resources import Resource

    class HashedOnce(Resource):
        def __init__(self, attributes: Any, schema_url: str | None) -> None:
            super().__init__(attributes, schema_url)
            self._hash = super().__hash__()

        def __hash__(self) -> int:
            return self._hash

    return HashedOnce(resource.attributes, resource.schema_url)


def _without_queries() -> SpanProcessor:
    """A processor that keeps a URL's path only on every span, whichever instrumentation made
    it: query strings carry what people wrote (a search's `q`, a web search's terms). Built
    here so that the SDK is imported only when traces are on."""
    from opentelemetry.sdk.trace import SpanProcessor

    class WithoutQueries(SpanProcessor):
        def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
            # Palaver's own spans carry a path, never a query (the request span included).
            attributes = span.attributes
            if not attributes or span.instrumentation_scope.name == _SCOPE:
                return
            for key in _URL_ATTRIBUTES:
                value = attributes.get(key)
                if isinstance(value, str) and "?" in value:
                    span.set_attribute(key, value.split("?", 1)[0])
            if attributes.get("url.query"):
                span.set_attribute("url.query", "")

    return WithoutQueries()


def _clean(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (attributes or {}).items() if v is not None}
