"""The two hottest routes, reading and posting messages, on a thin path ahead of FastAPI's.

FastAPI's dependency solving and parameter validation cost more CPU than these routes' own
work (issue 26, docs/NOTES.md "Hot paths and caches"). This route answers a well-formed
`GET` or `POST /api/messages` itself, with the same actions, session check, cookie renewal
and exception handlers. Anything else (a missing, repeated, unknown or odd parameter, a body
that is not a valid `PostMessage`) goes on to the FastAPI routes in `messages.py`, which stay
the schema's description and the source of every validation error, so no answer differs.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import Message, Receive, Scope, Send

from palaver import strict_json
from palaver.actions import auth, messages
from palaver.api.deps import SESSION_COOKIE, renew_cookie
from palaver.api.messages import IDEMPOTENCY_KEY_MAX, PAGE_DEFAULT, PAGE_MAX, PostMessage
from palaver.services import Services

PATH = "/api/messages"
PASSED = "palaver.thin_path_passed"
"""Set in the scope of a request this route hands on, so that it does not take it again."""
HISTORY_PARAMS = frozenset({"channelId", "limit", "before", "after", "threadId"})


class MessagesThinRoute(BaseRoute):
    """First among the app's routes; `path` names it in request spans and metrics."""

    path = PATH
    name = "messages_thin_path"
    include_in_schema = False

    def __init__(self, fallback: Any) -> None:
        self._fallback = fallback
        """The app's router, to hand on a request this route does not take."""

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
