"""The backup schedule (`settings.backups`): every node looks, one makes each backup.

Each node's runner finds the newest run and, when the next is due (`every` after the last one
began, at most 10 minutes after a failed one; at once when there is none, or when the last was
interrupted), claims it: a `backup_runs` row that names the run before it, unique, so that of
the nodes finding the same backup due, one wins and the others fail on the key. The winner
makes the backup with the code of `palaver backup` (one snapshot, streamed, `FILE.partial` then
renamed) on a thread, records its result, and removes the oldest scheduled backups beyond
`keep`. A run carries its node's id as its lease: a node that dies making one has it stored as
interrupted by the sweeper (at a start when alone), and the next is due at once. A failure (a
folder that cannot be written, a database that cannot be read) is recorded, logged and shown to
the owner; the loop goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError, IntegrityError

from palaver.domain import iso
from palaver.services import Services
from palaver.settings import BackupSchedule, every_seconds
from palaver.store import backup_runs as runs_store
from palaver.store.backup_files import listed, name_for, prune
from palaver.store.backup_runs import BackupRun
from palaver.store.tables.base import utcnow

log = logging.getLogger(__name__)

LOOK_SECONDS = 30.0
"""The runner looks at the schedule at least this often (a change of settings wakes it too)."""
MIN_SLEEP = 0.05
RETRY_AFTER_ERROR = 5.0
RETRY_FAILED = timedelta(minutes=10)
"""A backup that failed is tried again this long after it began, if `every` is longer."""
STOP_WAIT_SECONDS = 30.0
"""How long a node's stop waits for a backup it is making to give up."""


class _Stopped(Exception):
    """The node is stopping: the backup gives up (its `.partial` removed)."""


class _Failed(Exception):
    """A backup that could not be made, with the reason the owner is shown."""


@dataclass
class _Pending:
    """A run's result that could not be recorded yet (the database was away)."""

    run_id: str
    status: str
    size: int | None
    error: str | None
    duration_ms: int
    finished_at: datetime


class _Stoppable:
    """The backup's progress, which makes it give up when the node stops."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop

    def begin(self, total: int, unit: str = "rows") -> None:
        self.update(0, unit)

    def update(self, done: int, label: str) -> None:
        if self._stop.is_set():
            raise _Stopped


def due_after(last: BackupRun | None, every: timedelta, now: datetime) -> datetime:
    """When the backup after `last` is due: `every` after it began; sooner after a failure
    (the owner may have fixed the folder meanwhile); at once after none or an interruption."""
    if last is None or last.status == "interrupted":
        return now
    if last.status == "failed":
        return last.started_at + min(every, RETRY_FAILED)
    return last.started_at + every


class BackupRunner:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        self._wake = asyncio.Event()
        self._stop = threading.Event()
        self._task: asyncio.Task[None] | None = None
        self._pending: _Pending | None = None

    @property
    def schedule(self) -> BackupSchedule:
        return self.svc.settings.current.backups

    def folder(self) -> Path:
        """Where the backups go: the setting's folder, else `<data dir>/backups`."""
        chosen = self.schedule.dir
        return Path(chosen) if chosen else self.svc.config.data_dir / "backups"

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="backup-schedule")

    def wake(self) -> None:
        """Look again now: the schedule changed."""
        self._wake.set()

    async def aclose(self) -> None:
        """Stop looking; a backup being made gives up and is recorded as interrupted."""
        if self._task is None:
            return
        self._stop.set()
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), STOP_WAIT_SECONDS)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                delay = await self.tick()
            except Exception:
                log.exception("the backup schedule failed; trying again in %g s", RETRY_AFTER_ERROR)
                delay = RETRY_AFTER_ERROR
            if self._stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def tick(self) -> float:
        """Make the backup if it is due and this node claims it; answers how long to sleep."""
        if self._pending is not None:
            await self._record(self._pending)
        schedule = self.schedule
        if schedule.every is None:
            return LOOK_SECONDS
        every = timedelta(seconds=every_seconds(schedule.every))
        async with self.svc.db.read() as conn:
            last = await runs_store.newest(conn)
        now = utcnow()
        if last is not None and last.status == "running":
            # Another node is on it, or its node died and the sweeper will say so.
            return min(every.total_seconds(), LOOK_SECONDS)
        due = due_after(last, every, now)
        if due > now:
            return min(max((due - now).total_seconds(), MIN_SLEEP), LOOK_SECONDS)
        run_id = await self._claim(last, now)
        if run_id is None:
            return MIN_SLEEP
        await self._make(run_id, now, schedule)
        return MIN_SLEEP

    async def _claim(self, last: BackupRun | None, now: datetime) -> str | None:
        name = name_for(now)
        try:
            async with self.svc.db.write() as tx:
                current = await runs_store.newest(tx.conn)
                if (current and current.id) != (last and last.id):
                    return None
                return await runs_store.claim(tx.conn, last, self.svc.node_id, now, name)
        except IntegrityError:
            log.debug("the backup after %s was claimed by another node", last and last.id)
            return None

    async def _make(self, run_id: str, began: datetime, schedule: BackupSchedule) -> None:
        config = self.svc.config
        folder = self.folder()
        out = folder / name_for(began)
        clock = time.monotonic()
        size: int | None = None
        error: str | None = None
        status = "ok"
        try:
            size, removed = await asyncio.to_thread(
                _write, config.db_url, config.uploads_dir, out, schedule.keep, self._stop
            )
        except _Stopped:
            status, error = "interrupted", "the node making it stopped before it ended"
        except _Failed as exc:
            status, error = "failed", str(exc)
        except Exception as exc:
            log.exception("the scheduled backup %s failed", out)
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            removed_text = f"; removed {', '.join(removed)}" if removed else ""
            log.info("scheduled backup %s written (%d bytes)%s", out, size, removed_text)
        if error is not None:
            log.warning("the scheduled backup %s was not made: %s", out, error)
        duration_ms = round((time.monotonic() - clock) * 1000)
        await self._record(_Pending(run_id, status, size, error, duration_ms, utcnow()))

    async def _record(self, result: _Pending) -> None:
        self._pending = result
        async with self.svc.db.write() as tx:
            await runs_store.finish(
                tx.conn,
                result.run_id,
                result.finished_at,
                result.status,
                result.size,
                result.error,
                result.duration_ms,
            )
        self._pending = None

    async def status(self) -> dict[str, Any]:
        """What `GET /api/backups` answers."""
        schedule = self.schedule
        async with self.svc.db.read() as conn:
            newest = await runs_store.newest(conn)
            last = await runs_store.newest(conn, finished=True)
        folder = self.folder()
        files = await asyncio.to_thread(listed, folder)
        following: str | None = None
        if schedule.every is not None:
            every = timedelta(seconds=every_seconds(schedule.every))
            following = iso(due_after(newest, every, utcnow()))
        running = newest if newest is not None and newest.status == "running" else None
        return {
            "settings": schedule.model_dump(mode="json"),
            "folder": str(folder),
            "running": None
            if running is None
            else {"at": iso(running.started_at), "file": running.file, "node": running.node_id},
            "last": None if last is None else _shown(last),
            "next": following,
            "files": [{"name": f.name, "bytes": f.bytes, "at": iso(f.at)} for f in files],
        }


def _shown(run: BackupRun) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "at": iso(run.started_at),
        "finishedAt": None if run.finished_at is None else iso(run.finished_at),
        "status": run.status,
        "ok": run.status == "ok",
        "file": run.file,
        "bytes": run.bytes,
        "durationMs": run.duration_ms,
        "node": run.node_id,
    }
    if run.error is not None:
        shown["error"] = run.error
    return shown


def _write(
    source_url: str, uploads: Path, out: Path, keep: int, stop: threading.Event
) -> tuple[int, list[str]]:
    """On a thread: the backup into `out` as `palaver backup` makes it, then the pruning of
    the folder. Raises _Failed with a reason fit for the owner (never a password)."""
    # Here, not at the top: the backup code brings Alembic and numpy (through the database
    # copy's PostgreSQL index), which a server that is not making a backup does without.
    from palaver.store.backup import NoSchema, backup
    from palaver.store.backup_command import reason

    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _Failed(f"cannot make the folder {folder}: {exc.strerror or exc}") from None
    if out.exists():
        raise _Failed(f"{out} exists; a backup never overwrites a file")
    try:
        report = backup(source_url, uploads, out, _Stoppable(stop))
    except NoSchema as exc:
        raise _Failed(str(exc)) from None
    except sqlite3.Error as exc:
        raise _Failed(f"the database could not be copied: {exc}") from None
    except DBAPIError as exc:
        raise _Failed(f"the database could not be read: {reason(exc, source_url)}") from None
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise _Failed(f"cannot write{where}: {exc.strerror or exc}") from None
    try:
        removed = prune(folder, keep)
    except OSError as exc:
        log.warning("could not remove old backups from %s: %s", folder, exc.strerror or exc)
        removed = []
    return report.size, removed
