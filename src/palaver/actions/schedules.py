"""Schedules the owner makes, pauses and resumes from the page (agents make theirs with the
`manage_schedule` tool; both follow the same rules: UTC cron, a future one-shot, the agent a
member of the channel, at most `MAX_ACTIVE_PER_AGENT` active ones per agent)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from croniter import CroniterError
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import User, iso
from palaver.errors import Conflict, Invalid, NotFound
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import channels as channels_store
from palaver.store import schedules as store
from palaver.store.audit import Actor, text_size
from palaver.store.schedules import Run, Schedule
from palaver.tools.base import ToolError
from palaver.tools.schedule import (
    MAX_ACTIVE_PER_AGENT,
    MAX_PROMPT_CHARS,
    cron_expression,
    parse_time,
)


async def listing(svc: Services, agent_id: str | None) -> list[dict[str, Any]]:
    """Every schedule (or one agent's) with its state and the outcome of its latest run."""
    async with svc.db.read() as conn:
        if agent_id is not None and await agents_store.get(conn, agent_id) is None:
            raise NotFound(f"No agent has the id '{agent_id}'.")
        found = await store.list_all(conn, agent_id)
        runs = await store.last_runs(conn, [s.id for s in found])
    return [described(s, runs.get(s.id)) for s in found]


def described(schedule: Schedule, run: Run | None) -> dict[str, Any]:
    return {
        **schedule.as_json(),
        "state": _state(schedule),
        "lastResult": None
        if run is None
        else {
            "status": run.status,
            "reason": run.reason,
            "dueAt": iso(run.due_at),
            "messageId": run.message_id,
        },
    }


def _state(schedule: Schedule) -> str:
    if schedule.active:
        return "active"
    return "paused" if schedule.next_run_at is not None else "done"


async def create(
    svc: Services,
    owner: User,
    agent_id: str,
    channel_id: str,
    prompt: str,
    cron: str | None,
    at: str | None,
    by: Actor,
) -> dict[str, Any]:
    prompt = prompt.strip()
    if not prompt:
        raise Invalid("A schedule needs a prompt: what the agent will be asked to do.")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise Invalid(f"The prompt is longer than {MAX_PROMPT_CHARS} characters.")
    if (cron is None) == (at is None):
        raise Invalid("Give exactly one of `schedule` (cron, repeating) and `at` (once).")
    now = svc.scheduler.clock()
    try:
        moment = parse_time(at) if at is not None else None
        schedule = Schedule(
            id=new_id("sched"),
            agent_id=agent_id,
            channel_id=channel_id,
            created_by=owner.id,
            cron=cron_expression(cron) if cron is not None else None,
            at=moment,
            prompt=prompt,
            active=True,
            next_run_at=None,
            last_run_at=None,
            created_at=now,
        )
        schedule = replace(schedule, next_run_at=schedule.following(now) or schedule.at)
    except ToolError as exc:
        raise Invalid(str(exc)) from None
    except CroniterError:
        raise Invalid(f"The cron expression '{cron}' never comes due.") from None
    if moment is not None and moment <= now:
        # Well formed, but the clock has passed it: at odds with the present, like a 409.
        raise Conflict(f"'{at}' is not in the future (it is now {iso(now)}).")
    async with svc.db.write() as tx:
        if await agents_store.get(tx.conn, agent_id) is None:
            raise NotFound(f"No agent has the id '{agent_id}'.")
        channel = await channels_store.get(tx.conn, channel_id)
        if channel is None:
            raise NotFound(f"No channel has the id '{channel_id}'.")
        if agent_id not in channel.agent_ids:
            raise Conflict("The agent is not a member of that channel; add it first.")
        await _check_room(tx.conn, agent_id)
        await store.create(tx.conn, schedule)
        changes = {
            "agentId": agent_id,
            "channelId": channel_id,
            "schedule": schedule.cron,
            "at": None if schedule.at is None else iso(schedule.at),
            "prompt": text_size(prompt),
        }
        await by.add(tx.conn, "schedule.create", schedule.id, changes)
    await svc.scheduler.wake_everywhere()
    return described(schedule, None)


async def set_active(svc: Services, schedule_id: str, active: bool, by: Actor) -> dict[str, Any]:
    """Pause keeps the due time; resume runs from the next due time after now (runs that fell
    in the pause are not caught up), and a one-shot whose time has passed cannot resume."""
    now = svc.scheduler.clock()
    async with svc.db.write() as tx:
        schedule = await store.get(tx.conn, schedule_id)
        if schedule is None:
            raise NotFound(f"No schedule has the id '{schedule_id}'.")
        state, was_active = _state(schedule), schedule.active
        if state == "done":
            raise Conflict("This one-shot schedule has run already; create a new one.")
        if active and state == "paused":
            next_run_at = schedule.following(now) or schedule.at
            assert next_run_at is not None
            if next_run_at <= now:
                raise Conflict("The time of this one-shot schedule has passed; create a new one.")
            await _check_room(tx.conn, schedule.agent_id)
            schedule = replace(schedule, active=True, next_run_at=next_run_at)
        elif not active:
            schedule = replace(schedule, active=False)
        if schedule.active != was_active:
            await by.add(tx.conn, "schedule.update", schedule.id, {"active": schedule.active})
        await store.set_active(tx.conn, schedule.id, schedule.active, schedule.next_run_at)
        runs = await store.last_runs(tx.conn, [schedule.id])
    if active:
        await svc.scheduler.wake_everywhere()
    return described(schedule, runs.get(schedule.id))


async def delete(svc: Services, schedule_id: str, by: Actor) -> None:
    """Stops the schedule for good; a run already started finishes."""
    async with svc.db.write() as tx:
        found = await store.get(tx.conn, schedule_id)
        if found is None or not await store.delete_schedule(tx.conn, schedule_id):
            raise NotFound(f"No schedule has the id '{schedule_id}'.")
        changes = {"agentId": found.agent_id, "channelId": found.channel_id}
        await by.add(tx.conn, "schedule.delete", schedule_id, changes)


async def _check_room(conn: AsyncConnection, agent_id: str) -> None:
    if await store.count_active(conn, agent_id) >= MAX_ACTIVE_PER_AGENT:
        raise Conflict(
            f"The agent already has {MAX_ACTIVE_PER_AGENT} active schedules; "
            "pause or delete one first."
        )
