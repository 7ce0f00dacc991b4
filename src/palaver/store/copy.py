"""`palaver migrate-db`: copy a SQLite installation into an empty PostgreSQL database.

The target is checked empty first, then brought to the migrations' head by Alembic, as
`palaver serve` would; the copy needs no schema of its own. Tables are copied in foreign-key
order, in batches streamed from SQLite, all in one PostgreSQL transaction, so a copy that fails
leaves an empty schema behind and can simply be run again. Only tables and columns present on
both sides are copied: SQLite's full-text tables (FTS5 and their shadow tables) have no
counterpart on PostgreSQL, whose search index derives what it needs from `chunks` and `vectors`
(see docs/SCALING.md, "Moving from SQLite"). Each table is then read back from PostgreSQL and
compared with the source by row count and checksum (`palaver.store.checksum`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from alembic.script import ScriptDirectory
from alembic.util import CommandError
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
    literal,
    select,
    text,
)
from sqlalchemy import (
    table as table_named,
)
from sqlalchemy.exc import DBAPIError, SAWarning

from palaver.knowledge.index.postgres import fill_search_columns
from palaver.store import migrate
from palaver.store.checksum import TableSum
from palaver.store.tables import metadata as declared
from palaver.store.urls import shown, sync_url

BATCH = 1000
"""Rows read from SQLite and inserted into PostgreSQL at a time: the copy's memory bound."""
_ALEMBIC = "alembic_version"


class Progress(Protocol):
    def begin(self, total: int) -> None:
        """A stage over `total` rows begins: the copy, then the verification."""

    def update(self, done: int, label: str) -> None:
        """`done` rows are copied so far; the table being copied is `label`."""


class TargetNotEmpty(Exception):
    """The target database already holds rows; the copy never merges into existing data."""


class SchemaNotReached(Exception):
    """A database could not be brought to the migrations' head (an unknown revision, a missing
    privilege or extension); nothing has been copied yet."""

    def __init__(self, where: str, cause: Exception) -> None:
        reason = " ".join(str(getattr(cause, "orig", None) or cause).split())
        super().__init__(f"cannot bring {where} to this version's schema: {reason}")


@dataclass(frozen=True)
class TableCheck:
    """One copied table: its rows and checksum in SQLite and, read back, in PostgreSQL."""

    name: str
    source_rows: int
    source_sum: str
    target_rows: int
    target_sum: str

    @property
    def ok(self) -> bool:
        return (self.source_rows, self.source_sum) == (self.target_rows, self.target_sum)


@dataclass(frozen=True)
class SequenceReset:
    table: str
    column: str
    next_value: int


@dataclass(frozen=True)
class Report:
    revision: str
    tables: list[TableCheck]
    sqlite_only: list[str]
    """Tables left behind: SQLite's own (full-text indexes and their shadow tables)."""
    postgresql_only: list[str]
    """Tables only the target has, left as its migrations made them."""
    postgresql_only_columns: list[str]
    """`table.column` the target has and the source has not, left to their defaults."""
    sqlite_only_columns: list[str]
    """`table.column` the source has and the target has not: not copied, and said so."""
    sequences: list[SequenceReset]
    derived_vectors: int
    """Vectors given their pgvector column from the copied bytes (`fill_search_columns`)."""

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.tables)


def first_table_with_rows(engine: Engine) -> str | None:
    """The name of a table of `engine`'s database that holds a row (Alembic's own aside)."""
    with engine.connect() as conn:
        for name in sorted(inspect(conn).get_table_names()):
            if name == _ALEMBIC:
                continue
            found = conn.execute(select(literal(1)).select_from(table_named(name)).limit(1)).first()
            if found is not None:
                return name
    return None


def head_revision() -> str:
    head = ScriptDirectory(str(migrate.MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def migrate_db(source_url: str, target_url: str, progress: Progress) -> Report:
    """Copy the SQLite database at `source_url` into the empty PostgreSQL one at `target_url`.

    Raises `TargetNotEmpty` before changing anything when the target holds a row. Both
    databases are brought to the migrations' head first (the source as its next
    `palaver serve` would)."""
    target = create_engine(sync_url(target_url), connect_args={"options": "-c TimeZone=UTC"})
    # The driver's own transaction handling off, so that BEGIN below opens a read snapshot.
    source = create_engine(sync_url(source_url), connect_args={"isolation_level": None})
    try:
        busy = first_table_with_rows(target)
        if busy is not None:
            raise TargetNotEmpty(busy)
        for url in (source_url, target_url):
            try:
                migrate.upgrade(url)
            except (CommandError, DBAPIError) as exc:
                raise SchemaNotReached(shown(url), exc) from exc
        plan = _plan(source, target)
        with source.connect() as reading:
            # One snapshot of the file for the count and every table, should a node still write.
            reading.exec_driver_sql("BEGIN")
            rows = _count_rows(reading, plan.tables)
            progress.begin(rows)
            sums = _copy(reading, target, plan.tables, progress)
        with target.begin() as conn:
            sequences = advance_sequences(conn, plan.tables)
            derived = fill_search_columns(conn)
        progress.begin(rows)
        checks = _verify(target, plan.tables, sums, progress)
    finally:
        source.dispose()
        target.dispose()
    return Report(
        revision=head_revision(),
        tables=checks,
        sqlite_only=plan.sqlite_only,
        postgresql_only=plan.postgresql_only,
        postgresql_only_columns=plan.postgresql_only_columns,
        sqlite_only_columns=plan.sqlite_only_columns,
        sequences=sequences,
        derived_vectors=derived,
    )


@dataclass(frozen=True)
class _Plan:
    tables: list[Table]
    sqlite_only: list[str]
    postgresql_only: list[str]
    postgresql_only_columns: list[str]
    sqlite_only_columns: list[str]


def _plan(source: Engine, target: Engine) -> _Plan:
    """The tables to copy, in foreign-key order, each holding the columns both sides have.

    A column's type is the one `palaver.store.tables` declares (so that times, JSON and
    booleans read from SQLite as the app reads them), or else the target's own."""
    with source.connect() as conn:
        source_inspector = inspect(conn)
        source_tables = set(source_inspector.get_table_names())
        source_columns = {
            name: {col["name"] for col in source_inspector.get_columns(name)}
            for name in source_tables
        }
    reflected = MetaData()
    with target.connect() as conn, warnings.catch_warnings():
        # Types SQLAlchemy does not know (pgvector's) reflect as NullType, with a warning.
        warnings.simplefilter("ignore", SAWarning)
        target_tables = set(inspect(conn).get_table_names())
        common = sorted((source_tables & target_tables) - {_ALEMBIC})
        reflected.reflect(conn, only=common)
    tables: list[Table] = []
    extra_columns: list[str] = []
    missing_columns: list[str] = []
    for table in reflected.sorted_tables:
        if table.name not in common:
            continue  # reflected only as the target of a foreign key
        known = declared.tables.get(table.name)
        columns: list[Column[Any]] = []
        for column in table.columns:
            if column.name not in source_columns[table.name] or column.computed is not None:
                if column.computed is None:
                    extra_columns.append(f"{table.name}.{column.name}")
                continue
            own = known.columns.get(column.name) if known is not None else None
            typed = own.type if own is not None else column.type
            columns.append(Column(column.name, typed, primary_key=column.primary_key))
        missing_columns += [
            f"{table.name}.{name}"
            for name in sorted(source_columns[table.name] - set(table.columns.keys()))
        ]
        tables.append(Table(table.name, MetaData(), *columns))
    return _Plan(
        tables=tables,
        sqlite_only=sorted(source_tables - target_tables - {_ALEMBIC}),
        postgresql_only=sorted(target_tables - source_tables - {_ALEMBIC}),
        postgresql_only_columns=extra_columns,
        sqlite_only_columns=missing_columns,
    )


def _count_rows(reading: Connection, tables: list[Table]) -> int:
    return sum(
        reading.execute(select(func.count()).select_from(table)).scalar_one() for table in tables
    )


def _copy(
    reading: Connection, target: Engine, tables: list[Table], progress: Progress
) -> dict[str, TableSum]:
    sums: dict[str, TableSum] = {}
    done = 0
    with target.begin() as writing:
        for table in tables:
            total = TableSum(list(table.columns))
            progress.update(done, f"copying {table.name}")
            result = reading.execution_options(yield_per=BATCH).execute(select(table))
            for rows in result.partitions():
                writing.execute(insert(table), [row._asdict() for row in rows])
                total.add(rows)
                done += len(rows)
                progress.update(done, f"copying {table.name}")
            sums[table.name] = total
    return sums


def advance_sequences(conn: Connection, tables: list[Table]) -> list[SequenceReset]:
    """Set each serial or identity column's sequence past the largest value copied, so that
    the next row PostgreSQL numbers does not collide with a copied one."""
    advanced: list[SequenceReset] = []
    preparer = conn.dialect.identifier_preparer
    for table in tables:
        for column in table.columns:
            owned = conn.execute(
                text("SELECT pg_get_serial_sequence(:table, :column)"),
                {"table": preparer.quote(table.name), "column": column.name},
            ).scalar_one()
            if owned is None:
                continue
            largest = conn.execute(select(func.max(table.c[column.name]))).scalar_one()
            conn.execute(
                text("SELECT setval(:sequence, :value, :called)"),
                {"sequence": owned, "value": largest or 1, "called": largest is not None},
            )
            next_value = largest + 1 if largest is not None else 1
            advanced.append(SequenceReset(table.name, column.name, next_value))
    return advanced


def _verify(
    target: Engine, tables: list[Table], sums: dict[str, TableSum], progress: Progress
) -> list[TableCheck]:
    """Read every copied table back from PostgreSQL and checksum it as its source was."""
    checks: list[TableCheck] = []
    done = 0
    with target.connect() as conn:
        for table in tables:
            copied = TableSum(list(table.columns))
            result = conn.execution_options(yield_per=BATCH).execute(select(table))
            for rows in result.partitions():
                copied.add(rows)
                done += len(rows)
                progress.update(done, f"verifying {table.name}")
            counted = conn.execute(select(func.count()).select_from(table)).scalar_one()
            source_sum = sums[table.name]
            checks.append(
                TableCheck(
                    name=table.name,
                    source_rows=source_sum.rows,
                    source_sum=source_sum.hexdigest,
                    target_rows=counted,
                    target_sum=copied.hexdigest,
                )
            )
    return checks
