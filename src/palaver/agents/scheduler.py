"""The scheduler: agents' schedules come due, are claimed once, and start a reply.

When a schedule comes due its prompt is posted in the schedule's channel as a message of
nobody's (`userId` and `agentId` both null, like a system notice) whose metadata names the
schedule (`scheduleId`), the agent that made it and is addressed (`scheduledBy`) and the due
time (`dueAt`). It is not posted as the agent's own message, which its context would read as
something it had already said, nor as the person who asked for the schedule, who did not say
it at that moment. Then that agent answers it like any message, in its turn in the channel,
its reply carrying `metadata.scheduleId`.

Exactly once: each due time is claimed in the transaction that records it, stores the prompt
and advances the schedule. The claim is a `schedule_runs` row keyed by (schedule, due time),
so a second scheduler (another process on the same database) that read the same due time
fails on the unique key and rolls back; moving `next_run_at` only from the value it was read
with guards the same way. The reply starts after the commit, so a crash in between leaves the
prompt posted but unanswered, never answered twice.

Missed runs (the service was down, or the loop was held up) follow one rule wherever they
are met: only the latest due time counts, earlier ones are recorded as `missed`; it runs if
it is less than an hour late and is otherwise recorded as `late`. Cron expressions are
evaluated in UTC.

A guest's schedule (one made in answer to a guest) runs on the guest's behalf: each run spends
a message of the guest's rate budget, as if the guest had posted the prompt, and a run the
budget does not allow is recorded as skipped, `rate_limited`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError

from palaver import tracing
from palaver.agents.runner import ReplyRequest
from palaver.auth.limiter import message_budget
from palaver.bus.base import channel_topic
from palaver.domain import Agent, Channel, Message, iso
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import channels as channels_store
from palaver.store import messages as messages_store
from palaver.store import schedules as store
from palaver.store import users as users_store
from palaver.store.db import Database
from palaver.store.faults import log_failure
from palaver.store.schedules import Run, Schedule
from palaver.store.tables.base import utcnow

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
"""Answers the current time as an aware UTC datetime."""

GRACE = timedelta(hours=1)
"""A run later than this is skipped rather than run."""
MAX_SLEEP = 30.0
"""The loop looks at the database at least this often (seconds), to see other nodes' work."""
MIN_SLEEP = 0.05
RETRY_AFTER_ERROR = 5.0


@dataclass(frozen=True)
class Firing:
    """A run this scheduler claimed, its prompt already stored."""

    schedule: Schedule
    due_at: datetime
    agent: Agent
    channel: Channel
    message: Message


Fire = Callable[[Firing], Awaitable[None]]
Admit = Callable[[Schedule], Awaitable[bool]]
"""Whether a run of the schedule may fire now (a guest's rate budget allows it)."""


class _Taken(Exception):
    """Another scheduler moved the schedule on first, or it was removed meanwhile."""


class Scheduler:
    def __init__(
        self,
        db: Database,
        fire: Fire,
        clock: Clock = utcnow,
        name: str | None = None,
        admit: Admit | None = None,
    ) -> None:
        self.db = db
        self.fire = fire
        self.clock = clock
        self.admit = admit
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{new_id('sched')[-6:]}"
        """Recorded as `claimed_by` on each run this scheduler claims."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.tell_others: Callable[[], Awaitable[None]] | None = None
        """Wakes the other nodes' schedulers (a control event), set when there are others."""

    async def tick(self) -> list[Run]:
        """Claim and fire every run due now; answers the runs this scheduler recorded."""
        now = self.clock()
        async with self.db.read() as conn:
            due = await store.due(conn, now)
        recorded: list[Run] = []
        for schedule in due:
            claimed = await self._claim(schedule, now)
            if claimed is None:
                continue
            runs, firing = claimed
            recorded.extend(runs)
            if firing is not None:
                try:
                    await self.fire(firing)
                except Exception:
                    log.exception("starting the reply to schedule %s failed", schedule.id)
        return recorded

    async def catch_up(self) -> list[Run]:
        """The start-up pass over the runs missed while the service was down."""
        runs = await self.tick()
        fired = sum(run.status == "fired" for run in runs)
        if runs:
            log.info("start-up: %d scheduled runs fired, %d skipped", fired, len(runs) - fired)
        return runs

    def wake(self) -> None:
        """Look again now: a schedule was created and may be due before the loop would look."""
        self._wake.set()

    async def wake_everywhere(self) -> None:
        """Wake this scheduler and the other nodes' (they may claim the run, say if this node
        dies before it is due); they have heard when this returns."""
        self.wake()
        if self.tell_others is not None:
            await self.tell_others()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="scheduler")

    async def aclose(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.tick()
                delay = await self._delay()
            except Exception as exc:
                log_failure(
                    log, exc, "the scheduler failed; trying again in %g s", RETRY_AFTER_ERROR
                )
                delay = RETRY_AFTER_ERROR
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _delay(self) -> float:
        async with self.db.read() as conn:
            earliest = await store.earliest_due(conn)
        if earliest is None:
            return MAX_SLEEP
        return min(max((earliest - self.clock()).total_seconds(), MIN_SLEEP), MAX_SLEEP)

    async def _claim(
        self, schedule: Schedule, now: datetime
    ) -> tuple[list[Run], Firing | None] | None:
        """Record the outcome of the schedule's due time; None if another scheduler did."""
        assert schedule.next_run_at is not None
        admitted = (
            self.admit is None or now - schedule.latest(now) >= GRACE or await self.admit(schedule)
        )
        try:
            async with self.db.write() as tx:
                agent = await agents_store.get(tx.conn, schedule.agent_id)
                channel = await channels_store.get(tx.conn, schedule.channel_id)
                if agent is None or channel is None:
                    raise _Taken
                latest = schedule.latest(now)
                runs: list[Run] = []
                if latest > schedule.next_run_at:
                    runs.append(Run(schedule.id, schedule.next_run_at, "skipped", "missed"))
                firing: Firing | None = None
                if now - latest >= GRACE:
                    runs.append(Run(schedule.id, latest, "skipped", "late"))
                elif agent.id not in channel.agent_ids:
                    runs.append(Run(schedule.id, latest, "skipped", "not_in_channel"))
                elif not admitted:
                    runs.append(Run(schedule.id, latest, "skipped", "rate_limited"))
                else:
                    message = _prompt(schedule, latest)
                    firing = Firing(schedule, latest, agent, channel, message)
                    runs.append(Run(schedule.id, latest, "fired", message_id=message.id))
                await store.record_runs(tx.conn, runs, self.name, now)
                last_run_at = now if firing is not None else schedule.last_run_at
                if not await store.advance(tx.conn, schedule, schedule.following(now), last_run_at):
                    raise _Taken
                if firing is not None:
                    await messages_store.insert_message(tx.conn, firing.message)
        except (IntegrityError, _Taken):
            log.debug("schedule %s was taken by another scheduler or removed", schedule.id)
            return None
        return runs, firing


def _prompt(schedule: Schedule, due_at: datetime) -> Message:
    return Message(
        id=new_id("msg"),
        channel_id=schedule.channel_id,
        agent_id=None,
        user_id=None,
        content=schedule.prompt,
        type="text",
        metadata={
            "scheduleId": schedule.id,
            "scheduledBy": schedule.agent_id,
            "dueAt": iso(due_at),
        },
        created_at=utcnow(),
    )


def reply_to_schedules(svc: Services) -> Fire:
    """The production `fire`: broadcast the stored prompt, then start the agent's reply."""

    async def fire(firing: Firing) -> None:
        attributes = {
            "palaver.schedule.id": firing.schedule.id,
            "palaver.schedule.due_at": iso(firing.due_at),
            "gen_ai.agent.id": firing.agent.id,
            "gen_ai.conversation.id": firing.channel.id,
        }
        with tracing.span("fire_schedule", attributes):
            await _fire(firing)

    async def _fire(firing: Firing) -> None:
        event = {"type": "message", "data": firing.message.as_json()}
        await svc.bus.publish(channel_topic(firing.channel.id), event)
        svc.dispatcher.spawn(
            ReplyRequest(
                agent=firing.agent,
                channel=firing.channel,
                trigger=firing.message,
                notes=(_note(firing),),
                on_behalf_of=firing.schedule.created_by,
                metadata={"scheduleId": firing.schedule.id},
            )
        )

    return fire


def guest_budget(svc: Services) -> Admit:
    """The production `admit`: a guest's schedule spends the guest's message budget (the
    limiter `POST /api/messages` uses); others run freely."""

    async def admit(schedule: Schedule) -> bool:
        if schedule.created_by is None:
            return True
        async with svc.db.read() as conn:
            asker = await users_store.get(conn, schedule.created_by)
        if asker is None or asker.is_owner:
            return True
        limits = svc.settings.current.limits
        decision = await svc.limiter.take(
            message_budget(asker.id), limits.messagesPerMinute, limits.messageBurst
        )
        return decision.allowed

    return admit


def _note(firing: Firing) -> str:
    schedule = firing.schedule
    when = f"cron '{schedule.cron}' (UTC)" if schedule.cron else "once"
    return (
        f"The last message is the prompt of your own schedule {schedule.id} ({when}), due at "
        f"{iso(firing.due_at)}. You set it up earlier; act on it now."
    )
