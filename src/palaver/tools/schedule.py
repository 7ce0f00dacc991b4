"""The `manage_schedule` tool: an agent schedules work for itself in the channel it is in.

Each agent sees and deletes only its own schedules, and in a channel that has guests only
those of that channel. Times are UTC: cron expressions are evaluated in UTC, and an `at` time
without a zone is taken as UTC.

A schedule made in answer to a guest belongs to that guest: it counts against the guest's own
limit (`limits.guestSchedules`) and never against the agent's, so a guest cannot use up the
room the owner's schedules need.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from croniter import CroniterError, croniter

from palaver.ids import new_id
from palaver.store import channels as channels_store
from palaver.store import schedules as store
from palaver.store import users as users_store
from palaver.store.db import Database
from palaver.store.schedules import Schedule
from palaver.tools.base import ToolContext, ToolError
from palaver.tools.memory import privacy_scope

MAX_ACTIVE_PER_AGENT = 50
"""Keeps a looping agent from filling the database with schedules."""
DEFAULT_GUEST_SCHEDULES = 5
MAX_PROMPT_CHARS = 4000
CRON_FIELDS = 5
"""Minute, hour, day of month, month, day of week: no seconds field, so at most once a minute."""


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["create", "list", "delete"]},
        "schedule": {
            "type": "string",
            "description": "Cron expression in UTC for repeated runs, e.g. '0 9 * * 1-5'.",
        },
        "at": {
            "type": "string",
            "description": "ISO 8601 time of a single run, e.g. '2030-01-31T09:00:00Z'.",
        },
        "prompt": {
            "type": "string",
            "description": "What you will be asked to do when the schedule comes due.",
        },
        "id": {"type": "string", "description": "The schedule to delete."},
    },
    "required": ["action"],
    "additionalProperties": False,
}


class ManageScheduleTool:
    name = "manage_schedule"
    description = (
        "Schedule work for yourself in this channel: when a schedule comes due, its prompt is "
        "posted here for you to answer. Create one with a prompt and either `schedule` (a "
        "five-field cron expression, evaluated in UTC) or `at` (an ISO 8601 time, UTC unless "
        "it has an offset); list your schedules; delete one of yours by id."
    )

    def __init__(
        self,
        db: Database,
        clock: Callable[[], datetime],
        on_created: Callable[[], Awaitable[None]],
        guest_limit: Callable[[], int] = lambda: DEFAULT_GUEST_SCHEDULES,
    ) -> None:
        self.parameters = PARAMETERS
        self._db = db
        self._clock = clock
        self._on_created = on_created
        """Tells the scheduler to look again, as the new schedule may be due soon."""
        self._guest_limit = guest_limit
        """The current `limits.guestSchedules` setting."""

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        action = args["action"]
        if action == "create":
            return await self._create(ctx, args)
        if action == "delete":
            return await self._delete(ctx, args.get("id"))
        async with self._db.read() as conn:
            mine = await store.list_all(conn, ctx.agent_id)
        scope = await privacy_scope(self._db, ctx.channel_id)
        if scope is not None:
            mine = [s for s in mine if s.channel_id == scope]
        return _answer({"schedules": [s.as_json() for s in mine]})

    async def _create(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        prompt = (args.get("prompt") or "").strip()
        if not prompt:
            raise ToolError("A schedule needs a `prompt`: what you will be asked to do.")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise ToolError(f"The prompt is longer than {MAX_PROMPT_CHARS} characters.")
        cron, at = args.get("schedule"), args.get("at")
        if (cron is None) == (at is None):
            raise ToolError("Give exactly one of `schedule` (cron, repeating) and `at` (once).")
        now = self._clock()
        schedule = Schedule(
            id=new_id("sched"),
            agent_id=ctx.agent_id,
            channel_id=ctx.channel_id,
            created_by=ctx.user_id,
            cron=cron_expression(cron) if cron is not None else None,
            at=future_time(at, now) if at is not None else None,
            prompt=prompt,
            active=True,
            next_run_at=None,
            last_run_at=None,
            created_at=now,
        )
        try:
            first = schedule.following(now) or schedule.at
        except CroniterError as exc:
            raise ToolError(f"The cron expression '{cron}' never comes due.") from exc
        schedule = replace(schedule, next_run_at=first)
        async with self._db.write() as tx:
            channel = await channels_store.get(tx.conn, ctx.channel_id)
            if channel is None or ctx.agent_id not in channel.agent_ids:
                raise ToolError("You can only schedule work in a channel you are a member of.")
            asker = await users_store.get(tx.conn, ctx.user_id) if ctx.user_id else None
            if asker is not None and not asker.is_owner:
                limit = self._guest_limit()
                if await store.count_active_for(tx.conn, asker.id) >= limit:
                    raise ToolError(
                        f"{asker.name} already has {limit} active schedules, the most a guest "
                        "may have; delete one first."
                    )
            elif await store.count_active(tx.conn, ctx.agent_id) >= MAX_ACTIVE_PER_AGENT:
                raise ToolError(
                    f"You already have {MAX_ACTIVE_PER_AGENT} active schedules; delete one first."
                )
            await store.create(tx.conn, schedule)
        await self._on_created()
        return _answer({"created": schedule.as_json()})

    async def _delete(self, ctx: ToolContext, schedule_id: str | None) -> str:
        if not schedule_id:
            raise ToolError("Say which schedule to delete with `id`.")
        scope = await privacy_scope(self._db, ctx.channel_id)
        async with self._db.write() as tx:
            found = await store.get(tx.conn, schedule_id)
            if (
                found is None
                or found.agent_id != ctx.agent_id
                or scope not in (None, found.channel_id)
            ):
                raise ToolError(f"You have no schedule with the id '{schedule_id}'.")
            await store.delete_schedule(tx.conn, schedule_id)
        return _answer({"deleted": schedule_id})


def cron_expression(expression: str) -> str:
    """The expression normalized; ToolError (a readable sentence) if it is not five valid fields."""
    normalized = " ".join(expression.split())
    fields = len(normalized.split(" "))
    if not normalized.startswith("@") and fields != CRON_FIELDS:
        raise ToolError(
            f"'{expression}' is not a cron expression of five fields "
            "(minute hour day-of-month month day-of-week), such as '30 8 * * 1-5'."
        )
    if not croniter.is_valid(normalized):
        raise ToolError(f"'{expression}' is not a valid cron expression.")
    return normalized


def parse_time(text: str) -> datetime:
    """The ISO 8601 (or RFC 3339) time in UTC, UTC if it has no zone; ToolError if unreadable."""
    try:
        moment = datetime.fromisoformat(text.strip().upper())
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except ValueError as exc:
        raise ToolError(
            f"'{text}' is not an ISO 8601 time, such as '2030-01-31T09:00:00Z'."
        ) from exc
    except OverflowError as exc:
        raise ToolError(f"'{text}' is out of the range of years 1 to 9999 in UTC.") from exc


def future_time(text: str, now: datetime) -> datetime:
    """The time as `parse_time` reads it; ToolError if it is not after `now`."""
    moment = parse_time(text)
    if moment <= now:
        raise ToolError(f"'{text}' is not in the future (it is now {now.isoformat()}).")
    return moment


def _answer(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)
