"""The files of the scheduled backups in their folder: their names, listing and pruning.

A scheduled backup is `palaver-YYYY-MM-DDTHHMMSSZ.zip` (UTC, the time it began), a name
`palaver backup --dir` never gives (its files are `palaver-YYYYMMDD-HHMMSS.zip`): pruning takes
only files of this pattern, so the two may share a folder without removing each other's."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

STALE_PARTIAL_SECONDS = 24 * 3600
"""A `.partial` file this old is what a killed backup left: removed (here and by `palaver backup
--dir`). Kept here, apart from the backup code, which a server imports only to make one."""
_NAME = re.compile(r"^palaver-(\d{4}-\d\d-\d\dT\d{6}Z)\.zip$")
_PARTIAL = re.compile(r"^palaver-\d{4}-\d\d-\d\dT\d{6}Z\.zip\.(snapshot\.)?partial$")
_STAMP = "%Y-%m-%dT%H%M%SZ"


@dataclass(frozen=True)
class BackupFile:
    name: str
    bytes: int
    at: datetime
    """The time in its name: when the backup began."""


def name_for(at: datetime) -> str:
    return f"palaver-{at.astimezone(UTC).strftime(_STAMP)}.zip"


def listed(folder: Path) -> list[BackupFile]:
    """The scheduled backups in `folder`, newest first; none when the folder is not there or
    cannot be read (the last run's result says why)."""
    found: list[BackupFile] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        at = datetime.strptime(match.group(1), _STAMP).replace(tzinfo=UTC)
        found.append(BackupFile(entry.name, size, at))
    return sorted(found, key=lambda f: f.name, reverse=True)


def prune(folder: Path, keep: int) -> list[str]:
    """Remove the scheduled backups beyond the `keep` newest, and what backups killed over a
    day ago left (`.partial`); nothing else. Answers the names removed."""
    removed = []
    for old in listed(folder)[keep:]:
        (folder / old.name).unlink(missing_ok=True)
        removed.append(old.name)
    now = time.time()
    for entry in os.scandir(folder):
        ours = _PARTIAL.match(entry.name) and entry.is_file(follow_symlinks=False)
        if ours and now - entry.stat().st_mtime > STALE_PARTIAL_SECONDS:
            Path(entry.path).unlink(missing_ok=True)
            removed.append(entry.name)
    return removed
