"""Channels and their members."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Response
from pydantic import ConfigDict, Field

from palaver.actions import channels, reading
from palaver.api import schemas
from palaver.api.deps import (
    NOT_BLANK,
    Acting,
    Body,
    Caller,
    OwnerActing,
    Svc,
    encoded_json,
    errors,
)
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api/channels", tags=["channels"], route_class=StrictJsonRoute)


ChannelName = Annotated[str, Field(min_length=1, max_length=128, json_schema_extra=NOT_BLANK)]


class CreateChannel(Body):
    """A dm has exactly one agent: the schema says so, the action checks it (with a message
    that says why)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"properties": {"type": {"const": "group"}}},
                {
                    "properties": {
                        "type": {"const": "dm"},
                        "agentIds": {"minItems": 1, "maxItems": 1},
                    },
                    "required": ["agentIds"],
                },
            ]
        }
    )

    name: ChannelName
    type: Literal["dm", "group"]
    agentIds: list[str] = Field(default_factory=list)
    memberIds: list[str] = Field(default_factory=list)


class UpdateChannel(Body):
    name: ChannelName | None = None
    agentIds: list[str] | None = None
    memberIds: list[str] | None = None


class MarkRead(Body):
    messageId: str = Field(
        min_length=1, max_length=64, description="The newest message the caller has seen here."
    )


class AddMembers(Body):
    agentIds: list[str] = Field(default_factory=list)
    userIds: list[str] = Field(default_factory=list)


@router.get(
    "", responses={**errors(), **ok(schemas.ChannelList, "The channels the caller can see")}
)
async def list_channels(caller: Caller, svc: Svc, response: Response) -> Response:
    """Each with the caller's read marker, unread and mention counts. Encoded here: a person in
    500 channels gets 130 KB, read on every page load and reconnect."""
    listed = await channels.list_with_read_state(svc, caller.user)
    return encoded_json(orjson.dumps({"channels": listed}), response)


class CountUnread(Body):
    after: dict[str, str | None] = Field(
        max_length=2000,
        description="Per channel id: the last message read there, or null (only the newest id "
        "is wanted).",
    )
    limit: int = Field(default=50, ge=1, le=200, description="Counts stop here.")


@router.post(
    "/unread",
    responses={**errors(), **ok(schemas.UnreadCounts, "Counts for the channels the caller sees")},
)
async def count_unread(body: CountUnread, caller: Caller, svc: Svc) -> dict[str, Any]:
    """Every channel's unread count in one request: text, images and files others wrote after
    the message given. Channels the caller cannot see are left out."""
    return {"channels": await channels.unread(svc, caller.user, body.after, body.limit)}


@router.get("/{channel_id}", responses={**errors(404), **ok(schemas.ChannelAnswer, "The channel")})
async def get_channel(channel_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"channel": (await channels.visible(svc, caller.user, channel_id)).as_json()}


@router.post("", responses={**errors(403, 404), **ok(schemas.ChannelAnswer, "The new channel")})
async def create_channel(body: CreateChannel, by: OwnerActing, svc: Svc) -> dict[str, Any]:
    channel = await channels.create(svc, body.name, body.type, body.agentIds, body.memberIds, by)
    return {"channel": channel.as_json()}


@router.put(
    "/{channel_id}",
    responses={**errors(403, 404), **ok(schemas.ChannelAnswer, "The changed channel")},
)
async def update_channel(
    channel_id: str, body: UpdateChannel, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    channel = await channels.update(svc, channel_id, by, body.name, body.agentIds, body.memberIds)
    return {"channel": channel.as_json()}


@router.post(
    "/{channel_id}/members",
    responses={**errors(403, 404), **ok(schemas.ChannelAnswer, "The channel with its members")},
)
async def add_members(
    channel_id: str, body: AddMembers, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    channel = await channels.update(
        svc, channel_id, by, agent_ids=body.agentIds, member_ids=body.userIds, add=True
    )
    return {"channel": channel.as_json()}


@router.post(
    "/{channel_id}/read",
    responses={**errors(404), **ok(schemas.ReadMarked, "The caller's read state of the channel")},
)
async def mark_read(channel_id: str, body: MarkRead, caller: Caller, svc: Svc) -> dict[str, Any]:
    """Move the caller's read marker forward to the message (never back: an older one is
    accepted and changes nothing); the caller's sockets hear `read_updated` when it moved."""
    state = await reading.mark_read(svc, caller.user, channel_id, body.messageId)
    return {"ok": True, **state.as_json()}


@router.post(
    "/{channel_id}/leave",
    responses={**errors(403, 404), **ok(schemas.Ok, "The caller left the channel")},
)
async def leave_channel(channel_id: str, caller: Caller, by: Acting, svc: Svc) -> dict[str, Any]:
    """A guest leaves a channel it is in (403 for the owner, who reads every channel)."""
    await channels.leave(svc, caller.user, channel_id, by)
    return {"ok": True}


@router.delete(
    "/{channel_id}",
    responses={**errors(403, 404), **ok(schemas.Ok, "The channel is gone")},
)
async def delete_channel(channel_id: str, by: OwnerActing, svc: Svc) -> dict[str, Any]:
    """The channel goes with its messages, threads, files only it carried, chains, schedules
    and read states; its people hear `channel_removed`."""
    await channels.delete(svc, channel_id, by)
    return {"ok": True}
