"""Agents' schedules: the owner sees them and stops them (agents make them with a tool)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from palaver.api import schemas
from palaver.api.deps import Owner, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.errors import NotFound
from palaver.store import agents as agents_store
from palaver.store import schedules as store

router = APIRouter(prefix="/api/schedules", tags=["schedules"], route_class=StrictJsonRoute)


@router.get("", responses={**errors(403, 404), **ok(schemas.ScheduleList, "The schedules")})
async def list_schedules(
    _: Owner, svc: Svc, agentId: Annotated[str | None, Query(min_length=1)] = None
) -> dict[str, Any]:
    """Every schedule, or one agent's, oldest first, finished one-shots included."""
    async with svc.db.read() as conn:
        if agentId is not None and await agents_store.get(conn, agentId) is None:
            raise NotFound(f"No agent has the id '{agentId}'.")
        found = await store.list_all(conn, agentId)
    return {"schedules": [s.as_json() for s in found]}


@router.delete("/{schedule_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")})
async def delete_schedule(schedule_id: str, _: Owner, svc: Svc) -> dict[str, bool]:
    """Stops the schedule for good; a run already started finishes."""
    async with svc.db.write() as tx:
        if not await store.delete_schedule(tx.conn, schedule_id):
            raise NotFound(f"No schedule has the id '{schedule_id}'.")
    return {"ok": True}
