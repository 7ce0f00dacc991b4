"""Domain errors and the handlers that turn every failure into `{"error": "..."}`."""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.constants import REF_PREFIX
from fastapi.openapi.models import Schema
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from palaver import strict_json
from palaver.ids import new_id
from palaver.llm.base import ProviderError
from palaver.store.faults import Fault, describe, fault_of

log = logging.getLogger(__name__)


class DomainError(Exception):
    status = 400

    def __init__(
        self, message: str, headers: dict[str, str] | None = None, field: str | None = None
    ) -> None:
        """`field`: the body field the error is about, answered as `field` so a form can show
        the message beside it."""
        super().__init__(message)
        self.message = message
        self.headers = headers or {}
        self.field = field


class Invalid(DomainError):
    status = 400


class Unauthenticated(DomainError):
    status = 401


class Forbidden(DomainError):
    status = 403


class NotFound(DomainError):
    status = 404


class Conflict(DomainError):
    status = 409


class RequestTimeout(DomainError):
    status = 408


class TooLarge(DomainError):
    status = 413


class UnsupportedMedia(DomainError):
    status = 415


class RateLimited(DomainError):
    status = 429


class Unavailable(DomainError):
    """The database cannot be reached for now (a PostgreSQL restart): try again shortly."""

    status = 503


class InsufficientStorage(DomainError):
    """The disk is full: nothing of the request was stored."""

    status = 507


RETRY_AFTER_SECONDS = 2
"""What a 503 asks a client to wait: about as long as a PostgreSQL restart takes."""


def storage_fault(exc: BaseException) -> DomainError | None:
    """The answer for a storage fault (see `palaver.store.faults`), or None for a bug."""
    fault = fault_of(exc)
    if fault is Fault.UNAVAILABLE:
        return Unavailable(
            "The database is unavailable for a moment; try again shortly.",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    if fault is Fault.FULL:
        return InsufficientStorage("The server's disk is full; nothing was stored.")
    return None


_STATUS_TEXT = {
    400: "The request is malformed.",
    401: "You are not logged in.",
    403: "You may not do that.",
    404: "There is nothing at this address.",
    405: "This method is not allowed here.",
    408: "The request took too long to arrive.",
    413: "The request is too large.",
    415: "This kind of content is not supported.",
    429: "Too many requests; slow down.",
    503: "The service is unavailable for a moment; try again shortly.",
    507: "The server's disk is full; nothing was stored.",
}


def _field_of(exc: RequestValidationError) -> str | None:
    """The body field a validation failure is about (its top-level name), if any."""
    errors = exc.errors()
    if not errors or errors[0].get("type") == "json_invalid":
        return None
    loc = list(errors[0].get("loc", ()))
    if not loc or loc[0] != "body" or len(loc) < 2:
        return None
    return str(loc[1])


def _describe_validation(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "The request is malformed."
    first = errors[0]
    kind = first.get("type", "")
    if kind == "json_invalid":
        reason = str(first.get("ctx", {}).get("error", ""))
        if strict_json.is_refusal(reason):
            return f"The request body is not valid JSON: {reason}."
        return "The request body is not valid JSON."
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    where = ".".join(loc)
    if kind == "extra_forbidden":
        return f"Unknown field '{where}'."
    if kind == "missing":
        return f"The field '{where}' is required." if where else "A request body is required."
    msg = str(first.get("msg", "is invalid")).rstrip(".")
    return f"Invalid '{where}': {msg}." if where else f"Invalid request: {msg}."


_FAULT_RESPONSES: dict[str, dict[str, Any]] = {
    "503": {
        "description": "The database is unavailable for a moment (a restart); try again after "
        "Retry-After seconds",
        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
    },
    "507": {"description": "The server's disk is full; nothing was stored"},
}


class ErrorBody(BaseModel):
    error: str
    requestId: str | None = None
    field: str | None = None
    """The body field the error is about, when it is about one (for forms)."""


JSON = "application/json"


def error_body_ref() -> dict[str, str]:
    """Where the OpenAPI document's error answers find their body's schema."""
    return {"$ref": f"{REF_PREFIX}{ErrorBody.__name__}"}


def _error_body_schema() -> dict[str, Any]:
    """`ErrorBody`'s schema as FastAPI writes a response model's into the document."""
    schema = ErrorBody.model_json_schema(
        ref_template=f"{REF_PREFIX}{{model}}", mode="serialization"
    )
    assert "$defs" not in schema, "ErrorBody's own schema only: it names no other model"
    encoded: dict[str, Any] = jsonable_encoder(Schema(**schema), by_alias=True, exclude_none=True)
    return encoded


def _document_statuses(app: FastAPI) -> None:
    """Validation failures answer 400 (documented per route), so the schema must not promise
    the 422 that FastAPI lists by default. Storage faults can meet any route: every one that
    documents its errors lists 503, and every one but a GET 507 (a write, a session or an
    audit row)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            documents_errors = False
            for operations in schema.get("paths", {}).values():
                for method, operation in operations.items():
                    responses = operation.get("responses", {})
                    responses.pop("422", None)
                    error_body = responses.get("500", {}).get("content")
                    if error_body is None:
                        continue
                    documents_errors = True
                    for code, entry in _FAULT_RESPONSES.items():
                        if code == "503" or method != "get":
                            responses[code] = {**entry, "content": error_body}
            components = schema.get("components", {}).get("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
            if documents_errors:
                # In the place FastAPI gives the schemas of the models it was handed: by name.
                components[ErrorBody.__name__] = _error_body_schema()
                schema.setdefault("components", {})["schemas"] = dict(sorted(components.items()))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def allowed_methods(app: FastAPI, request: Request) -> str:
    """Every method the API documents at this path: Starlette names only the first route's."""
    path = request.url.path
    methods: set[str] = set()
    for template, operations in app.openapi().get("paths", {}).items():
        if _template_regex(template).fullmatch(path):
            methods.update(method.upper() for method in operations)
    return ", ".join(sorted(methods))


@functools.cache
def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{[^}]+\}", template)
    return re.compile("[^/]+".join(re.escape(part) for part in parts))


def install_error_handlers(app: FastAPI) -> None:
    _document_statuses(app)

    @app.exception_handler(DomainError)
    async def domain_error(_: Request, exc: DomainError) -> JSONResponse:
        body = (
            {"error": exc.message}
            if exc.field is None
            else {"error": exc.message, "field": exc.field}
        )
        return JSONResponse(body, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(ProviderError)
    async def provider_error(_: Request, exc: ProviderError) -> JSONResponse:
        """A model or embedding endpoint failed: its reason is readable and safe to show; the
        owner's log gets where and why."""
        log.warning("%s", exc.detail)
        return JSONResponse({"error": str(exc)}, status_code=502)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        body = {"error": _describe_validation(exc)}
        field = _field_of(exc)
        if field is not None:
            body["field"] = field
        return JSONResponse(body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        text = _STATUS_TEXT.get(exc.status_code, "The request failed.")
        if isinstance(exc.detail, str) and exc.status_code not in (404, 405):
            text = exc.detail
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(app, request)
        return JSONResponse({"error": text}, status_code=exc.status_code, headers=headers)

    async def fault(request: Request, exc: Exception) -> JSONResponse:
        """A storage fault answers 503 or 507 and is logged as a warning, without the statement
        or its parameters; anything else goes on to `server_error` (a 500 with a request id)."""
        answer = storage_fault(exc)
        if answer is None:
            raise exc
        method = request.scope.get("method", "WEBSOCKET")
        log.warning("%s on %s %s: %s", answer.message, method, request.url.path, describe(exc))
        return await domain_error(request, answer)

    for kind in (DBAPIError, PoolTimeout, OSError):
        app.add_exception_handler(kind, fault)

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        request_id = new_id("req")
        log.error(
            "unhandled error %s on %s %s",
            request_id,
            request.method,
            request.url.path,
            exc_info=exc,
        )
        return JSONResponse(
            {"error": "The server failed to handle this request.", "requestId": request_id},
            status_code=500,
        )
