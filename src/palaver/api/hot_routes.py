"""The two hottest routes, reading and posting messages, on a thin path ahead of FastAPI's.

FastAPI's dependency solving and parameter validation cost more CPU than these routes' own
work (issue 26, docs/NOTES.md "Hot paths and caches"). This route answers a well-formed
`GET` or `POST /api/messages` itself, with the same actions, session check, cookie renewal
and exception handlers. Anything else (a missing, repeated, unknown or odd parameter, a body
that is not a valid `PostMessage`) goes on to the FastAPI routes in `messages.py`, which stay
the schema's description and the source of every validation error, so no answer differs.

Unless a middleware measures or traces every request, `HotPaths` puts the route ahead of the
whole middleware stack: it does what the stack does for these two requests (the host check,
the body limit, the security headers, the exception handlers) in one layer instead of eight.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

import orjson
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaver import strict_json
from palaver.actions import auth, messages
from palaver.api.body_limit import MAX_BODY_BYTES
from palaver.api.deps import SESSION_COOKIE, renew_cookie
from palaver.api.messages import IDEMPOTENCY_KEY_MAX, PAGE_DEFAULT, PAGE_MAX, PostMessage
from palaver.api.web_client import with_security_headers
from palaver.auth.hosts import AllowedHosts
from palaver.services import Services

PATH = "/api/messages"
PASSED = "palaver.thin_path_passed"
"""Set in the scope of a request this route hands on, so that it does not take it again."""
HISTORY_PARAMS = frozenset({"channelId", "limit", "before", "after", "threadId"})


class MessagesThinRoute(BaseRoute):
    """Held by `HotPaths`, or, while requests are measured or traced, first among the app's
    routes; `path` names it in request spans and metrics."""

    path = PATH
    name = "messages_thin_path"
    include_in_schema = False

    def __init__(self, fallback: Any) -> None:
        self._fallback = fallback
        """Where a request this route does not take goes on: the middleware stack (under
        `HotPaths`) or the app's router."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["path"] != PATH or PASSED in scope:
            return Match.NONE, {}
        method = scope["method"]
        if method == "GET":
            params = _history_params(scope["query_string"])
            if params is None:
                return Match.NONE, {}
            return Match.FULL, {"route": self, "palaver.history": params}
        if method == "POST" and not scope["query_string"]:
            return Match.FULL, {"route": self}
        return Match.NONE, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET":
            await self._history(scope, receive, send)
        else:
            await self._post(scope, receive, send)

    async def _history(self, scope: Scope, receive: Receive, send: Send) -> None:
        params: dict[str, str] = scope["palaver.history"]
        request = Request(scope, receive)
        svc: Services = scope["app"].state.services
        caller = await _caller(request, svc)
        page = await messages.history_json(
            svc,
            caller.user,
            params["channelId"],
            int(params.get("limit", PAGE_DEFAULT)),
            params.get("before"),
            params.get("threadId"),
            after=params.get("after"),
        )
        response = Response(page, media_type="application/json")
        renew_cookie(response, request, svc, caller)
        await response(scope, receive, send)

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        body = await request.body()
        key = _idempotency_key(request)
        post = _post_message(request, body) if key is not None else None
        if post is None:
            await self._hand_on(scope, body, send)
            return
        svc: Services = scope["app"].state.services
        caller = await _caller(request, svc)
        message_id, headers = await messages.post(
            svc,
            caller.user,
            post.channelId,
            post.content,
            post.type,
            post.metadata,
            key or None,
            thread_id=post.threadId,
        )
        response = Response(
            orjson.dumps({"id": message_id, "ok": True}),
            media_type="application/json",
            headers=headers,
        )
        renew_cookie(response, request, svc, caller)
        await response(scope, receive, send)

    async def _hand_on(self, scope: Scope, body: bytes, send: Send) -> None:
        """The request as the FastAPI route would have had it, its body read again."""
        replayed = False

        async def receive() -> Message:
            nonlocal replayed
            if replayed:
                return {"type": "http.disconnect"}
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self._fallback({**scope, PASSED: True}, receive, send)


class HotPaths:
    """The outermost ASGI layer: a request the thin route takes skips the middleware stack.

    Installed only when the stack's own middlewares are the host guard, the security headers
    and the body limit (`app.PalaverApp`), and it takes only a request they would pass through
    untouched (see `_passes`). Its answer gets the security headers. An exception goes to the
    handlers the app registered, as in the stack: the handler of the exception's class; else,
    or when that handler raises, the handler of every `Exception` (which logs it), whose 500
    is sent unless an answer had begun, and the exception goes on to the server, as
    Starlette's `ServerErrorMiddleware` does."""

    def __init__(
        self,
        stack: ASGIApp,
        handlers: Mapping[Any, Handler],
        allowed: AllowedHosts,
    ) -> None:
        self._stack = stack
        self._route = MessagesThinRoute(stack)
        self._handlers = {k: h for k, h in handlers.items() if k not in (500, Exception)}
        self._server_error = handlers.get(Exception) or handlers.get(500)
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == PATH and self._passes(scope):
            match, child = self._route.matches(scope)
            if match is Match.FULL:
                scope.update(child)
                await self._serve(scope, receive, send)
                return
        await self._stack(scope, receive, send)

    def _passes(self, scope: Scope) -> bool:
        """Whether the host guard and the body limit would let the request through untouched:
        its (first) host allowed, and its body's declared length within the limit, or none
        declared for a GET. A body sent chunked, whose length `BodyLimit` counts as it comes,
        is left to the stack."""
        host: bytes | None = None
        length: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"host" and host is None:
                host = value
            elif name == b"content-length" and length is None:
                length = value
            elif name == b"transfer-encoding":
                return False
        if not (
            self._allowed.any
            or self._allowed.allows(None if host is None else host.decode("latin-1"))
        ):
            return False
        if length is None:
            return bool(scope["method"] == "GET")
        return length.isdigit() and int(length) <= MAX_BODY_BYTES

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            started = True
            await send(with_security_headers(message))

        try:
            await self._route.handle(scope, receive, send_with_headers)
        except Exception as exc:
            error = exc
            request = Request(scope, receive)
            handler = None if started else self._handler(exc)
            if handler is not None:
                try:
                    response = await _answer(handler, request, exc)
                except Exception as failed:
                    error = failed
                else:
                    await response(scope, receive, send_with_headers)
                    return
            if self._server_error is not None:
                response = await _answer(self._server_error, request, error)
                if not started:
                    await response(scope, receive, send_with_headers)
            if error is exc:
                raise
            raise error from exc

    def _handler(self, exc: Exception) -> Handler | None:
        if isinstance(exc, HTTPException) and exc.status_code in self._handlers:
            return self._handlers[exc.status_code]
        for kind in type(exc).__mro__:
            if kind in self._handlers:
                return self._handlers[kind]
        return None


Handler = Callable[[Request, Any], Any]
"""An exception handler as the app holds it: a response, or an awaitable of one."""


async def _answer(handler: Handler, request: Request, exc: Exception) -> Response:
    response = handler(request, exc)
    if inspect.isawaitable(response):
        response = await response
    assert isinstance(response, Response)
    return response


def _history_params(query: bytes) -> dict[str, str] | None:
    """The history parameters when each is known, given once and plainly valid."""
    params: dict[str, str] = {}
    for key, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if key not in HISTORY_PARAMS or key in params or not value:
            return None
        params[key] = value
    if "channelId" not in params or ("before" in params and "after" in params):
        return None
    limit = params.get("limit", str(PAGE_DEFAULT))
    if not (limit.isascii() and limit.isdigit() and limit[0] != "0" and int(limit) <= PAGE_MAX):
        return None
    return params


def _idempotency_key(request: Request) -> str | None:
    """The header's value ("" for none); None when FastAPI's check should answer it."""
    keys = request.headers.getlist("idempotency-key")
    if not keys:
        return ""
    if len(keys) > 1 or len(keys[0]) > IDEMPOTENCY_KEY_MAX:
        return None
    return keys[0]


def _post_message(request: Request, body: bytes) -> PostMessage | None:
    """The body as the FastAPI route validates it, or None for it to say what is wrong."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return None
    if len(body) > strict_json.LARGE:
        return None
    try:
        return PostMessage.model_validate(strict_json.loads(body))
    except (ValueError, ValidationError):
        return None


async def _caller(request: Request, svc: Services) -> auth.Principal:
    return await auth.resolve(svc, request.cookies.get(SESSION_COOKIE))
