"""The first screen's data, carried in the page that shows it.

A logged-in person opening `/c/<channel>` needs the session's user, the channel list, the agents
and the channel's latest messages before anything useful is on screen. Asked for by the page,
they cost a round trip after the page's scripts have run, and each answer then waits its turn
through the browser's network stack. So the page comes with them, as JSON in a data block
(Zulip's home page carries its `page_params` the same way): the client takes them as the
answers to its first requests (`web/src/lib/firstScreen.ts`).

Each part is what the API itself answers the same person (the same actions, the same checks),
so a guest's page carries only what its own requests would get. A request without a valid
session gets the plain, cached page.
"""

from __future__ import annotations

import gzip
import logging
from typing import Any
from urllib.parse import unquote

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import Response

from palaver.actions import agents, auth, channels, messages
from palaver.api.deps import SESSION_COOKIE, renew_cookie
from palaver.api.messages import PAGE_DEFAULT
from palaver.errors import DomainError
from palaver.services import Services
from palaver.store.faults import describe

log = logging.getLogger(__name__)

ELEMENT_ID = "first-screen"
_HEAD_END = b"</head>"
COMPRESS_IN_THREAD = 64 * 1024
"""A larger page (hundreds of channels, long messages) is gzipped off the event loop."""


def _channel_of(raw_path: str) -> str | None:
    """The channel of a channel or thread address (`/c/<id>`, `/c/<id>/t/<thread>`), each
    segment decoded on its own as the client's router does (an escaped `/` stays in it)."""
    parts = [p for p in raw_path.split("/") if p]
    if len(parts) in (2, 4) and parts[0] == "c" and (len(parts) == 2 or parts[2] == "t"):
        try:
            return unquote(parts[1], errors="strict")
        except UnicodeDecodeError:
            return None
    return None


async def _parts(svc: Services, user: Any, path: str) -> bytes:
    """`{"me": …, "channels": …, "agents": …, "messages"?: {channelId, limit, page}}`: each
    value the body of the API's answer, encoded once."""
    listed = await channels.list_with_read_state(svc, user)
    seen = await agents.list_visible(svc, user)
    parts = [
        b'"me":' + orjson.dumps({"user": user.as_json()}),
        b'"channels":' + orjson.dumps({"channels": listed}),
        b'"agents":' + orjson.dumps({"agents": [a.as_list_item() for a in seen]}),
    ]
    channel_id = _channel_of(path)
    if channel_id is not None:
        try:
            page = await messages.history_json(svc, user, channel_id, PAGE_DEFAULT, None)
        except DomainError:
            page = None  # not this person's channel: the page finds out as it would have
        if page is not None:
            head = orjson.dumps({"channelId": channel_id, "limit": PAGE_DEFAULT})
            parts.append(b'"messages":' + head[:-1] + b',"page":' + page + b"}")
    return b"{" + b",".join(parts) + b"}"


async def personal_page(request: Request, index: bytes, csp: str) -> Response | None:
    """index.html with the first screen's data, for a request with a valid session; None for
    any other (it gets the shared page)."""
    token = request.cookies.get(SESSION_COOKIE)
    if request.method != "GET" or not token or _HEAD_END not in index:
        return None
    svc: Services = request.app.state.services
    raw_path = (request.scope.get("raw_path") or b"").decode("latin-1")
    try:
        caller = await auth.resolve(svc, token)
        data = await _parts(svc, caller.user, raw_path)
    except DomainError:
        return None
    except Exception as exc:  # the page must load whatever the database's state
        # The shared page lets the client's own requests say what is wrong (and retry).
        log.warning("the first screen's data was left out of the page: %s", describe(exc))
        return None
    # Inside a script element only `</script` or `<!--` could end or change it, and both need
    # a `<`, which in JSON can only be inside a string, where `\u003c` means the same.
    block = (
        f'<script type="application/json" id="{ELEMENT_ID}">'.encode()
        + data.replace(b"<", b"\\u003c")
        + b"</script>"
    )
    body = index.replace(_HEAD_END, block + _HEAD_END, 1)
    headers = {
        "Cache-Control": "no-store",
        "Vary": "Accept-Encoding, Cookie",
        "Content-Security-Policy": csp,
    }
    if "gzip" in request.headers.get("accept-encoding", ""):
        if len(body) > COMPRESS_IN_THREAD:
            body = await anyio.to_thread.run_sync(gzip.compress, body, 5)
        else:
            body = gzip.compress(body, 5)
        headers["Content-Encoding"] = "gzip"
    response = Response(body, headers=headers, media_type="text/html; charset=utf-8")
    renew_cookie(response, request, svc, caller)
    return response
