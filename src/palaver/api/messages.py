"""Reading and posting messages."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response

from palaver.actions import messages
from palaver.api.deps import Body, Caller, Svc, errors
from palaver.api.routing import StrictJsonRoute

router = APIRouter(prefix="/api/messages", tags=["messages"], route_class=StrictJsonRoute)


class PostMessage(Body):
    channelId: str
    content: str
    type: str = "text"
    metadata: dict[str, Any] | None = None


@router.get("", responses=errors(404))
async def list_messages(
    caller: Caller,
    svc: Svc,
    channelId: Annotated[str, Query(min_length=1)],
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    found = await messages.history(svc, caller.user, channelId, limit, before)
    return {"messages": [m.as_json() for m in found]}


@router.post("", responses=errors(404, 429))
async def post_message(
    body: PostMessage,
    caller: Caller,
    svc: Svc,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:
    message_id, headers = await messages.post(
        svc, caller.user, body.channelId, body.content, body.type, body.metadata, idempotency_key
    )
    response.headers.update(headers)
    return {"id": message_id, "ok": True}
