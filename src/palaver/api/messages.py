"""Reading and posting messages."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from pydantic import Field

from palaver.actions import messages
from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Body, Caller, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.settings import Limits

router = APIRouter(prefix="/api/messages", tags=["messages"], route_class=StrictJsonRoute)


MessageType = Literal["text", "image", "file", "tool_call", "tool_result"]
MAX_CONTENT = Limits().maxMessageChars
"""What the schema states: the default of `limits.maxMessageChars`. The setting in force
governs, checked by the action, so a model-level cap must not stand in for it."""
CONTENT_SCHEMA = {**NOT_BLANK, "maxLength": MAX_CONTENT}


class PostMessage(Body):
    channelId: str
    content: str = Field(
        min_length=1,
        json_schema_extra=CONTENT_SCHEMA,
        description="At most `limits.maxMessageChars` characters (a setting, 32000 by default).",
    )
    type: MessageType = "text"
    metadata: dict[str, Any] | None = Field(
        default=None, description="Free-form; at most 16 KiB as compact JSON."
    )


@router.get("", responses={**errors(404), **ok(schemas.MessageList, "The channel's messages")})
async def list_messages(
    caller: Caller,
    svc: Svc,
    channelId: Annotated[str, Query(min_length=1)],
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[str | None, Query()] = None,
) -> Response:
    page = await messages.history_json(svc, caller.user, channelId, limit, before)
    return Response(page, media_type="application/json")


@router.post("", responses={**errors(404, 429), **ok(schemas.MessagePosted, "The message's id")})
async def post_message(
    body: PostMessage,
    caller: Caller,
    svc: Svc,
    response: Response,
    idempotency_key: Annotated[str, Header(max_length=200)] = "",
) -> dict[str, Any]:
    message_id, headers = await messages.post(
        svc,
        caller.user,
        body.channelId,
        body.content,
        body.type,
        body.metadata,
        idempotency_key or None,
    )
    response.headers.update(headers)
    return {"id": message_id, "ok": True}
