"""What `palaver migrate-db` says: which databases, one line per table copied, and what stays.

Exit status 0 when every table was copied and verified, 1 when a table's rows or checksum
differ (or the copy failed and was rolled back), 2 when the command was refused before copying
anything: a bad or unreachable URL, no source database, or a target that is not empty.
Database URLs are only ever printed with their password masked.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from palaver.progress import ProgressBar
from palaver.store.copy import (
    Report,
    SchemaNotReached,
    TableCheck,
    TargetNotEmpty,
    migrate_db,
)
from palaver.store.urls import backend, shown, sync_url

FULL_TEXT = ("chunks_fts", "messages_fts")
"""How SQLite's full-text tables are named: the per-agent FTS5 tables of the knowledge base,
the message search table (issue 23), and their shadow tables."""


def migrate_db_command(target: str, source: str | None, data_dir: Path, quiet: bool) -> int:
    """Copy `source` (a SQLite URL; default the data dir's database) into `target`."""
    problem = _refused_target(target)
    if problem is not None:
        return _fail(problem)
    if source is None:
        source = f"sqlite:///{data_dir / 'palaver.db'}"
    try:
        if backend(source) != "sqlite":
            return _fail(f"the database to copy must be SQLite, not {shown(source)} (use --from)")
    except ValueError as exc:
        return _fail(f"--from: {exc}")
    path = make_url(source).database
    if not path or not Path(path).is_file():
        return _fail(f"there is no SQLite database at {path or shown(source)}")

    print(f"Copying {path} into {shown(target)}", flush=True)
    bar = ProgressBar(sys.stderr, enabled=not quiet)
    try:
        report = migrate_db(source, target, bar)
    except TargetNotEmpty as exc:
        return _fail(
            f"{shown(target)} is not empty (table {exc} has rows); migrate-db copies into an "
            "empty database only, so that nothing is merged or overwritten",
            bar,
        )
    except OperationalError as exc:
        return _fail(f"cannot use {shown(target)}: {_reason(exc, target)}", bar)
    except SchemaNotReached as exc:
        return _fail(str(exc).replace(_password(target) or "\0", "***"), bar)
    except DBAPIError as exc:
        _fail(f"the copy failed and was rolled back: {_reason(exc, target)}", bar)
        return 1
    bar.close()
    _print_report(report, data_dir)
    return 0 if report.ok else 1


def _refused_target(target: str) -> str | None:
    try:
        kind = backend(target)
    except ValueError as exc:
        return f"--to: {exc}"
    if kind != "postgresql":
        return "--to takes a PostgreSQL URL: postgresql://user:password@host:port/database"
    return None


def _print_report(report: Report, data_dir: Path) -> None:
    print(f"Schema: both databases at revision {report.revision}.")
    print_checks(report.tables, "PostgreSQL")
    full_text = [name for name in report.sqlite_only if name.startswith(FULL_TEXT)]
    if full_text:
        print(
            f"Not copied, SQLite's own: {len(full_text)} full-text tables "
            "(PostgreSQL's search indexes are built from chunks, vectors and messages)."
        )
    left = [
        *(name for name in report.sqlite_only if not name.startswith(FULL_TEXT)),
        *report.sqlite_only_columns,
    ]
    if left:
        print(f"Not copied, only in SQLite: {', '.join(left)}.")
    if report.postgresql_only or report.postgresql_only_columns:
        kept = [*report.postgresql_only, *report.postgresql_only_columns]
        print(f"Only in PostgreSQL, made by its migrations: {', '.join(kept)}.")
    print(
        "PostgreSQL's search columns (chunks.tsv, vectors.embedding; messages.search_tsv, "
        "generated) derived from the copied "
        f"rows: {report.derived_vectors:,} vectors."
    )
    for reset in report.sequences:
        print(f"Sequence: {reset.table}.{reset.column} continues at {reset.next_value:,}.")
    print(
        f"Uploads are not in the database: they stay on disk in {data_dir / 'uploads'}; "
        "every node needs that folder under its PALAVER_DATA_DIR."
    )
    rows = sum(check.source_rows for check in report.tables)
    if report.ok:
        print(f"Done: {len(report.tables)} tables, {rows:,} rows copied and verified.")
    else:
        bad = ", ".join(check.name for check in report.tables if not check.ok)
        print(f"FAILED verification: {bad}. Do not switch to this database.")


def print_checks(checks: list[TableCheck], target: str) -> None:
    """One line per table: its rows and checksum at the source, and `ok` when `target` (where
    it was copied or restored) read back the same, else what `target` has."""
    width = max((len(check.name) for check in checks), default=0)
    for check in checks:
        verdict = (
            "ok"
            if check.ok
            else (
                f"MISMATCH: {target} has {check.target_rows:,} rows, "
                f"checksum {check.target_sum[:16]}"
            )
        )
        print(
            f"  {check.name:<{width}}  {check.source_rows:>9,} rows  "
            f"checksum {check.source_sum[:16]}  {verdict}"
        )


def _reason(exc: DBAPIError, url: str) -> str:
    """The driver's own words, on one line, without the password should it quote the URL."""
    words = " ".join(str(exc.orig).split())
    password = _password(url)
    return words.replace(password, "***") if password else words


def _password(url: str) -> str | None:
    return make_url(sync_url(url)).password


def _fail(message: str, bar: ProgressBar | None = None) -> int:
    if bar is not None:
        bar.close()
    print(f"palaver: {message}", file=sys.stderr)
    return 2
