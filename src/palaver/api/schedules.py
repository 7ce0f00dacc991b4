"""Agents' schedules: agents make them with a tool; the owner sees, makes, pauses and stops
them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import ConfigDict, Field

from palaver.actions import schedules
from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Body, Owner, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.errors import NotFound
from palaver.store import schedules as store
from palaver.tools.schedule import MAX_PROMPT_CHARS

router = APIRouter(prefix="/api/schedules", tags=["schedules"], route_class=StrictJsonRoute)


class CreateSchedule(Body):
    """Exactly one of `schedule` (a five-field cron expression, UTC) and `at` (an ISO 8601
    time in the future, UTC unless it carries an offset)."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["schedule"]}, {"required": ["at"]}]}
    )

    agentId: str = Field(min_length=1)
    channelId: str = Field(min_length=1)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, json_schema_extra=NOT_BLANK)
    schedule: str | None = Field(default=None, min_length=1, max_length=120)
    at: str | None = Field(default=None, min_length=1, max_length=64)


class UpdateSchedule(Body):
    active: bool
    """False pauses; true resumes from the next due time after now."""


@router.get("", responses={**errors(403, 404), **ok(schemas.ScheduleList, "The schedules")})
async def list_schedules(
    _: Owner, svc: Svc, agentId: Annotated[str | None, Query(min_length=1)] = None
) -> dict[str, Any]:
    """Every schedule, or one agent's, oldest first, finished one-shots included, each with
    its state and the outcome of its latest run."""
    return {"schedules": await schedules.listing(svc, agentId)}


@router.post(
    "", responses={**errors(403, 404, 409), **ok(schemas.ScheduleAnswer, "The new schedule")}
)
async def create_schedule(body: CreateSchedule, owner: Owner, svc: Svc) -> dict[str, Any]:
    """The owner's own schedule for an agent in a channel the agent is a member of; it counts
    against the agent's limit of active schedules (409 when full)."""
    schedule = await schedules.create(
        svc, owner.user, body.agentId, body.channelId, body.prompt, body.schedule, body.at
    )
    return {"schedule": schedule}


@router.patch(
    "/{schedule_id}",
    responses={**errors(403, 404, 409), **ok(schemas.ScheduleAnswer, "The changed schedule")},
)
async def update_schedule(
    schedule_id: str, body: UpdateSchedule, _: Owner, svc: Svc
) -> dict[str, Any]:
    """Pause or resume; a one-shot that has run, or whose time passed while paused, answers
    409."""
    return {"schedule": await schedules.set_active(svc, schedule_id, body.active)}


@router.delete("/{schedule_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")})
async def delete_schedule(schedule_id: str, _: Owner, svc: Svc) -> dict[str, bool]:
    """Stops the schedule for good; a run already started finishes."""
    async with svc.db.write() as tx:
        if not await store.delete_schedule(tx.conn, schedule_id):
            raise NotFound(f"No schedule has the id '{schedule_id}'.")
    return {"ok": True}
