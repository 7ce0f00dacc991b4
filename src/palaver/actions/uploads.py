"""Uploaded files: safe names that never collide, who may read each, and how each kind may be
served back."""

from __future__ import annotations

import contextlib
import mimetypes
import os
import re
import secrets
import unicodedata
from pathlib import Path
from urllib.parse import quote

import anyio

from palaver.api.multipart import UploadedFile
from palaver.domain import User
from palaver.errors import NotFound
from palaver.services import Services
from palaver.store import uploads as uploads_store
from palaver.store.tables.base import utcnow

mimetypes.init()  # reads the system's type tables now, not later on the event loop

MAX_NAME = 128
MAX_NAME_BYTES = 255
"""What file systems take: 128 characters of some scripts are more than 255 bytes of UTF-8."""
_UNSAFE = re.compile(r"[^\w.\-]+")
_MONTH = re.compile(r"^\d{4}-\d{2}$")
_INLINE = {"application/pdf", "text/plain"}


def safe_name(client_name: str) -> str:
    """The client's name made safe, with a random part so that nothing is ever overwritten."""
    name = unicodedata.normalize("NFC", client_name).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = _UNSAFE.sub("_", name).replace("..", "_").lstrip(".")
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    ext = ext[:16]
    if ext and stem.lower().endswith(".tar") and len(stem) > 4:
        stem, ext = stem[:-4], f"{stem[-3:]}.{ext}"
    tag = secrets.token_hex(4)
    tail = f"-{tag}.{ext}" if ext else f"-{tag}"
    stem = (stem or "file")[: MAX_NAME - len(tail)]
    stem = stem.encode()[: MAX_NAME_BYTES - len(tail.encode())].decode(errors="ignore")
    return stem + tail


def _place(received: Path, folder: Path, client_name: str) -> str:
    """Give the received file a name of its own in `folder`: a hard link fails rather than
    replace a file that drew the same random tag, where a rename would overwrite it."""
    for _ in range(8):
        name = safe_name(client_name)
        try:
            os.link(received, folder / name)
        except FileExistsError:
            continue
        os.unlink(received)
        return name
    raise RuntimeError("no free name for an upload after 8 tries")


async def store(svc: Services, user: User, upload: UploadedFile) -> str:
    """Move a received file to its month's folder, record its uploader, answer its URL path."""
    now = utcnow()
    month = now.strftime("%Y-%m")
    folder = svc.config.uploads_dir / month
    try:
        await anyio.Path(folder).mkdir(parents=True, exist_ok=True)
        name = await anyio.to_thread.run_sync(_place, upload.path, folder, upload.filename)
    except BaseException:
        await anyio.to_thread.run_sync(_discard, upload.path)
        raise
    try:
        async with svc.db.write() as tx:
            await uploads_store.record_upload(tx.conn, f"{month}/{name}", user.id, now)
    except BaseException:
        # Not recorded (a full disk, the database away): no one could ever read it.
        await anyio.to_thread.run_sync(_discard, folder / name)
        raise
    return f"/uploads/{month}/{quote(name)}"


def _discard(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


async def readable(svc: Services, user: User, month: str, name: str) -> Path:
    """The file behind an upload URL, if the caller may read it: the owner, its uploader, or a
    member of a channel whose messages carry its URL. Anything else, and anything that could
    step outside the folder, is the same NotFound as a file that does not exist."""
    if not _MONTH.match(month) or name != safe_name_shape(name):
        raise NotFound("There is no such upload.")
    if not user.is_owner:
        async with svc.db.read() as conn:
            if not await uploads_store.readable_by(conn, f"{month}/{name}", user.id):
                raise NotFound("There is no such upload.")
    return svc.config.uploads_dir / month / name


def safe_name_shape(name: str) -> str:
    if not name or name.startswith(".") or "/" in name or ".." in name:
        return ""
    if len(name) > MAX_NAME or len(name.encode()) > MAX_NAME_BYTES:
        return ""
    return name if _UNSAFE.search(name) is None else ""


def serving_headers(name: str) -> tuple[str, dict[str, str]]:
    """Inline only for kinds a browser shows without running them; HTML and SVG never are."""
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    inline = (media_type.startswith("image/") and media_type != "image/svg+xml") or (
        media_type in _INLINE
    )
    if media_type == "text/plain":
        media_type = "text/plain; charset=utf-8"
    disposition = "inline" if inline else "attachment"
    return media_type, {
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(name, safe='')}",
    }
