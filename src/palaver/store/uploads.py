"""Who uploaded each file and which channels' messages carry its URL: what reading it takes."""

from __future__ import annotations

import json
import re
from datetime import datetime
from urllib.parse import unquote

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import Message
from palaver.store.tables.core import channel_members, users
from palaver.store.tables.uploads import upload_references, uploads

_URL = re.compile(r"/uploads/(\d{4}-\d{2})/((?:[\w.\-]|%[0-9A-Fa-f]{2})+)")
MAX_PATH = 300


def upload_paths(text: str) -> set[str]:
    """The uploads whose URL occurs in `text`, as `<year-month>/<decoded file name>`. A stored
    name never ends with a dot, so a sentence's full stop after a URL is not taken for it."""
    found: set[str] = set()
    for month, name in _URL.findall(text):
        path = f"{month}/{unquote(name).rstrip('.')}"
        if len(path) <= MAX_PATH and not path.endswith("/"):
            found.add(path)
    return found


async def record_upload(conn: AsyncConnection, path: str, user_id: str, now: datetime) -> None:
    await conn.execute(insert(uploads).values(path=path, user_id=user_id, created_at=now))


def referring_text(message: Message) -> str:
    """Where a message can name an upload: its text and its metadata's JSON."""
    if not message.metadata:
        return message.content
    return message.content + json.dumps(message.metadata, ensure_ascii=False)


def names_uploads(message: Message) -> bool:
    """Whether `record_references` may have something to record for the message."""
    return "/uploads/" in referring_text(message)


async def record_references(conn: AsyncConnection, message: Message) -> None:
    """Remember the uploads the message's text or metadata names, for its channel's members.

    The owner may share any upload (files older than the record of uploaders included);
    anyone else only uploads that exist, and a guest only what it may read itself: a URL it kept
    from a channel it has left must not open the file to another channel."""
    text = referring_text(message)
    paths = upload_paths(text) if "/uploads/" in text else set()
    if not paths:
        return
    by_owner = message.user_id is not None and await _is_owner(conn, message.user_id)
    if not by_owner:
        existing = select(uploads.c.path).where(uploads.c.path.in_(sorted(paths)))
        paths = set((await conn.execute(existing)).scalars())
        if message.user_id is not None:
            paths = {p for p in paths if await readable_by(conn, p, message.user_id)}
    if not paths:
        return
    known = select(upload_references.c.path).where(
        upload_references.c.channel_id == message.channel_id,
        upload_references.c.path.in_(sorted(paths)),
    )
    fresh = paths - set((await conn.execute(known)).scalars())
    if fresh:
        await conn.execute(
            insert(upload_references),
            [
                {"path": p, "channel_id": message.channel_id, "message_id": message.id}
                for p in sorted(fresh)
            ],
        )


async def _is_owner(conn: AsyncConnection, user_id: str) -> bool:
    role = select(users.c.role).where(users.c.id == user_id)
    return (await conn.execute(role)).scalar() == "owner"


async def readable_by(conn: AsyncConnection, path: str, user_id: str) -> bool:
    """Whether a guest may read the upload: it uploaded it, or a message of one of its
    channels carries the URL. Primary-key lookups, whatever the number of messages."""
    uploaded = select(uploads.c.path).where(uploads.c.path == path, uploads.c.user_id == user_id)
    if (await conn.execute(uploaded)).first() is not None:
        return True
    shared = (
        select(upload_references.c.path)
        .join(
            channel_members,
            (channel_members.c.channel_id == upload_references.c.channel_id)
            & (channel_members.c.user_id == user_id),
        )
        .where(upload_references.c.path == path)
        .limit(1)
    )
    return (await conn.execute(shared)).first() is not None
