"""The backup schedule's state (issue 25): what the owner sees of the scheduled backups."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from palaver.api import schemas
from palaver.api.deps import Owner, Svc, errors
from palaver.api.routing import DeferredRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api/backups", tags=["backups"], route_class=DeferredRoute)


@router.get("", responses={**errors(403), **ok(schemas.Backups, "The schedule and its backups")})
async def backups(_: Owner, svc: Svc) -> dict[str, Any]:
    """The schedule (`settings.backups`, set through `PUT /api/settings`), the backup being
    made, the last one's result, when the next is due, and the files kept."""
    return await svc.backups.status()
