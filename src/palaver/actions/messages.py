"""Messages: reading a channel's history and posting to it."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from palaver.actions.channels import visible
from palaver.auth.limiter import message_budget
from palaver.bus.base import channel_topic
from palaver.domain import MESSAGE_TYPES, Channel, Message, User
from palaver.errors import Invalid, NotFound, RateLimited
from palaver.ids import new_id
from palaver.mention_events import MENTIONS, tell_mentioned, with_mentions
from palaver.message_events import changed
from palaver.services import Services
from palaver.store import message_changes, messages, read_states
from palaver.store.tables.base import utcnow
from palaver.store.uploads import names_uploads, record_references

log = logging.getLogger(__name__)

MAX_METADATA_BYTES = 16 * 1024
IDEMPOTENCY_WINDOW = timedelta(hours=24)


async def history_json(
    svc: Services,
    user: User,
    channel_id: str,
    limit: int,
    before: str | None,
    thread_id: str | None = None,
    after: str | None = None,
) -> bytes:
    """The page as `{"messages": [...]}` JSON, oldest first: the channel's main timeline, or
    with `thread_id` one thread (its root first). `before` pages back (the newest `limit`
    older than it), `after` forward (the oldest `limit` newer than it); both, the oldest
    `limit` between them.

    Each message is encoded once and kept (`caches.messages`) until it changes: a page read in
    the steady state asks the index for ids and joins bytes it already has."""
    await visible(svc, user, channel_id)
    known = svc.caches.messages
    generation = known.generation

    def read(conn: Connection) -> tuple[list[str], list[Message]]:
        for since in (before, after):
            if since is not None and messages.channel_of(conn, since) != channel_id:
                raise NotFound(f"No message has the id '{since}' in this channel.")
        if thread_id is not None:
            root = messages.get(conn, thread_id)
            if root is None or root.channel_id != channel_id or root.thread_id is not None:
                raise NotFound(f"No thread has the id '{thread_id}' in this channel.")
        ids = messages.page_ids(conn, channel_id, limit, before, thread_id, after)
        missing = [i for i in ids if i not in known]
        return ids, messages.by_ids(conn, missing) if missing else []

    ids, loaded = await svc.db.read_unit(read)
    encoded = {m.id: _encode(svc, m, generation) for m in loaded}
    parts = [encoded.get(i) or known.get(i) for i in ids]
    if None in parts:
        # Evicted between the read and now: rare, and read again rather than left out.
        gone = [i for i, part in zip(ids, parts, strict=True) if part is None]
        again = await svc.db.read_unit(lambda conn: messages.by_ids(conn, gone))
        encoded.update((m.id, _encode(svc, m, generation)) for m in again)
        parts = [part or encoded[i] for i, part in zip(ids, parts, strict=True)]
    return b'{"messages":[' + b",".join(p for p in parts if p is not None) + b"]}"


def _encode(svc: Services, message: Message, generation: int | None = None) -> bytes:
    """The message's JSON, kept unless it is an interrupted reply (its slow node may still
    finish it, and its replacement's event could come between a page's read and this) or it
    changed since `generation` (see `EncodedMessages.put`)."""
    encoded = orjson.dumps(message.as_json())
    _keep(svc, message, encoded, generation)
    return encoded


def _keep(svc: Services, message: Message, encoded: bytes, generation: int | None = None) -> None:
    if not message.metadata.get("interrupted"):
        svc.caches.messages.put(message.id, encoded, generation)


def check_content(svc: Services, content: str, kind: str, metadata: dict[str, Any] | None) -> None:
    if kind not in MESSAGE_TYPES:
        raise Invalid(f"The type must be one of {', '.join(MESSAGE_TYPES)}.")
    if not content.strip():
        raise Invalid("The content must not be empty.")
    limit = svc.settings.current.limits.maxMessageChars
    if len(content) > limit:
        raise Invalid(f"The content is longer than {limit} characters.")
    if metadata is not None and _json_size(metadata) > MAX_METADATA_BYTES:
        raise Invalid("The metadata is larger than 16 KiB.")


def _json_size(value: dict[str, Any]) -> int:
    """Bytes of the compact UTF-8 JSON, so that non-ASCII text is not counted six times over."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


async def post(
    svc: Services,
    user: User,
    channel_id: str,
    content: str,
    kind: str,
    metadata: dict[str, Any] | None,
    idempotency_key: str | None,
    hand_on: bool = True,
    thread_id: str | None = None,
) -> tuple[str, dict[str, str]]:
    """Store, broadcast, then (with `hand_on`) hand to the agents; answers the id and the
    rate-limit headers. With `thread_id` the message is a reply in that message's thread (its
    root's, if it is a reply itself), and the root's summary changes in the same unit."""
    check_content(svc, content, kind, metadata)
    channel = await visible(svc, user, channel_id)
    now = utcnow()
    if idempotency_key:
        since = now - IDEMPOTENCY_WINDOW
        earlier = await svc.db.read_unit(
            lambda conn: messages.idempotent_message_id(conn, user.id, idempotency_key, since)
        )
        if earlier is not None:
            return earlier, {}
    limits = svc.settings.current.limits
    decision = await svc.limiter.take(
        message_budget(user.id), limits.messagesPerMinute, limits.messageBurst
    )
    if not decision.allowed:
        raise RateLimited("You are sending messages too fast; wait a moment.", decision.headers())
    if "@" in content:
        async with svc.db.read() as conn:
            metadata = await with_mentions(conn, channel, metadata or {}, content)
    elif metadata is not None and MENTIONS in metadata:
        metadata = {k: v for k, v in metadata.items() if k != MENTIONS}
    draft = Message(
        id="",
        channel_id=channel_id,
        agent_id=None,
        user_id=user.id,
        content=content,
        type=kind,
        metadata=metadata or {},
        created_at=now,
    )
    roots: list[Message] = []

    def store(conn: Connection) -> Message | str:
        """The message, or the id of the one its idempotency key already made."""
        if idempotency_key:
            since = now - IDEMPOTENCY_WINDOW
            earlier = messages.idempotent_message_id(conn, user.id, idempotency_key, since)
            if earlier is not None:
                return earlier
        # Id and time are taken inside the (serialized) write, so id order, time order and
        # commit order agree even for messages created in the same millisecond.
        message = replace(draft, id=new_id("msg"), created_at=utcnow())
        roots.clear()
        people: set[str] | None = None
        if thread_id is not None:
            root = message_changes.thread_root(conn, channel_id, thread_id)
            message = replace(message, thread_id=root.id)
            people = {*root.participant_ids, *(w for w in (root.user_id, root.agent_id) if w)}
            roots.append(message_changes.count_reply(conn, root, message))
        if idempotency_key:
            messages.remember_idempotency_key(conn, user.id, idempotency_key, message.id, now)
        messages.insert_row(conn, message)
        read_states.count_new(conn, message, people)
        return message

    async with svc.db.in_order(channel_id):
        try:
            if names_uploads(draft):
                async with svc.db.write(order=channel_id) as tx:
                    stored = await tx.conn.run_sync(store)
                    if isinstance(stored, Message):
                        await record_references(tx.conn, stored)
            else:
                stored = await svc.db.write_unit(store, order=channel_id)
        except IntegrityError:
            # The channel was deleted between the check above and the write.
            await visible(svc, user, channel_id)
            raise
        if isinstance(stored, str):
            return stored, decision.headers()
        data = stored.as_json()
        _keep(svc, stored, orjson.dumps(data))
        # In line while the order is held; heard (through Redis: a round trip) after it.
        event = {"type": "message", "data": data}
        heard = await svc.bus.enqueue(channel_topic(channel_id), event)
        for root in roots:
            await changed(svc, root)
    await heard
    await tell_mentioned(svc, stored)
    if hand_on:
        await _hand_on(svc, stored, channel)
    return stored.id, decision.headers()


async def _hand_on(svc: Services, message: Message, channel: Channel) -> None:
    for handler in svc.on_user_message:
        try:
            await handler(message, channel)
        except Exception:
            log.exception("a handler failed on message %s", message.id)
