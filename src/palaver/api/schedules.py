"""Agents' schedules: agents make them with a tool; the owner sees, makes, pauses and stops
them."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import ConfigDict, Field

from palaver.actions import schedules
from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Body, Owner, OwnerActing, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.errors import Invalid
from palaver.tools.schedule import MAX_PROMPT_CHARS


def _cron_field(value: str) -> str:
    item = rf"(\*|(?:{value})(?:-(?:{value}))?)(?:/[1-9][0-9]?)?"
    return rf"{item}(?:,{item})*"


CRON_PATTERN = (
    r"^\s*"
    + r"\s+".join(
        _cron_field(v)
        for v in (
            r"[1-5]?[0-9]",
            r"1?[0-9]|2[0-3]",
            r"[1-9]|[12][0-9]|3[01]",
            r"[1-9]|1[0-2]",
            r"[0-7]",
        )
    )
    + r"\s*$"
)
"""Five cron fields (minute, hour, day of month, month, day of week) of numbers in their
ranges, `*`, ranges, steps and lists: what the schema can say. A date no month has (`0 0 31 2
*`) matches, and is refused as never coming due."""

RFC3339 = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
"""The shape of the schema's `format: date-time`: an ISO 8601 time with its offset."""

router = APIRouter(prefix="/api/schedules", tags=["schedules"], route_class=StrictJsonRoute)


class CreateSchedule(Body):
    """Exactly one of `schedule` (a five-field cron expression, UTC) and `at` (an RFC 3339
    time in the future) is a string; null is the same as leaving the field out."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": [name], "properties": {name: {"type": "string"}}}
                for name in ("schedule", "at")
            ]
        }
    )

    agentId: str = Field(min_length=1)
    channelId: str = Field(min_length=1)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, json_schema_extra=NOT_BLANK)
    schedule: str | None = Field(
        default=None, max_length=120, json_schema_extra={"pattern": CRON_PATTERN}
    )
    at: str | None = Field(default=None, max_length=64, json_schema_extra={"format": "date-time"})


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
async def create_schedule(
    body: CreateSchedule, owner: Owner, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    """The owner's own schedule for an agent in a channel the agent is a member of; it counts
    against the agent's limit of active schedules (409 when full). A time already past is 409,
    as is any request at odds with the clock."""
    if body.schedule is not None and not re.match(CRON_PATTERN, body.schedule):
        raise Invalid(
            f"'{body.schedule}' is not a cron expression of five fields (minute hour "
            "day-of-month month day-of-week, in numbers), such as '30 8 * * 1-5'."
        )
    if body.at is not None and not re.match(RFC3339, body.at):
        raise Invalid(
            f"'{body.at}' is not an ISO 8601 time with its offset, such as '2030-01-31T09:00:00Z'."
        )
    schedule = await schedules.create(
        svc, owner.user, body.agentId, body.channelId, body.prompt, body.schedule, body.at, by
    )
    return {"schedule": schedule}


@router.patch(
    "/{schedule_id}",
    responses={**errors(403, 404, 409), **ok(schemas.ScheduleAnswer, "The changed schedule")},
)
async def update_schedule(
    schedule_id: str, body: UpdateSchedule, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    """Pause or resume; a one-shot that has run, or whose time passed while paused, answers
    409."""
    return {"schedule": await schedules.set_active(svc, schedule_id, body.active, by)}


@router.delete("/{schedule_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")})
async def delete_schedule(schedule_id: str, by: OwnerActing, svc: Svc) -> dict[str, bool]:
    """Stops the schedule for good; a run already started finishes."""
    await schedules.delete(svc, schedule_id, by)
    return {"ok": True}
