"""Who is in a channel: the names a client shows next to people's messages."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from palaver.actions import people
from palaver.api.deps import Caller, Svc, errors
from palaver.api.routing import DeferredRoute

router = APIRouter(prefix="/api/channels", tags=["channels"], route_class=DeferredRoute)


@router.get("/{channel_id}/people", responses=errors(404))
async def channel_people(channel_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"users": [u.as_json() for u in await people.of_channel(svc, caller.user, channel_id)]}
