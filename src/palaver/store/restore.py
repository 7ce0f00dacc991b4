"""`palaver restore`: a backup into an empty data dir, or an empty database, or both.

Nothing is written before every part of the backup has been checked against its manifest
(`archive.verify`). The database is then built in one transaction, on PostgreSQL the target's
own and on SQLite a private file beside the target: the schema at the backup's revision, the
rows table by table in foreign-key order, a read-back compared with the manifest's counts and
checksums, the schema brought to this version's head, the derived data rebuilt (SQLite's
full-text tables, PostgreSQL's search columns and sequences). The uploads are written to a
private folder in the data dir and read back. Only when all of it checks out do they take
their places (a rename each) and the transaction commit; on any failure they are removed and
the transaction rolled back, and the target is as empty as it was found.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    Table,
    create_engine,
    func,
    insert,
    inspect,
    make_url,
    select,
    text,
)
from sqlalchemy.exc import SAWarning

from palaver.store import migrate, search_backlog
from palaver.store.archive import (
    CHUNK,
    Damaged,
    FilePart,
    Manifest,
    Progress,
    TablePart,
    open_backup,
    reading,
    verify,
)
from palaver.store.checksum import TableSum
from palaver.store.copy import (
    SequenceReset,
    TableCheck,
    advance_sequences,
    first_table_with_rows,
    head_revision,
)
from palaver.store.tables import metadata as declared
from palaver.store.tables.knowledge import fts_ddl, fts_table
from palaver.store.urls import backend, sync_url

BATCH = 1000
"""Rows inserted at a time: the memory bound of a table, whatever its size."""


class Refused(Exception):
    """The restore was refused before anything was written (status 2)."""


class Failed(Exception):
    """The restore failed while writing and was undone (status 1)."""


@dataclass(frozen=True)
class RestoreReport:
    manifest: Manifest
    target: str
    """`sqlite` or `postgresql`."""
    tables: list[TableCheck]
    head: str
    files: int
    file_bytes: int
    uploads_dir: Path
    sequences: list[SequenceReset]
    derived_vectors: int
    full_text_agents: int

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.tables)


class Mismatch(Exception):
    """What the target read back differs from the manifest: undone, with the checks to show."""

    def __init__(self, checks: list[TableCheck]) -> None:
        super().__init__(", ".join(check.name for check in checks if not check.ok))
        self.checks = checks


def restore(archive: Path, target_url: str, uploads_dir: Path, progress: Progress) -> RestoreReport:
    """Restore the backup `archive` into the database at `target_url` and `uploads_dir`."""
    with open(archive, "rb") as file:
        zf, manifest = open_backup(file)
        with zf:
            if not migrate.is_known(manifest.revision):
                raise Refused(
                    f"the backup's schema is at revision {manifest.revision}, which this version "
                    "of Palaver does not know: restore it with the version that made it, or a "
                    "later one"
                )
            _refuse_unless_empty(target_url, uploads_dir)
            verify(zf, manifest, progress)
            return _write(zf, manifest, target_url, uploads_dir, progress)


def _refuse_unless_empty(target_url: str, uploads_dir: Path) -> None:
    if backend(target_url) == "sqlite":
        path = _sqlite_path(target_url)
        for taken in (path, *_sqlite_companions(path)):
            if taken.exists() and (taken.is_dir() or taken.stat().st_size > 0):
                raise Refused(
                    f"{taken} exists; restore writes into an empty data dir only, so that "
                    "nothing is merged or overwritten"
                )
    else:
        engine = _engine(target_url)
        try:
            busy = first_table_with_rows(engine)
        finally:
            engine.dispose()
        if busy is not None:
            raise Refused(
                f"the database is not empty (table {busy} has rows); restore writes into an "
                "empty database only, so that nothing is merged or overwritten"
            )
    found = uploads_dir if uploads_dir.exists() and not uploads_dir.is_dir() else None
    found = found or next((p for p in uploads_dir.rglob("*") if not p.is_dir()), None)
    if found is not None:
        raise Refused(
            f"{uploads_dir} is not empty ({found.relative_to(uploads_dir.parent)} is there); "
            "restore writes into an empty data dir only, so that nothing is merged or overwritten"
        )


def _write(
    zf: zipfile.ZipFile,
    manifest: Manifest,
    target_url: str,
    uploads_dir: Path,
    progress: Progress,
) -> RestoreReport:
    undo: list[Callable[[], None]] = []
    data_dir = uploads_dir.parent
    if not data_dir.exists():
        data_dir.mkdir(parents=True)
        undo.append(lambda: _remove_if_empty(data_dir))
    staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=data_dir))
    try:
        staged_uploads = staging / "uploads"
        files, size = _write_uploads(zf, manifest.uploads, staged_uploads, progress)
        if backend(target_url) == "sqlite":
            target = _sqlite_path(target_url)
            target.parent.mkdir(parents=True, exist_ok=True)
            staged_db = (
                staging / target.name
                if target.parent == data_dir
                else Path(tempfile.mkdtemp(prefix=".restore-", dir=target.parent)) / target.name
            )
            undo.append(lambda: shutil.rmtree(staged_db.parent, ignore_errors=True))
            engine = create_engine(f"sqlite+pysqlite:///{staged_db}")
        else:
            engine = _engine(target_url)
        try:
            with engine.connect() as conn, conn.begin():
                built = _build(conn, zf, manifest, progress)
                _move_into_place(staged_uploads, uploads_dir)
                undo.append(lambda: shutil.rmtree(uploads_dir, ignore_errors=True))
                # Leaving the block commits the transaction (PostgreSQL: the restore).
        finally:
            engine.dispose()
        if backend(target_url) == "sqlite":
            for companion in _sqlite_companions(target):
                companion.unlink(missing_ok=True)
            os.replace(staged_db, target)
            undo.append(lambda: target.unlink(missing_ok=True))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for step in reversed(undo):
            step()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if backend(target_url) == "sqlite" and target.parent != data_dir:
        shutil.rmtree(staged_db.parent, ignore_errors=True)
    checks, sequences, derived, agents = built
    return RestoreReport(
        manifest=manifest,
        target=backend(target_url),
        tables=checks,
        head=head_revision(),
        files=files,
        file_bytes=size,
        uploads_dir=uploads_dir,
        sequences=sequences,
        derived_vectors=derived,
        full_text_agents=agents,
    )


def _build(
    conn: Connection, zf: zipfile.ZipFile, manifest: Manifest, progress: Progress
) -> tuple[list[TableCheck], list[SequenceReset], int, int]:
    """Schema, rows, read-back, head, derived data: all inside the transaction of `conn`."""
    migrate.upgrade_on(conn, manifest.revision)
    tables = _target_tables(conn, manifest)
    progress.begin(sum(t.rows for t in manifest.tables))
    done = 0
    for part in manifest.tables:
        done = _insert(conn, zf, part, tables[part.name], progress, done)
    sqlite = conn.dialect.name == "sqlite"
    if sqlite:
        broken = conn.exec_driver_sql("PRAGMA foreign_key_check").first()
        if broken is not None:
            raise Failed(f"a row of {broken[0]} refers to a row of {broken[2]} that is not there")
    checks = _read_back(conn, manifest, tables, progress)
    if not all(check.ok for check in checks):
        raise Mismatch(checks)
    sequences = [] if sqlite else advance_sequences(conn, list(tables.values()))
    migrate.upgrade_on(conn, "head")
    if sqlite:
        search_backlog.index_all(conn)
        return checks, sequences, 0, _rebuild_full_text(conn)
    from palaver.knowledge.index.postgres import fill_search_columns

    return checks, sequences, fill_search_columns(conn), 0


def _target_tables(conn: Connection, manifest: Manifest) -> dict[str, Table]:
    """The target's tables as the backup fills them: its columns, typed as the app declares
    them (else as reflected); a table or column the target lacks means the backup does not
    fit this schema."""
    reflected = MetaData()
    names = [t.name for t in manifest.tables]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        present = set(inspect(conn).get_table_names())
        missing = [name for name in names if name not in present]
        if missing:
            raise Failed(
                f"table {missing[0]} of the backup is not in the schema at revision "
                f"{manifest.revision}"
            )
        reflected.reflect(conn, only=names)
    tables: dict[str, Table] = {}
    for part in manifest.tables:
        target = reflected.tables[part.name]
        known = declared.tables.get(part.name)
        columns: list[Column[Any]] = []
        for entry in part.columns:
            if entry.name not in target.c:
                raise Failed(
                    f"column {part.name}.{entry.name} of the backup is not in the schema at "
                    f"revision {manifest.revision}"
                )
            own = known.columns.get(entry.name) if known is not None else None
            typed = own.type if own is not None else target.c[entry.name].type
            columns.append(Column(entry.name, typed, primary_key=target.c[entry.name].primary_key))
        tables[part.name] = Table(part.name, MetaData(), *columns)
    return tables


def _identity(value: Any) -> Any:
    return value


_DECODE: dict[str, Callable[[Any], Any]] = {
    "time": lambda value: value if value is None else datetime.fromisoformat(value),
    "date": lambda value: value if value is None else date.fromisoformat(value),
    "json": lambda value: value if value is None else json.loads(value),
    "bool": _identity,
    "bytes": lambda value: value if value is None else bytes.fromhex(value),
    "plain": _identity,
}
"""From a line's canonical values back to what the column takes (`checksum.normalizer`)."""


def _insert(
    conn: Connection,
    zf: zipfile.ZipFile,
    part: TablePart,
    table: Table,
    progress: Progress,
    done: int,
) -> int:
    names = [c.name for c in part.columns]
    decoders = [_DECODE[c.kind] for c in part.columns]
    batch: list[dict[str, Any]] = []
    statement = insert(table)
    with reading(zf, part.part) as member:
        for line in member:
            try:
                values = json.loads(line)
                row = {n: d(v) for n, d, v in zip(names, decoders, values, strict=True)}
            except (ValueError, TypeError) as exc:
                raise Damaged(part.part, f"a row cannot be read ({exc})") from exc
            batch.append(row)
            if len(batch) == BATCH:
                conn.execute(statement, batch)
                done += len(batch)
                batch = []
                progress.update(done, f"writing {part.name}")
        if batch:
            conn.execute(statement, batch)
            done += len(batch)
    return done


def _read_back(
    conn: Connection, manifest: Manifest, tables: dict[str, Table], progress: Progress
) -> list[TableCheck]:
    checks: list[TableCheck] = []
    progress.begin(sum(t.rows for t in manifest.tables))
    done = 0
    for part in manifest.tables:
        table = tables[part.name]
        found = TableSum(list(table.columns))
        result = conn.execute(select(table), execution_options={"yield_per": BATCH})
        for rows in result.partitions():
            found.add(rows)
            done += len(rows)
            progress.update(done, f"verifying {part.name}")
        counted = conn.execute(select(func.count()).select_from(table)).scalar_one()
        checks.append(TableCheck(part.name, part.rows, part.checksum, counted, found.hexdigest))
    return checks


def _rebuild_full_text(conn: Connection) -> int:
    """SQLite's per-agent full-text tables over `chunks`, as the knowledge index makes them with
    an agent's first document. (`messages_fts` needs nothing more: its triggers, the migration
    that made it, or `search_backlog.index_all` just before have indexed each message.) Not
    FTS5's 'rebuild', which would read every agent's chunks into each agent's table."""
    agents = conn.execute(text("SELECT DISTINCT agent_id FROM chunks ORDER BY 1")).scalars().all()
    for agent_id in agents:
        for statement in fts_ddl(agent_id):
            conn.exec_driver_sql(statement)
        table = fts_table(agent_id)
        conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('delete-all')")  # noqa: S608
        conn.execute(
            text(
                f"INSERT INTO {table}(rowid, context, content) "  # noqa: S608 - a made name
                "SELECT seq, context, content FROM chunks WHERE agent_id = :agent"
            ),
            {"agent": agent_id},
        )
    return len(agents)


def _write_uploads(
    zf: zipfile.ZipFile, uploads: tuple[FilePart, ...], folder: Path, progress: Progress
) -> tuple[int, int]:
    """Write each upload under `folder`, then read each back: what is on disk must be what
    the manifest says (the backup's bytes were checked before; this checks the writing)."""
    folder.mkdir()
    total = sum(f.size for f in uploads)
    progress.begin(total, "bytes")
    done = 0
    for upload in uploads:
        path = folder / upload.path
        path.parent.mkdir(parents=True, exist_ok=True)
        with reading(zf, upload.part) as member, open(path, "wb") as out:
            while block := member.read(CHUNK):
                out.write(block)
                done += len(block)
                progress.update(done, f"writing {upload.part}")
            out.flush()
            os.fsync(out.fileno())
    progress.begin(total, "bytes")
    done = 0
    for upload in uploads:
        digest = hashlib.sha256()
        size = 0
        with open(folder / upload.path, "rb") as written:
            while block := written.read(CHUNK):
                digest.update(block)
                size += len(block)
                done += len(block)
                progress.update(done, f"verifying {upload.part}")
        if (size, digest.hexdigest()) != (upload.size, upload.sha256):
            raise Failed(f"{upload.part} reads back differently from what was written")
    return len(uploads), total


def _move_into_place(staged: Path, uploads_dir: Path) -> None:
    if uploads_dir.exists():
        shutil.rmtree(uploads_dir)  # empty folders only: checked before anything was written
    os.replace(staged, uploads_dir)


def _remove_if_empty(folder: Path) -> None:
    with suppress(OSError):
        folder.rmdir()


def _engine(url: str) -> Engine:
    return create_engine(sync_url(url), connect_args={"options": "-c TimeZone=UTC"})


def _sqlite_path(url: str) -> Path:
    database = make_url(sync_url(url)).database
    if not database:
        raise Refused("the SQLite URL names no file")
    return Path(database).resolve()


def _sqlite_companions(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]
