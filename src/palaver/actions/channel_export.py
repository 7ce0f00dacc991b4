"""A channel's export: what its reader may read of it (history as `GET /api/messages` shows it
to them, thread replies after their root), as JSON or Markdown, in a zip with the uploads its
messages name when there are any. Streamed: a page of messages in memory at a time."""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Literal
from urllib.parse import quote

import anyio

from palaver.actions.channels import visible
from palaver.domain import Channel, Message, User
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import channel_export as store
from palaver.store.tables.base import utcnow
from palaver.store.uploads import readable_by
from palaver.transfer.export_format import (
    JSON_TAIL,
    ExportedFile,
    Person,
    Transcript,
    json_head,
    json_message,
)
from palaver.transfer.zipstream import ZipStream

log = logging.getLogger(__name__)

ExportFormat = Literal["json", "markdown"]
BATCH = 500
"""Messages encoded into one chunk of the answer."""
_MEDIA = {"json": "application/json", "markdown": "text/markdown; charset=utf-8"}
_EXTENSION = {"json": "json", "markdown": "md"}
DOCUMENT = {"json": "channel.json", "markdown": "channel.md"}
"""The document's name inside a zip."""


@dataclass(frozen=True)
class Export:
    media_type: str
    filename: str
    body: AsyncIterator[bytes]

    @property
    def disposition(self) -> str:
        plain = re.sub(r"[^A-Za-z0-9._-]+", "_", self.filename).strip("_") or "channel"
        return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(self.filename)}"


async def export(
    svc: Services, user: User, channel_id: str, kind: ExportFormat, with_files: bool
) -> Export:
    """The export of a channel the user can read (NotFound otherwise, as for a missing one):
    a zip holding the document and the files when `with_files` and the messages name uploads
    the user may read, else the bare document."""
    channel = await visible(svc, user, channel_id)
    people = await _people(svc, user, channel)
    files = await _files(svc, user, channel.id, with_files)
    zipped = any(f.included for f in files)
    stem = channel.name.strip() or "channel"
    body = _document(svc, channel, kind, people, files)
    if not zipped:
        return Export(_MEDIA[kind], f"{stem}.{_EXTENSION[kind]}", body)
    return Export("application/zip", f"{stem}.zip", _zip(svc, kind, body, files))


async def _people(svc: Services, user: User, channel: Channel) -> list[Person]:
    """Everyone the export names (authors, reactors, members, agents), with the names the user
    may know: a guest knows the channel's people and the agents of its own channels, as
    `GET /api/channels/:id/people` and `GET /api/agents` tell it; others are named by id."""
    if user.is_owner:
        people: set[str] | None = None
        agent_ids: set[str] | None = None
    else:
        people = set(channel.member_ids)
        async with svc.db.read() as conn:
            agent_ids = {a.id for a in await agents_store.list_in_channels_of(conn, user.id)}
    named = await svc.db.read_unit(lambda conn: store.named_ids(conn, channel.id))
    named |= {*channel.member_ids, *channel.agent_ids}
    found = await svc.db.read_unit(lambda conn: store.names(conn, named, people, agent_ids))
    return [Person(i, kind, name) for i, (kind, name) in sorted(found.items())]


async def _files(
    svc: Services, user: User, channel_id: str, with_files: bool
) -> list[ExportedFile]:
    """The uploads the channel's messages name that the user may read (as `GET /uploads/...`
    decides) and that are on disk."""
    paths: set[str] = set()
    after: str | None = None
    while True:
        found, after = await svc.db.read_unit(
            partial(store.upload_paths_after, channel_id=channel_id, after=after)
        )
        paths |= found
        if after is None:
            break
    files: list[ExportedFile] = []
    for path in sorted(paths):
        if not user.is_owner:
            async with svc.db.read() as conn:
                if not await readable_by(conn, path, user.id):
                    continue
        try:
            stat = await anyio.Path(svc.config.uploads_dir / path).stat()
        except (FileNotFoundError, NotADirectoryError):
            continue
        files.append(ExportedFile(path, stat.st_size, with_files))
    return files


async def _pages(svc: Services, channel_id: str) -> AsyncIterator[list[Message]]:
    """The channel's messages in order, in batches: the main timeline by id, each root followed
    by its thread's replies by id. Keyset paging, a read unit per page."""
    after: str | None = None
    while True:
        roots = await svc.db.read_unit(
            partial(store.roots_after, channel_id=channel_id, after=after)
        )
        if not roots:
            return
        root_ids = [r.id for r in roots]
        pending: deque[Message] = deque()
        cursor: tuple[str, str] | None = None
        exhausted = False
        batch: list[Message] = []
        for root in roots:
            batch.append(root)
            while True:
                if not pending and not exhausted:
                    got = await svc.db.read_unit(
                        partial(
                            store.replies_after,
                            channel_id=channel_id,
                            root_ids=root_ids,
                            after=cursor,
                        )
                    )
                    exhausted = len(got) < store.REPLIES_PAGE
                    if got:
                        last = got[-1]
                        assert last.thread_id is not None
                        cursor = (last.thread_id, last.id)
                        pending.extend(got)
                if not pending or pending[0].thread_id != root.id:
                    break
                batch.append(pending.popleft())
                if len(batch) >= BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch
        after = roots[-1].id


async def _document(
    svc: Services,
    channel: Channel,
    kind: ExportFormat,
    people: list[Person],
    files: list[ExportedFile],
) -> AsyncIterator[bytes]:
    now = utcnow()
    if kind == "json":
        yield json_head(channel, people, files, now)
        first = True
        async for batch in _pages(svc, channel.id):
            parts = []
            for message in batch:
                parts.append(json_message(message, first))
                first = False
            yield b"".join(parts)
        yield JSON_TAIL
        return
    transcript = Transcript({p.id: p for p in people}, {f.path: f for f in files})
    yield transcript.head(channel, now).encode()
    async for batch in _pages(svc, channel.id):
        yield "".join(transcript.message(m) for m in batch).encode()


async def _zip(
    svc: Services, kind: ExportFormat, document: AsyncIterator[bytes], files: list[ExportedFile]
) -> AsyncIterator[bytes]:
    """The document, then each file under `files/<year-month>/<name>`, zipped as they come."""
    stream = ZipStream(utcnow())
    await anyio.to_thread.run_sync(stream.begin, DOCUMENT[kind])
    async for chunk in document:
        if out := await anyio.to_thread.run_sync(stream.write, chunk):
            yield out
    yield await anyio.to_thread.run_sync(stream.end)
    for file in files:
        source = svc.config.uploads_dir / file.path
        copy = await anyio.to_thread.run_sync(stream.add_file, file.member, source)
        if copy is None:
            log.warning("upload %s went while its channel was exported", file.path)
            continue
        try:
            done = False
            while not done:
                out, done = await anyio.to_thread.run_sync(copy.step)
                if out:
                    yield out
        finally:
            if not done:
                await anyio.to_thread.run_sync(copy.close)
    yield await anyio.to_thread.run_sync(stream.close)
