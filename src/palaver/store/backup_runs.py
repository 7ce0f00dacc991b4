"""The scheduled backups' runs (tables/backups.py): the newest, its claim and its end."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.ids import new_id
from palaver.store.tables.backups import backup_runs

FIRST = "first"
"""What the first run follows."""
KEPT_RUNS = 100
"""Runs kept in the table (the newest): the page shows only the last; the files are the record."""


@dataclass(frozen=True)
class BackupRun:
    id: str
    node_id: str | None
    started_at: datetime
    finished_at: datetime | None
    status: str
    """running, ok, failed or interrupted."""
    file: str | None
    bytes: int | None
    error: str | None
    duration_ms: int | None


async def newest(conn: AsyncConnection, finished: bool = False) -> BackupRun | None:
    """The run begun last (the last finished one with `finished`)."""
    query = select(backup_runs).order_by(backup_runs.c.started_at.desc(), backup_runs.c.id.desc())
    if finished:
        query = query.where(backup_runs.c.status != "running")
    row = (await conn.execute(query.limit(1))).first()
    if row is None:
        return None
    return BackupRun(
        row.id,
        row.node_id,
        row.started_at,
        row.finished_at,
        row.status,
        row.file,
        row.bytes,
        row.error,
        row.duration_ms,
    )


async def claim(
    conn: AsyncConnection, follows: BackupRun | None, node_id: str, now: datetime, file: str
) -> str:
    """The run after `follows`, begun by this node; IntegrityError when another node's claim
    of it came first."""
    run_id = new_id("backup")
    await conn.execute(
        insert(backup_runs).values(
            id=run_id,
            follows=FIRST if follows is None else follows.id,
            node_id=node_id,
            started_at=now,
            status="running",
            file=file,
        )
    )
    return run_id


async def finish(
    conn: AsyncConnection,
    run_id: str,
    now: datetime,
    status: str,
    size: int | None,
    error: str | None,
    duration_ms: int,
) -> None:
    await conn.execute(
        update(backup_runs)
        .where(backup_runs.c.id == run_id)
        .values(finished_at=now, status=status, bytes=size, error=error, duration_ms=duration_ms)
    )
    kept = select(backup_runs.c.id).order_by(backup_runs.c.started_at.desc()).limit(KEPT_RUNS)
    await conn.execute(delete(backup_runs).where(backup_runs.c.id.not_in(kept)))


async def interrupt(conn: AsyncConnection, which: ColumnElement[bool] | None, now: datetime) -> int:
    """Store the running backups `which` selects (all with None) as interrupted: their node
    stopped or died before they ended. Answers how many."""
    query = update(backup_runs).where(backup_runs.c.status == "running")
    if which is not None:
        query = query.where(which)
    done = await conn.execute(
        query.values(
            finished_at=now,
            status="interrupted",
            error="the node making it stopped before it ended",
        )
    )
    return done.rowcount or 0
