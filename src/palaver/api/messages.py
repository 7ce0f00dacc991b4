"""Reading and posting messages."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Path, Query, Response
from pydantic import Field

from palaver.actions import message_changes, messages
from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Acting, Body, Caller, Svc, encoded_json, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.domain import iso
from palaver.settings import Limits

router = APIRouter(prefix="/api/messages", tags=["messages"], route_class=StrictJsonRoute)


MessageType = Literal["text", "image", "file", "tool_call", "tool_result"]
MAX_CONTENT = Limits().maxMessageChars
"""What the schema states: the default of `limits.maxMessageChars`. The setting in force
governs, checked by the action, so a model-level cap must not stand in for it."""
CONTENT_SCHEMA = {**NOT_BLANK, "maxLength": MAX_CONTENT}
EMOJI: dict[str, Any] = {"format": "emoji"}
PAGE_DEFAULT = 50
PAGE_MAX = 200
IDEMPOTENCY_KEY_MAX = 200
"""Bounds the thin path (`hot_routes.py`) checks as these routes do."""


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
    threadId: str | None = Field(
        default=None,
        min_length=1,
        description="Reply in this message's thread (its root's, if it is itself a reply); "
        "a message of the same channel.",
    )


class EditMessage(Body):
    content: str = Field(
        min_length=1,
        json_schema_extra=CONTENT_SCHEMA,
        description="At most `limits.maxMessageChars` characters (a setting, 32000 by default).",
    )


class AddReaction(Body):
    emoji: str = Field(
        min_length=1, max_length=32, json_schema_extra=EMOJI, description="One emoji."
    )


@router.get("", responses={**errors(404), **ok(schemas.MessageList, "The channel's messages")})
async def list_messages(
    caller: Caller,
    svc: Svc,
    response: Response,
    channelId: Annotated[str, Query(min_length=1)],
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = PAGE_DEFAULT,
    before: Annotated[
        str | None,
        Query(description="Page back: the `limit` newest messages older than this one."),
    ] = None,
    after: Annotated[
        str | None,
        Query(
            description="Page forward: the `limit` oldest messages newer than this one "
            "(oldest first, as every page). Not with `before`."
        ),
    ] = None,
    threadId: Annotated[
        str | None, Query(min_length=1, description="One thread: its root, then its replies.")
    ] = None,
) -> Response:
    """A page of the channel's main timeline or of one thread, oldest first: the newest
    `limit` messages, or those before or after a message of the channel."""
    page = await messages.history_json(
        svc, caller.user, channelId, limit, before, threadId, after=after
    )
    return encoded_json(page, response)


@router.post("", responses={**errors(404, 429), **ok(schemas.MessagePosted, "The message's id")})
async def post_message(
    body: PostMessage,
    caller: Caller,
    svc: Svc,
    response: Response,
    idempotency_key: Annotated[str, Header(max_length=IDEMPOTENCY_KEY_MAX)] = "",
) -> dict[str, Any]:
    message_id, headers = await messages.post(
        svc,
        caller.user,
        body.channelId,
        body.content,
        body.type,
        body.metadata,
        idempotency_key or None,
        thread_id=body.threadId,
    )
    response.headers.update(headers)
    return {"id": message_id, "ok": True}


@router.patch(
    "/{message_id}",
    responses={**errors(403, 404), **ok(schemas.MessageAnswer, "The edited message")},
)
async def edit_message(
    message_id: str, body: EditMessage, caller: Caller, svc: Svc
) -> dict[str, Any]:
    """The author's own text message only; the earlier content is kept as a version."""
    edited = await message_changes.edit(svc, caller.user, message_id, body.content)
    return {"message": edited.as_json()}


@router.delete(
    "/{message_id}", responses={**errors(403, 404), **ok(schemas.Ok, "The message is erased")}
)
async def delete_message(message_id: str, caller: Caller, by: Acting, svc: Svc) -> dict[str, bool]:
    """The author their own message, the owner any message."""
    await message_changes.delete(svc, caller.user, message_id, by)
    return {"ok": True}


@router.get(
    "/{message_id}/versions",
    responses={**errors(404), **ok(schemas.MessageVersions, "Every content it has had")},
)
async def message_versions(message_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    found = await message_changes.versions(svc, caller.user, message_id)
    return {
        "versions": [
            {"content": v["content"], "editedAt": iso(v["editedAt"]) if v["editedAt"] else None}
            for v in found
        ]
    }


@router.post(
    "/{message_id}/reactions",
    responses={**errors(404), **ok(schemas.Ok, "The caller's reaction is there")},
)
async def add_reaction(
    message_id: str, body: AddReaction, caller: Caller, svc: Svc
) -> dict[str, bool]:
    await message_changes.react(svc, caller.user, message_id, body.emoji, add=True)
    return {"ok": True}


@router.delete(
    "/{message_id}/reactions/{emoji}",
    responses={**errors(404), **ok(schemas.Ok, "The caller's reaction is gone")},
)
async def remove_reaction(
    message_id: str,
    emoji: Annotated[str, Path(json_schema_extra=EMOJI, description="One emoji.")],
    caller: Caller,
    svc: Svc,
) -> dict[str, bool]:
    await message_changes.react(svc, caller.user, message_id, emoji, add=False)
    return {"ok": True}
