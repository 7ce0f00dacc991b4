"""`palaver backup`: one consistent snapshot of a running installation in one file.

The database is read inside one snapshot while the nodes keep writing: SQLite is first copied
with `VACUUM INTO` (one read transaction of the live file, about as long as a file copy; a
compact copy without freed pages) into a private file beside the backup, which is then read;
PostgreSQL is read in one `REPEATABLE READ READ ONLY` transaction. Each table is streamed in
batches, in foreign-key order, as lines of canonical values (`archive.py`), with its row count,
checksum, size and sha256 computed from the very bytes written. The uploads are read after the
snapshot, each once, hashed as they are written. Everything goes to `FILE.partial`, which is
renamed to `FILE` only once the zip is complete and on disk: a backup killed half-way leaves no
file that `palaver restore` accepts.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import (
    Column,
    Connection,
    MetaData,
    Table,
    create_engine,
    func,
    inspect,
    literal_column,
    make_url,
    select,
)
from sqlalchemy.exc import SAWarning

from palaver import __version__
from palaver.store import migrate, search_backlog
from palaver.store.archive import (
    CHUNK,
    MANIFEST,
    ColumnEntry,
    FilePart,
    Manifest,
    Progress,
    TablePart,
)
from palaver.store.checksum import TableSum, encode, kind_of
from palaver.store.tables import metadata as declared
from palaver.store.urls import backend, sync_url

BATCH = 1000
"""Rows read and written at a time: the memory bound of a table, whatever its size."""
DERIVED_COLUMNS = {"chunks": {"tsv"}, "vectors": {"embedding"}}
"""PostgreSQL's search columns, derived from other columns of their rows (`chunks.tsv` from the
text, `vectors.embedding` from `vectors.data`) and filled again on restore: left out."""
_ALEMBIC = "alembic_version"
COMPRESS_LEVEL = 3
"""Deflate's level for the table parts: most of the gain of the default 6 at about half its
time. Uploads are stored as they are (mostly images and PDFs, already compressed)."""


class NoSchema(Exception):
    """The source database has no schema, or one from a newer version of Palaver."""


@dataclass(frozen=True)
class BackupReport:
    manifest: Manifest
    path: Path
    size: int
    vanished: list[str]
    """Uploads listed and gone before they were read (erased meanwhile): not in the backup."""


def partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def snapshot_path(out: Path) -> Path:
    return out.with_name(out.name + ".snapshot.partial")


def backup(source_url: str, uploads_dir: Path, out: Path, progress: Progress) -> BackupReport:
    """Write the backup of the database at `source_url` and the files of `uploads_dir` to
    `out`, through `out.partial`."""
    partial = partial_path(out)
    try:
        with open(partial, "wb") as file:
            with _snapshot(source_url, out) as conn:
                revision = migrate.revision_of(conn)
                if revision is None:
                    raise NoSchema("the database has no schema: no Palaver ever ran on it")
                if not migrate.is_known(revision):
                    raise NoSchema(
                        f"the database is at revision {revision}, which this version of Palaver "
                        "does not know: back it up with the version that runs it"
                    )
                zf = zipfile.ZipFile(
                    file, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL
                )
                tables, left_out = _plan(conn)
                parts = _dump(conn, zf, tables, progress)
            files, vanished = _copy_uploads(uploads_dir, zf, progress)
            manifest = Manifest(
                palaver_version=__version__,
                created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                source=backend(source_url),
                revision=revision,
                tables=tuple(parts),
                uploads=tuple(files),
                left_out=tuple(left_out),
            )
            zf.writestr(MANIFEST, manifest.to_json())
            zf.close()
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, out)
        _sync_folder(out.parent)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return BackupReport(manifest, out, out.stat().st_size, vanished)


@contextmanager
def _snapshot(source_url: str, out: Path) -> Iterator[Connection]:
    """A connection that sees one moment of the database for as long as it is open."""
    url = sync_url(source_url)
    if backend(source_url) == "sqlite":
        live = make_url(url).database
        assert live
        copy = snapshot_path(out)
        copy.unlink(missing_ok=True)
        try:
            with closing(sqlite3.connect(live, timeout=30)) as lite:
                lite.execute("VACUUM INTO ?", (str(copy),))
            engine = create_engine(f"sqlite+pysqlite:///{copy}")
            try:
                with engine.connect() as conn:
                    yield conn
            finally:
                engine.dispose()
        finally:
            copy.unlink(missing_ok=True)
        return
    engine = create_engine(url, connect_args={"options": "-c TimeZone=UTC"})
    try:
        with engine.connect() as reading, reading.begin():
            reading.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield reading
    finally:
        engine.dispose()


@dataclass(frozen=True)
class _Dumped:
    table: Table
    ordered_by: list[Any]


def _plan(conn: Connection) -> tuple[list[_Dumped], list[str]]:
    """The tables to back up in foreign-key order, each with its columns and an order to read
    them in; and what is left out as derived (SQLite's full-text tables, PostgreSQL's search
    columns, generated columns)."""
    sqlite = conn.dialect.name == "sqlite"
    left_out: list[str] = []
    rowid_tables: set[str] = set()
    if sqlite:
        names = set()
        for _, name, kind, _, without_rowid, _ in conn.exec_driver_sql("PRAGMA main.table_list"):
            if name.startswith("sqlite_"):
                continue
            if kind in ("virtual", "shadow") or name == search_backlog.MARK_TABLE:
                left_out.append(name)
            elif kind == "table":
                names.add(name)
                if not without_rowid:
                    rowid_tables.add(name)
    else:
        names = set(inspect(conn).get_table_names())
    names.discard(_ALEMBIC)
    reflected = MetaData()
    with warnings.catch_warnings():
        # Types SQLAlchemy does not know (pgvector's) reflect as NullType, with a warning.
        warnings.simplefilter("ignore", SAWarning)
        reflected.reflect(conn, only=sorted(names))
    planned: list[_Dumped] = []
    for table in reflected.sorted_tables:
        known = declared.tables.get(table.name)
        columns: list[Column[Any]] = []
        for column in table.columns:
            if column.computed is not None or column.name in DERIVED_COLUMNS.get(table.name, ()):
                left_out.append(f"{table.name}.{column.name}")
                continue
            own = known.columns.get(column.name) if known is not None else None
            typed = own.type if own is not None else column.type
            columns.append(Column(column.name, typed, primary_key=column.primary_key))
        dumped = Table(table.name, MetaData(), *columns)
        if table.name in rowid_tables:
            order: list[Any] = [literal_column("rowid")]
        else:
            order = [dumped.c[c.name] for c in table.primary_key.columns if c.name in dumped.c]
        planned.append(_Dumped(dumped, order))
    return planned, sorted(left_out)


def _dump(
    conn: Connection, zf: zipfile.ZipFile, tables: list[_Dumped], progress: Progress
) -> list[TablePart]:
    total = sum(
        conn.execute(select(func.count()).select_from(d.table)).scalar_one() for d in tables
    )
    progress.begin(total)
    done = 0
    parts: list[TablePart] = []
    for dumped in tables:
        table = dumped.table
        rows = TableSum(list(table.columns))
        digest = hashlib.sha256()
        size = 0
        name = f"database/{table.name}.jsonl"
        progress.update(done, f"reading {table.name}")
        query = select(table).order_by(*dumped.ordered_by)
        with zf.open(name, "w", force_zip64=True) as member:
            result = conn.execute(query, execution_options={"yield_per": BATCH})
            for batch in result.partitions():
                lines = []
                for row in batch:
                    encoded = _line(rows, row)
                    rows.add_encoded(encoded)
                    lines.append(encoded)
                lines.append(b"")
                data = b"\n".join(lines)
                member.write(data)
                digest.update(data)
                size += len(data)
                done += len(batch)
                progress.update(done, f"reading {table.name}")
        columns = tuple(ColumnEntry(c.name, kind_of(c)) for c in table.columns)
        parts.append(
            TablePart(table.name, columns, rows.rows, rows.hexdigest, size, digest.hexdigest())
        )
    return parts


def _line(rows: TableSum, row: Any) -> bytes:
    return encode(rows.canonical(row))


def _copy_uploads(
    folder: Path, zf: zipfile.ZipFile, progress: Progress
) -> tuple[list[FilePart], list[str]]:
    """Every regular file under `folder`, read once: its size and sha256 are those of the
    bytes written into the backup, whatever happens to the file meanwhile."""
    listed = list(_files_under(folder))
    progress.begin(sum(size for _, _, size in listed), "bytes")
    done = 0
    files: list[FilePart] = []
    vanished: list[str] = []
    for relative, path, _ in listed:
        try:
            source: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            vanished.append(relative)
            continue
        digest = hashlib.sha256()
        size = 0
        with source, zf.open(_stored(f"uploads/{relative}"), "w", force_zip64=True) as member:
            while block := source.read(CHUNK):
                member.write(block)
                digest.update(block)
                size += len(block)
                done += len(block)
                progress.update(done, f"copying uploads/{relative}")
        files.append(FilePart(relative, size, digest.hexdigest()))
    return files, vanished


def _files_under(folder: Path) -> Iterator[tuple[str, Path, int]]:
    """(path relative to `folder`, path, size) of each regular file, in a stable order; not
    hidden ones: an upload still arriving is `.part-*` (`api/multipart.py`) until it is given
    its name, and a stored name never starts with a dot."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = Path(root, name)
            if path.is_symlink() or not path.is_file():
                continue
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            yield path.relative_to(folder).as_posix(), path, size


def _stored(name: str) -> zipfile.ZipInfo:
    """A part kept as it is (a name alone gets the zip's deflate at `COMPRESS_LEVEL`)."""
    info = zipfile.ZipInfo(name, date_time=datetime.now(UTC).timetuple()[:6])
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o640 << 16
    return info


def _sync_folder(folder: Path) -> None:
    """The rename itself on disk, so that a crash after the command ends keeps `FILE`."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
