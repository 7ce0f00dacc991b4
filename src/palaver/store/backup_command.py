"""What `palaver backup` and `palaver restore` say, and their exit statuses (as migrate-db's).

backup: 0 written, 1 failed (nothing left behind), 2 refused before starting (no database, a
bad URL, an output file that exists). restore: 0 restored and verified, 1 a damaged backup or a
failure while writing (the target left as empty as it was found), 2 refused before anything
was written (not a backup, an unfinished one, a target that is not empty, a schema from a newer
version, a bad URL). Database URLs are only ever printed with their password masked.
"""

from __future__ import annotations

import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from palaver.progress import ProgressBar
from palaver.store.archive import Damaged, NotABackup
from palaver.store.backup import BackupReport, NoSchema, backup
from palaver.store.backup_files import STALE_PARTIAL_SECONDS
from palaver.store.migrate_db_command import FULL_TEXT, print_checks
from palaver.store.restore import Failed, Mismatch, Refused, RestoreReport, restore
from palaver.store.urls import backend, shown, sync_url

NAME_PREFIX = "palaver-"
_OURS = re.compile(r"^palaver-\d{8}-\d{6}\.zip$")
_OURS_PARTIAL = re.compile(r"^palaver-\d{8}-\d{6}\.zip\.(snapshot\.)?partial$")
"""The names `--dir` gives; only these are rotated (the in-app schedule's are its own)."""


def default_database(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'palaver.db'}"


def backup_command(
    data_dir: Path,
    database_url: str | None,
    out: Path | None,
    into: Path | None,
    keep: int | None,
    quiet: bool,
) -> int:
    source = database_url or default_database(data_dir)
    try:
        kind = backend(source)
    except ValueError as exc:
        return _fail(f"DATABASE_URL: {exc}")
    if kind == "sqlite":
        path = make_url(sync_url(source)).database
        if not path or not Path(path).is_file():
            return _fail(f"there is no SQLite database at {path or shown(source)}")
    if into is not None:
        try:
            into.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return _fail(f"cannot make {into}: {exc.strerror}")
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        out = into / f"{NAME_PREFIX}{stamp}.zip"
    assert out is not None
    out = out.resolve()
    if out.exists():
        return _fail(f"{out} exists; backup never overwrites a file")
    if not out.parent.is_dir():
        return _fail(f"there is no folder {out.parent} to write the backup in")

    uploads = data_dir / "uploads"
    print(f"Backing up {shown(source)} and {uploads} into {out}", flush=True)
    bar = ProgressBar(sys.stderr, enabled=not quiet)
    try:
        report = backup(source, uploads, out, bar)
    except NoSchema as exc:
        return _fail(str(exc), bar)
    except OperationalError as exc:
        return _fail(f"cannot use {shown(source)}: {reason(exc, source)}", bar)
    except DBAPIError as exc:
        _fail(f"the backup failed, no file was written: {reason(exc, source)}", bar)
        return 1
    except OSError as exc:
        _fail(f"the backup failed, no file was written: {exc}", bar)
        return 1
    bar.close()
    _print_backup(report)
    if into is not None and keep is not None:
        _rotate(into, keep, report.path)
    return 0


def _print_backup(report: BackupReport) -> None:
    manifest = report.manifest
    print(f"Schema revision {manifest.revision}, read from {manifest.source} in one snapshot.")
    width = max((len(t.name) for t in manifest.tables), default=0)
    for table in manifest.tables:
        print(f"  {table.name:<{width}}  {table.rows:>9,} rows  checksum {table.checksum[:16]}")
    full_text = [name for name in manifest.left_out if name.startswith(FULL_TEXT)]
    derived = [
        *([f"SQLite's {len(full_text)} full-text tables"] if full_text else []),
        *(name for name in manifest.left_out if not name.startswith(FULL_TEXT)),
    ]
    if derived:
        print(f"Not in the backup, derived and rebuilt on restore: {', '.join(derived)}.")
    size = sum(f.size for f in manifest.uploads)
    print(f"Uploads: {len(manifest.uploads):,} files, {size:,} bytes, each with its sha256.")
    if report.vanished:
        print(
            f"Gone before they were read (deleted meanwhile), not in the backup: "
            f"{', '.join(report.vanished)}."
        )
    rows = sum(t.rows for t in manifest.tables)
    print(
        f"Done: {report.path} ({report.size:,} bytes): {len(manifest.tables)} tables, "
        f"{rows:,} rows, {len(manifest.uploads):,} files."
    )


def _rotate(folder: Path, keep: int, made: Path) -> None:
    """Keep the `keep` newest backups of the folder (by the time in their names), remove the
    older ones and what killed backups left long ago."""
    ours = sorted(p for p in folder.iterdir() if _OURS.match(p.name) and p.is_file())
    for old in ours[: max(len(ours) - keep, 0)]:
        if old != made:
            old.unlink(missing_ok=True)
            print(f"Removed the old backup {old}.")
    now = time.time()
    for partial in (p for p in folder.iterdir() if _OURS_PARTIAL.match(p.name)):
        if now - partial.stat().st_mtime > STALE_PARTIAL_SECONDS:
            partial.unlink(missing_ok=True)
            print(f"Removed {partial}, left by a backup that did not finish.")


def restore_command(archive: Path, data_dir: Path, database_url: str | None, quiet: bool) -> int:
    target = database_url or default_database(data_dir)
    try:
        backend(target)
    except ValueError as exc:
        return _fail(f"DATABASE_URL: {exc}")
    if archive.name.endswith(".partial"):
        return _fail(
            f"{archive} is an unfinished backup: a backup writes FILE.partial and renames it "
            "to FILE only once it is complete"
        )
    if not archive.is_file():
        return _fail(f"there is no file {archive}")
    where = shown(target) if database_url else str(data_dir)
    print(f"Restoring {archive} into {where}", flush=True)
    bar = ProgressBar(sys.stderr, enabled=not quiet)
    try:
        report = restore(archive, target, data_dir / "uploads", bar)
    except (NotABackup, Refused) as exc:
        return _fail(f"{archive}: {exc}" if isinstance(exc, NotABackup) else str(exc), bar)
    except Damaged as exc:
        _fail(
            f"the backup is damaged: {exc}; nothing was restored, the target is as it was",
            bar,
        )
        return 1
    except Mismatch as exc:
        bar.close()
        print_checks(exc.checks, "the restored database")
        print(
            f"FAILED verification: {exc}. Nothing was restored, the target is as it was.",
            file=sys.stderr,
        )
        return 1
    except Failed as exc:
        _fail(f"the restore failed and was undone: {exc}", bar)
        return 1
    except OperationalError as exc:
        return _fail(f"cannot use {shown(target)}: {reason(exc, target)}", bar)
    except DBAPIError as exc:
        _fail(f"the restore failed and was undone: {reason(exc, target)}", bar)
        return 1
    bar.close()
    _print_restore(report)
    return 0 if report.ok else 1


def _print_restore(report: RestoreReport) -> None:
    manifest = report.manifest
    print(
        f"Backup made {manifest.created_at} by Palaver {manifest.palaver_version} from "
        f"{manifest.source}; every part checked against its manifest before writing."
    )
    print(
        f"Schema: restored at revision {manifest.revision}, checked, then brought to {report.head}."
    )
    print_checks(report.tables, "the restored database")
    print(
        f"Uploads: {report.files:,} files, {report.file_bytes:,} bytes, written to "
        f"{report.uploads_dir} and read back (sha256)."
    )
    if report.target == "sqlite":
        print(
            "SQLite's full-text tables rebuilt from the restored rows: the knowledge of "
            f"{report.full_text_agents:,} agents, and the messages'."
        )
    else:
        print(
            "PostgreSQL's search columns (chunks.tsv, vectors.embedding) derived from the "
            f"restored rows: {report.derived_vectors:,} vectors."
        )
    for reset in report.sequences:
        print(f"Sequence: {reset.table}.{reset.column} continues at {reset.next_value:,}.")
    rows = sum(check.source_rows for check in report.tables)
    if report.ok:
        print(
            f"Done: {len(report.tables)} tables, {rows:,} rows and {report.files:,} files "
            "restored and verified."
        )


def reason(exc: DBAPIError, url: str) -> str:
    """The database's words for a failure, its password masked."""
    words = " ".join(str(exc.orig).split())
    password = make_url(sync_url(url)).password
    return words.replace(password, "***") if password else words


def _fail(message: str, bar: ProgressBar | None = None) -> int:
    if bar is not None:
        bar.close()
    print(f"palaver: {message}", file=sys.stderr)
    return 2
