"""The settings a node holds in memory follow the database: a reload (told by the bus that some
node changed them) must never put back what this node's own change replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.actions.settings import SettingsHolder
from palaver.bus.inproc import InProcessBus
from palaver.settings import Settings
from palaver.store import migrate, settings_store
from palaver.store.audit import Actor
from palaver.store.db import Database

OWNER = Actor("user_owner", None, "node-a")


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'palaver.db'}"
    migrate.upgrade(url)
    database = Database(url)
    yield database
    await database.dispose()


async def test_a_reload_read_before_a_change_does_not_undo_it_in_memory(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = SettingsHolder(db, InProcessBus())
    real_load = settings_store.load
    read = asyncio.Event()
    release = asyncio.Event()
    paused = False

    async def load(conn: AsyncConnection) -> Settings:
        """The first load (the reload's) reads, then waits before it hands its answer back."""
        nonlocal paused
        settings = await real_load(conn)
        if not paused:
            paused = True
            read.set()
            await release.wait()
        return settings

    monkeypatch.setattr(settings_store, "load", load)
    reload = asyncio.create_task(holder.reload())
    await read.wait()
    patch = {"providers": {"local-llm": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1"}}}
    update = asyncio.create_task(holder.update(patch, OWNER))
    await asyncio.sleep(0.2)
    release.set()
    await asyncio.gather(reload, update)
    assert "local-llm" in holder.current.providers
    async with db.read() as conn:
        assert "local-llm" in (await real_load(conn)).providers
