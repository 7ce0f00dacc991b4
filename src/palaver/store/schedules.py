"""Schedules: the record, its cron arithmetic, and the repository over `schedules`.

Cron expressions are evaluated in UTC, so a schedule means the same on every node whatever
its local time zone, and never runs twice or not at all across a daylight-saving change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from croniter import croniter
from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import iso
from palaver.store.tables.core import users
from palaver.store.tables.schedules import schedule_runs, schedules

RunStatus = Literal["fired", "skipped"]
_JUST_AFTER = timedelta(microseconds=1)


@dataclass(frozen=True)
class Schedule:
    id: str
    agent_id: str
    channel_id: str
    created_by: str | None
    cron: str | None
    at: datetime | None
    prompt: str
    active: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime

    def following(self, moment: datetime) -> datetime | None:
        """The first due time strictly after `moment`; None when there is none (a one-shot)."""
        if self.cron is None:
            return None
        found: datetime = croniter(self.cron, moment).get_next(datetime)
        return found

    def latest(self, moment: datetime) -> datetime:
        """The last due time at or before `moment`, which must not precede `next_run_at`."""
        if self.cron is None:
            assert self.at is not None
            return self.at
        found: datetime = croniter(self.cron, moment + _JUST_AFTER).get_prev(datetime)
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agentId": self.agent_id,
            "channelId": self.channel_id,
            "createdBy": self.created_by,
            "schedule": self.cron,
            "at": _iso(self.at),
            "prompt": self.prompt,
            "nextRunAt": _iso(self.next_run_at),
            "lastRunAt": _iso(self.last_run_at),
            "active": self.active,
            "createdAt": iso(self.created_at),
        }


@dataclass(frozen=True)
class Run:
    """The outcome of one due time; its (schedule, due time) key is the claim."""

    schedule_id: str
    due_at: datetime
    status: RunStatus
    reason: str | None = None
    message_id: str | None = None


def _iso(moment: datetime | None) -> str | None:
    return iso(moment) if moment is not None else None


def _schedule(row: Any) -> Schedule:
    return Schedule(
        id=row.id,
        agent_id=row.agent_id,
        channel_id=row.channel_id,
        created_by=row.created_by,
        cron=row.cron,
        at=row.at,
        prompt=row.prompt,
        active=bool(row.active),
        next_run_at=row.next_run_at,
        last_run_at=row.last_run_at,
        created_at=row.created_at,
    )


async def create(conn: AsyncConnection, schedule: Schedule) -> None:
    await conn.execute(
        insert(schedules).values(
            id=schedule.id,
            agent_id=schedule.agent_id,
            channel_id=schedule.channel_id,
            created_by=schedule.created_by,
            cron=schedule.cron,
            at=schedule.at,
            prompt=schedule.prompt,
            active=schedule.active,
            next_run_at=schedule.next_run_at,
            last_run_at=schedule.last_run_at,
            created_at=schedule.created_at,
        )
    )


async def get(conn: AsyncConnection, schedule_id: str) -> Schedule | None:
    row = (await conn.execute(select(schedules).where(schedules.c.id == schedule_id))).first()
    return _schedule(row) if row else None


async def list_all(conn: AsyncConnection, agent_id: str | None = None) -> list[Schedule]:
    query = select(schedules).order_by(schedules.c.created_at, schedules.c.id)
    if agent_id is not None:
        query = query.where(schedules.c.agent_id == agent_id)
    return [_schedule(r) for r in await conn.execute(query)]


async def count_active(conn: AsyncConnection, agent_id: str) -> int:
    """The agent's active schedules that count against its own limit: guests' do not, so a
    guest cannot use the agent's room up."""
    guests = select(users.c.id).where(users.c.role == "guest")
    query = select(func.count()).where(
        schedules.c.agent_id == agent_id,
        schedules.c.active,
        or_(schedules.c.created_by.is_(None), schedules.c.created_by.not_in(guests)),
    )
    return int((await conn.execute(query)).scalar_one())


async def count_active_for(conn: AsyncConnection, user_id: str) -> int:
    """The active schedules made in answer to this person, by any agent."""
    query = select(func.count()).where(schedules.c.created_by == user_id, schedules.c.active)
    return int((await conn.execute(query)).scalar_one())


async def delete_created_by(conn: AsyncConnection, user_id: str) -> None:
    await conn.execute(delete(schedules).where(schedules.c.created_by == user_id))


async def delete_schedule(conn: AsyncConnection, schedule_id: str) -> bool:
    result = await conn.execute(delete(schedules).where(schedules.c.id == schedule_id))
    return result.rowcount > 0


async def due(conn: AsyncConnection, now: datetime) -> list[Schedule]:
    query = (
        select(schedules)
        .where(schedules.c.active, schedules.c.next_run_at <= now)
        .order_by(schedules.c.next_run_at, schedules.c.id)
    )
    return [_schedule(r) for r in await conn.execute(query)]


async def earliest_due(conn: AsyncConnection) -> datetime | None:
    query = select(func.min(schedules.c.next_run_at)).where(schedules.c.active)
    found: datetime | None = (await conn.execute(query)).scalar_one()
    return found


async def record_runs(
    conn: AsyncConnection, runs: list[Run], claimed_by: str, now: datetime
) -> None:
    """Raises IntegrityError if another scheduler has recorded one of these runs already."""
    await conn.execute(
        insert(schedule_runs),
        [
            {
                "schedule_id": run.schedule_id,
                "due_at": run.due_at,
                "status": run.status,
                "reason": run.reason,
                "message_id": run.message_id,
                "claimed_by": claimed_by,
                "created_at": now,
            }
            for run in runs
        ],
    )


async def advance(
    conn: AsyncConnection,
    schedule: Schedule,
    next_run_at: datetime | None,
    last_run_at: datetime | None,
) -> bool:
    """Move the schedule on from the due time it was read with; False if that has changed."""
    result = await conn.execute(
        update(schedules)
        .where(
            schedules.c.id == schedule.id,
            schedules.c.active,
            schedules.c.next_run_at == schedule.next_run_at,
        )
        .values(
            next_run_at=next_run_at,
            last_run_at=last_run_at,
            active=next_run_at is not None,
        )
    )
    return result.rowcount == 1


async def set_active(
    conn: AsyncConnection, schedule_id: str, active: bool, next_run_at: datetime | None
) -> bool:
    """Pause (keeping the due time, so a paused schedule is told from a finished one) or
    resume from a new due time."""
    result = await conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(active=active, next_run_at=next_run_at)
    )
    return result.rowcount == 1


async def last_runs(conn: AsyncConnection, schedule_ids: list[str]) -> dict[str, Run]:
    """Each schedule's latest recorded run, for those that have one."""
    if not schedule_ids:
        return {}
    latest = (
        select(schedule_runs.c.schedule_id, func.max(schedule_runs.c.due_at).label("due_at"))
        .where(schedule_runs.c.schedule_id.in_(schedule_ids))
        .group_by(schedule_runs.c.schedule_id)
        .subquery()
    )
    query = select(schedule_runs).join(
        latest,
        (schedule_runs.c.schedule_id == latest.c.schedule_id)
        & (schedule_runs.c.due_at == latest.c.due_at),
    )
    return {
        row.schedule_id: Run(row.schedule_id, row.due_at, row.status, row.reason, row.message_id)
        for row in await conn.execute(query)
    }
