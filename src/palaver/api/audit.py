"""The audit log (issue 24): the owner reads who changed what, newest first."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from palaver.api import schemas
from palaver.api.deps import Owner, Svc, errors
from palaver.api.routing import DeferredRoute
from palaver.api.schemas import ok
from palaver.store import audit

router = APIRouter(prefix="/api/audit", tags=["audit"], route_class=DeferredRoute)

ENTRY_ID = r"^audit_[0-9A-HJKMNP-TV-Z]{26}$"
ACTOR_ID = r"^[A-Za-z0-9_]{1,40}$"
ACTION = r"^[A-Za-z]{1,32}\.([A-Za-z]{1,31})?$"


@router.get("", responses={**errors(403), **ok(schemas.AuditLog, "One page, newest first")})
async def audit_log(
    _: Owner,
    svc: Svc,
    before: Annotated[
        str | None,
        Query(
            pattern=ENTRY_ID,
            description="An entry's id: the page holds the entries older than it (the last "
            "entry of the page before).",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=audit.MAX_PAGE)] = 50,
    actor: Annotated[
        str | None,
        Query(pattern=ACTOR_ID, description="Only the actions of this person (a user id)."),
    ] = None,
    action: Annotated[
        str | None,
        Query(
            pattern=ACTION,
            description="`resource.verb` for that action only (`agent.update`), or "
            "`resource.` for every action of the resource (`agent.`).",
        ),
    ] = None,
) -> dict[str, Any]:
    """Every change of the install's settings, agents, guests, channels, knowledge, memories,
    schedules and chains, the owner's deletions, logins and failed logins, newest first. One
    indexed read; nothing is cached (every node reads the shared table)."""
    entries = await svc.db.read_unit(lambda conn: audit.page(conn, limit, before, actor, action))
    return {"entries": entries}
