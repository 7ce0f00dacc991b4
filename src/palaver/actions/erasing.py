"""Making deleted text and files leave the disk, after the deletion has committed: shared by a
message's deletion and a channel's."""

from __future__ import annotations

import asyncio

import anyio

from palaver.actions.uploads import safe_name_shape
from palaver.services import Services

ERASED_WITHIN = 5.0
"""Seconds within which a deleted message's text leaves every file of the data dir."""

_erasing: set[asyncio.Task[bool]] = set()


async def remove_upload_files(svc: Services, paths: list[str]) -> None:
    """Remove the files of uploads whose records are gone (`<year-month>/<name>` each)."""
    for path in paths:
        month, _, name = path.partition("/")
        if safe_name_shape(name) == name:
            await anyio.Path(svc.config.uploads_dir / month / name).unlink(missing_ok=True)


def erase_soon(svc: Services) -> None:
    """The freed pages are zeroed by `secure_delete`; what the write-ahead log still holds
    goes with a checkpoint, tried again while readers hold it open."""
    task = asyncio.get_running_loop().create_task(svc.db.erase_freed(ERASED_WITHIN))
    _erasing.add(task)
    task.add_done_callback(_erasing.discard)
