"""A backup file of `palaver backup`: its parts, its manifest, and the check of every part
against the manifest before `palaver restore` writes anything (docs/BACKUP.md).

The file is a zip: `database/<table>.jsonl`, one per table in foreign-key order, each line a
row's values in the canonical form `palaver.store.checksum` hashes (so that it restores into
SQLite or PostgreSQL alike, and its checksum needs no parsing); `uploads/<path>`, the files of
the data dir's `uploads/`; and `manifest.json`, written last, which lists every part with its
size and sha256 and every table with its columns, rows and checksum. The manifest carries a
sha256 of itself, so that damage anywhere in it is told as damage to the manifest.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, Any, Protocol, get_args

from palaver.store.checksum import Kind, TableSum

FORMAT = "palaver-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DATABASE = "database/"
UPLOADS = "uploads/"
CHUNK = 1024 * 1024
"""Bytes of an upload read or written at a time: the memory a file costs, whatever its size."""
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class Progress(Protocol):
    def begin(self, total: int, unit: str = "rows") -> None:
        """A stage over `total` rows (or bytes) begins."""

    def update(self, done: int, label: str) -> None:
        """`done` so far, working on `label`."""


class NotABackup(Exception):
    """The file is no complete backup at all: not a zip, or a zip without a manifest (what a
    backup stopped half-way would leave, were its `.partial` file renamed)."""


class Damaged(Exception):
    """A part of the backup is not what its manifest says: the backup is refused."""

    def __init__(self, part: str, reason: str) -> None:
        super().__init__(f"{part}: {reason}")
        self.part = part


@dataclass(frozen=True)
class ColumnEntry:
    name: str
    kind: Kind


@dataclass(frozen=True)
class TablePart:
    """One table: its columns in the order of each line's values, and what the lines hold."""

    name: str
    columns: tuple[ColumnEntry, ...]
    rows: int
    checksum: str
    """`palaver.store.checksum.TableSum`'s hexdigest of the rows, as the source read them."""
    size: int
    sha256: str

    @property
    def part(self) -> str:
        return f"{DATABASE}{self.name}.jsonl"


@dataclass(frozen=True)
class FilePart:
    """One upload: its path under `uploads/` and the bytes the backup holds of it."""

    path: str
    size: int
    sha256: str

    @property
    def part(self) -> str:
        return UPLOADS + self.path


@dataclass(frozen=True)
class Manifest:
    palaver_version: str
    created_at: str
    source: str
    """`sqlite` or `postgresql`: what the backup was read from."""
    revision: str
    """The source's schema revision: the restore brings its target there before the rows."""
    tables: tuple[TablePart, ...]
    uploads: tuple[FilePart, ...]
    left_out: tuple[str, ...] = ()
    """Derived tables and columns the source had and the backup does not (rebuilt on restore)."""

    def to_json(self) -> bytes:
        body = _body(self)
        return json.dumps(
            {**body, "checksum": _self_sum(body)}, ensure_ascii=False, indent=1
        ).encode()

    @staticmethod
    def from_json(data: bytes) -> Manifest:
        try:
            loaded = json.loads(data)
            if not isinstance(loaded, dict):
                raise ValueError("not a JSON object")
            said = loaded.pop("checksum", None)
            if said != _self_sum(loaded):
                raise ValueError("its own checksum does not match its content")
            if loaded.get("format") != FORMAT:
                raise ValueError("not a Palaver backup's manifest")
            if loaded.get("format_version") != FORMAT_VERSION:
                raise NotABackup(
                    f"its format version is {loaded.get('format_version')}, this Palaver reads "
                    f"version {FORMAT_VERSION}"
                )
            return _manifest(loaded)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise Damaged(MANIFEST, f"damaged ({exc})") from exc

    @property
    def parts(self) -> list[str]:
        return [MANIFEST, *(t.part for t in self.tables), *(f.part for f in self.uploads)]


def _body(manifest: Manifest) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "palaver_version": manifest.palaver_version,
        "created_at": manifest.created_at,
        "source": manifest.source,
        "schema_revision": manifest.revision,
        "tables": [
            {
                "name": t.name,
                "part": t.part,
                "columns": [{"name": c.name, "kind": c.kind} for c in t.columns],
                "rows": t.rows,
                "checksum": t.checksum,
                "bytes": t.size,
                "sha256": t.sha256,
            }
            for t in manifest.tables
        ],
        "uploads": [
            {"path": f.path, "part": f.part, "bytes": f.size, "sha256": f.sha256}
            for f in manifest.uploads
        ],
        "left_out": list(manifest.left_out),
    }


def _self_sum(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _manifest(loaded: dict[str, Any]) -> Manifest:
    kinds = get_args(Kind)
    tables = []
    for t in loaded["tables"]:
        if not _TABLE_NAME.fullmatch(t["name"]):
            raise ValueError(f"a table is named {t['name']!r}")
        columns = tuple(ColumnEntry(str(c["name"]), c["kind"]) for c in t["columns"])
        if any(c.kind not in kinds for c in columns):
            raise ValueError(f"a column of {t['name']} has an unknown kind")
        tables.append(
            TablePart(t["name"], columns, int(t["rows"]), str(t["checksum"]), int(t["bytes"]),
                      str(t["sha256"]))
        )  # fmt: skip
    uploads = []
    for f in loaded["uploads"]:
        path = str(f["path"])
        if not safe_path(path):
            raise ValueError(f"an upload is named {path!r}, outside the uploads folder")
        uploads.append(FilePart(path, int(f["bytes"]), str(f["sha256"])))
    return Manifest(
        palaver_version=str(loaded["palaver_version"]),
        created_at=str(loaded["created_at"]),
        source=str(loaded["source"]),
        revision=str(loaded["schema_revision"]),
        tables=tuple(tables),
        uploads=tuple(uploads),
        left_out=tuple(str(name) for name in loaded.get("left_out", [])),
    )


def safe_path(path: str) -> bool:
    """A relative path that stays inside the folder it is joined to."""
    parts = PurePosixPath(path).parts
    return (
        bool(parts)
        and not path.startswith("/")
        and "\\" not in path
        and "\0" not in path
        and all(part not in ("", ".", "..") for part in parts)
        and PurePosixPath(*parts).as_posix() == path
    )


def open_backup(archive: IO[bytes]) -> tuple[zipfile.ZipFile, Manifest]:
    """The zip and its manifest; `NotABackup` when the file is no complete backup."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise NotABackup("it is not a complete backup (not a zip file, or a cut one)") from exc
    try:
        zf.getinfo(MANIFEST)
    except KeyError:
        zf.close()
        raise NotABackup(f"it is not a complete backup (it has no {MANIFEST})") from None
    try:
        with reading(zf, MANIFEST) as member:
            data = member.read()
        return zf, Manifest.from_json(data)
    except BaseException:
        zf.close()
        raise


@contextmanager
def reading(zf: zipfile.ZipFile, part: str) -> Iterator[IO[bytes]]:
    """A part opened for reading; whatever goes wrong while it is read (a bad CRC, a broken
    compressed stream, a cut file) is told as damage to that part."""
    try:
        with zf.open(part) as member:
            yield member
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError) as exc:
        raise Damaged(part, f"cannot be read ({exc})") from exc


def verify(zf: zipfile.ZipFile, manifest: Manifest, progress: Progress) -> None:
    """Check, reading each part once as a stream, that the zip holds exactly the manifest's
    parts, each of its size and sha256, and each table of its rows and checksum."""
    names = [info.filename for info in zf.infolist() if not info.is_dir()]
    expected = manifest.parts
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise Damaged(name, "is in the backup twice")
        seen.add(name)
    for name in expected:
        if name not in seen:
            raise Damaged(name, "is missing from the backup")
    for name in sorted(seen - set(expected)):
        raise Damaged(name, "is in the backup but not in its manifest")
    total = sum(t.size for t in manifest.tables) + sum(f.size for f in manifest.uploads)
    progress.begin(total, "bytes")
    done = 0
    for table in manifest.tables:
        done = _verify_table(zf, table, progress, done)
    for upload in manifest.uploads:
        done = _verify_file(zf, upload, progress, done)


def _verify_table(zf: zipfile.ZipFile, table: TablePart, progress: Progress, done: int) -> int:
    digest = hashlib.sha256()
    rows = TableSum([])
    size = 0
    with reading(zf, table.part) as member:
        for line in member:
            if not line.endswith(b"\n"):
                raise Damaged(table.part, "its last line is cut")
            digest.update(line)
            rows.add_encoded(line[:-1])
            size += len(line)
            if rows.rows % 1000 == 0:
                progress.update(done + size, f"checking {table.part}")
    _compare(table.part, size, digest.hexdigest(), table.size, table.sha256)
    if (rows.rows, rows.hexdigest) != (table.rows, table.checksum):
        raise Damaged(
            table.part,
            f"{rows.rows:,} rows with checksum {rows.hexdigest[:16]}, the manifest says "
            f"{table.rows:,} rows with checksum {table.checksum[:16]}",
        )
    return done + size


def _verify_file(zf: zipfile.ZipFile, upload: FilePart, progress: Progress, done: int) -> int:
    digest = hashlib.sha256()
    size = 0
    with reading(zf, upload.part) as member:
        while block := member.read(CHUNK):
            digest.update(block)
            size += len(block)
            progress.update(done + size, f"checking {upload.part}")
    _compare(upload.part, size, digest.hexdigest(), upload.size, upload.sha256)
    return done + size


def _compare(part: str, size: int, sha256: str, want_size: int, want_sha256: str) -> None:
    if size != want_size:
        raise Damaged(part, f"{size:,} bytes, the manifest says {want_size:,}")
    if sha256 != want_sha256:
        raise Damaged(part, "its sha256 differs from the manifest's")
