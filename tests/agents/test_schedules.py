"""The scheduler on a real migrated database, driven by an injected clock: when runs fire,
what a missed run becomes, and that each run fires once however many schedulers share it."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.agents.scheduler import Firing, Scheduler
from palaver.domain import Agent, Channel
from palaver.store import agents as agents_store
from palaver.store import channels as channels_store
from palaver.store import messages as messages_store
from palaver.store import migrate
from palaver.store import schedules as schedules_store
from palaver.store.db import Database
from palaver.store.tables.schedules import schedule_runs
from palaver.tools.base import ToolContext, ToolError
from palaver.tools.schedule import ManageScheduleTool

MONDAY = datetime(2030, 1, 7, tzinfo=UTC)


def at(hours: int = 0, minutes: int = 0, seconds: float = 0, days: int = 0) -> datetime:
    """A moment of the week starting on MONDAY at midnight UTC."""
    return MONDAY + timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class HeldReads(Database):
    """A database whose reads end only once `hold` is set: a scheduler that read the due
    schedules, then was overtaken by another."""

    def __init__(self, url: str, hold: asyncio.Event) -> None:
        super().__init__(url)
        self.hold = hold

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with super().read() as conn:
            yield conn
        await self.hold.wait()


@dataclass
class World:
    url: str
    db: Database
    clock: Clock
    agent: Agent
    channel: Channel
    other: Agent
    fired: list[tuple[str, datetime, str]] = field(default_factory=list)
    extra_dbs: list[Database] = field(default_factory=list)

    def scheduler(self, db: Database | None = None, name: str = "one") -> Scheduler:
        async def fire(firing: Firing) -> None:
            self.fired.append((firing.schedule.id, firing.due_at, name))

        return Scheduler(db or self.db, fire, self.clock, name)

    def open_db(self) -> Database:
        db = Database(self.url)
        self.extra_dbs.append(db)
        return db

    def tool(self) -> ManageScheduleTool:
        return ManageScheduleTool(self.db, self.clock, _nothing)

    async def call(self, agent: Agent | None = None, **args: Any) -> dict[str, Any]:
        who = agent or self.agent
        ctx = ToolContext(who.id, who.name, self.channel.id, "user_1", "msg_1")
        answer: dict[str, Any] = json.loads(await self.tool()(ctx, args))
        return answer

    async def create(self, **args: Any) -> dict[str, Any]:
        created: dict[str, Any] = (
            await self.call(action="create", prompt=args.pop("prompt", "Check"), **args)
        )["created"]
        return created

    async def schedule(self, schedule_id: str) -> dict[str, Any]:
        async with self.db.read() as conn:
            found = await schedules_store.get(conn, schedule_id)
        assert found is not None
        return found.as_json()

    async def runs(self, schedule_id: str) -> list[tuple[datetime, str, str | None]]:
        query = (
            select(schedule_runs)
            .where(schedule_runs.c.schedule_id == schedule_id)
            .order_by(schedule_runs.c.due_at)
        )
        async with self.db.read() as conn:
            return [(r.due_at, r.status, r.reason) for r in await conn.execute(query)]

    async def prompts(self) -> list[dict[str, Any]]:
        async with self.db.read() as conn:
            stored = await conn.run_sync(messages_store.page, self.channel.id, 200)
        return [m.as_json() for m in stored]

    def due_times(self, schedule_id: str) -> list[datetime]:
        return [due for sid, due, _ in self.fired if sid == schedule_id]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("schedules") / "template.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    return path


async def _nothing() -> None:
    """The tool's wake-up call, with no scheduler loop to wake."""


def _agent(name: str) -> Agent:
    return Agent(f"agent_{name}", name, "🤖", "", "builtin/echo", [], "", False, MONDAY, MONDAY)


@pytest.fixture
async def world(template: Path, tmp_path: Path) -> AsyncIterator[World]:
    path = tmp_path / "palaver.db"
    shutil.copyfile(template, path)
    url = f"sqlite+aiosqlite:///{path}"
    db = Database(url)
    agent, other = _agent("Planner"), _agent("Other")
    channel = Channel("ch_1", "plans", "group", [agent.id, other.id], [], MONDAY, MONDAY)
    async with db.write() as tx:
        await agents_store.create(tx.conn, agent)
        await agents_store.create(tx.conn, other)
        await channels_store.create(tx.conn, channel)
    w = World(url, db, Clock(at(minutes=3)), agent, channel, other)
    yield w
    for extra in w.extra_dbs:
        await extra.dispose()
    await db.dispose()


async def test_a_cron_schedule_fires_at_each_due_time(world: World) -> None:
    created = await world.create(schedule="*/5  * * * *", prompt="Check the build")
    assert created["schedule"] == "*/5 * * * *"
    assert created["nextRunAt"] == "2030-01-07T00:05:00.000Z"
    scheduler = world.scheduler()
    for now in (at(minutes=4, seconds=59.9), at(minutes=5), at(minutes=5, seconds=30)):
        world.clock.now = now
        await scheduler.tick()
    world.clock.now = at(minutes=10, seconds=2)
    await scheduler.tick()
    await scheduler.tick()
    assert world.due_times(created["id"]) == [at(minutes=5), at(minutes=10)]
    assert await world.runs(created["id"]) == [
        (at(minutes=5), "fired", None),
        (at(minutes=10), "fired", None),
    ]
    prompts = await world.prompts()
    assert [p["content"] for p in prompts] == ["Check the build"] * 2
    assert all(p["userId"] is None and p["agentId"] is None for p in prompts)
    assert prompts[0]["metadata"] == {
        "scheduleId": created["id"],
        "scheduledBy": world.agent.id,
        "dueAt": "2030-01-07T00:05:00.000Z",
    }
    after = await world.schedule(created["id"])
    assert after["nextRunAt"] == "2030-01-07T00:15:00.000Z"
    assert after["lastRunAt"] == "2030-01-07T00:10:02.000Z"
    assert after["active"] is True


async def test_a_one_shot_fires_once_and_is_then_inactive(world: World) -> None:
    created = await world.create(at="2030-01-07T10:00:00", prompt="Water the plants")
    assert created["at"] == created["nextRunAt"] == "2030-01-07T10:00:00.000Z"
    scheduler = world.scheduler()
    for now in (at(hours=9, minutes=59, seconds=59), at(hours=10, seconds=0.2), at(hours=11)):
        world.clock.now = now
        await scheduler.tick()
    world.clock.now = at(days=3)
    await scheduler.tick()
    assert world.due_times(created["id"]) == [at(hours=10)]
    after = await world.schedule(created["id"])
    assert after["active"] is False
    assert after["nextRunAt"] is None
    assert after["lastRunAt"] == "2030-01-07T10:00:00.200Z"


async def test_several_missed_runs_of_a_cron_schedule_run_once_at_start_up(world: World) -> None:
    created = await world.create(schedule="*/5 * * * *")
    world.clock.now = at(minutes=32, seconds=10)
    runs = await world.scheduler().catch_up()
    assert [(r.due_at, r.status) for r in runs] == [
        (at(minutes=5), "skipped"),
        (at(minutes=30), "fired"),
    ]
    assert world.due_times(created["id"]) == [at(minutes=30)]
    assert await world.runs(created["id"]) == [
        (at(minutes=5), "skipped", "missed"),
        (at(minutes=30), "fired", None),
    ]
    assert (await world.schedule(created["id"]))["nextRunAt"] == "2030-01-07T00:35:00.000Z"


@pytest.mark.parametrize(
    ("late", "outcome"),
    [
        (timedelta(minutes=59, seconds=59), ("fired", None)),
        (timedelta(hours=1), ("skipped", "late")),
        (timedelta(days=2), ("skipped", "late")),
    ],
)
async def test_a_missed_one_shot_runs_if_less_than_an_hour_late(
    world: World, late: timedelta, outcome: tuple[str, str | None]
) -> None:
    created = await world.create(at="2030-01-07T10:00:00Z")
    world.clock.now = at(hours=10) + late
    await world.scheduler().catch_up()
    assert await world.runs(created["id"]) == [(at(hours=10), *outcome)]
    assert len(world.fired) == (1 if outcome[0] == "fired" else 0)
    assert len(await world.prompts()) == len(world.fired)
    assert (await world.schedule(created["id"]))["active"] is False


async def test_a_cron_run_missed_by_over_an_hour_is_skipped_and_the_next_one_runs(
    world: World,
) -> None:
    created = await world.create(schedule="0 9 * * *")
    world.clock.now = at(days=2, hours=10, minutes=30)
    runs = await world.scheduler().catch_up()
    assert [(r.due_at, r.status, r.reason) for r in runs] == [
        (at(hours=9), "skipped", "missed"),
        (at(days=2, hours=9), "skipped", "late"),
    ]
    assert world.fired == []
    assert await world.prompts() == []
    after = await world.schedule(created["id"])
    assert after["active"] is True
    assert after["nextRunAt"] == "2030-01-10T09:00:00.000Z"
    world.clock.now = at(days=3, hours=9)
    await world.scheduler().tick()
    assert world.due_times(created["id"]) == [at(days=3, hours=9)]


async def test_two_schedulers_on_one_database_fire_each_run_once(world: World) -> None:
    made = [await world.create(schedule="*/5 * * * *") for _ in range(4)]
    made += [await world.create(at=f"2030-01-07T00:{m:02d}:30Z") for m in range(5, 15, 2)]
    one, two = world.scheduler(name="one"), world.scheduler(world.open_db(), name="two")
    for step in range(26):
        world.clock.now = at(minutes=4, seconds=30 * step)
        await asyncio.gather(one.tick(), two.tick(), one.tick(), two.tick())
    expected = 4 * 3 + 5
    assert len(world.fired) == len(set(f[:2] for f in world.fired)) == expected
    assert len(await world.prompts()) == expected
    for created in made:
        fired = [due for due, status, _ in await world.runs(created["id"]) if status == "fired"]
        assert fired == world.due_times(created["id"])


async def test_a_scheduler_overtaken_after_reading_a_due_run_does_not_fire_it(
    world: World,
) -> None:
    created = await world.create(schedule="*/5 * * * *")
    world.clock.now = at(minutes=5)
    first_done = asyncio.Event()
    late = world.scheduler(HeldReads(world.url, first_done), name="late")
    world.extra_dbs.append(late.db)

    async def first() -> None:
        await world.scheduler(world.open_db(), name="first").tick()
        first_done.set()

    await asyncio.gather(late.tick(), first())
    assert world.fired == [(created["id"], at(minutes=5), "first")]
    assert len(await world.prompts()) == 1


async def test_a_deleted_schedule_does_not_fire(world: World) -> None:
    created = await world.create(at="2030-01-07T00:05:00Z")
    assert await world.call(action="delete", id=created["id"]) == {"deleted": created["id"]}
    world.clock.now = at(minutes=5)
    assert await world.scheduler().tick() == []
    assert world.fired == []


async def test_a_run_of_an_agent_no_longer_in_the_channel_is_skipped(world: World) -> None:
    created = await world.create(schedule="*/5 * * * *")
    async with world.db.write() as tx:
        await channels_store.replace(
            tx.conn, Channel("ch_1", "plans", "group", [world.other.id], [], MONDAY, MONDAY)
        )
    world.clock.now = at(minutes=5)
    await world.scheduler().tick()
    assert world.fired == []
    assert await world.runs(created["id"]) == [(at(minutes=5), "skipped", "not_in_channel")]
    assert (await world.schedule(created["id"]))["active"] is True


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"schedule": "*/5 * * * *", "prompt": " "}, "needs a `prompt`"),
        ({"prompt": "x"}, "exactly one of"),
        ({"prompt": "x", "schedule": "* * * * *", "at": "2031-01-01T00:00:00Z"}, "exactly one"),
        ({"prompt": "x", "schedule": "* * * * * *"}, "five fields"),
        ({"prompt": "x", "schedule": "61 * * * *"}, "not a valid cron expression"),
        ({"prompt": "x", "schedule": "0 0 31 2 *"}, "never comes due"),
        ({"prompt": "x", "at": "next tuesday"}, "not an ISO 8601 time"),
        ({"prompt": "x", "at": "2030-01-07T00:02:00+00:00"}, "not in the future"),
        ({"prompt": "x", "at": "2030-01-07T01:02:00+02:00"}, "not in the future"),
    ],
)
async def test_the_tool_refuses_a_schedule_it_cannot_keep(
    world: World, args: dict[str, Any], error: str
) -> None:
    with pytest.raises(ToolError, match=error):
        await world.call(action="create", **args)


async def test_an_agent_lists_and_deletes_only_its_own_schedules(world: World) -> None:
    mine = await world.create(schedule="0 9 * * 1-5", prompt="Stand-up notes")
    theirs = await world.call(world.other, action="create", at="2031-01-01T00:00:00Z", prompt="x")
    listed = await world.call(action="list")
    assert [s["id"] for s in listed["schedules"]] == [mine["id"]]
    assert listed["schedules"][0]["prompt"] == "Stand-up notes"
    with pytest.raises(ToolError, match="no schedule with the id"):
        await world.call(action="delete", id=theirs["created"]["id"])
    assert (await world.schedule(theirs["created"]["id"]))["active"] is True
