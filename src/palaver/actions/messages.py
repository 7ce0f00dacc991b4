"""Messages: reading a channel's history and posting to it."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from palaver.actions.channels import visible
from palaver.auth.limiter import message_budget
from palaver.bus.base import channel_topic
from palaver.domain import MESSAGE_TYPES, Channel, Message, User
from palaver.errors import Invalid, NotFound, RateLimited
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import messages
from palaver.store.tables.base import utcnow

log = logging.getLogger(__name__)

MAX_METADATA_BYTES = 16 * 1024
IDEMPOTENCY_WINDOW = timedelta(hours=24)


def message_event(message: Message) -> dict[str, Any]:
    return {"type": "message", "data": message.as_json()}


async def history(
    svc: Services, user: User, channel_id: str, limit: int, before: str | None
) -> list[Message]:
    await visible(svc, user, channel_id)
    async with svc.db.read() as conn:
        if before is not None:
            anchor = await messages.get(conn, before)
            if anchor is None or anchor.channel_id != channel_id:
                raise NotFound(f"No message has the id '{before}' in this channel.")
        return await messages.page(conn, channel_id, limit, before)


def _check(svc: Services, content: str, kind: str, metadata: dict[str, Any] | None) -> None:
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
) -> tuple[str, dict[str, str]]:
    """Store, broadcast, then (with `hand_on`) hand to the agents; answers the id and the
    rate-limit headers."""
    _check(svc, content, kind, metadata)
    channel = await visible(svc, user, channel_id)
    now = utcnow()
    if idempotency_key:
        async with svc.db.read() as conn:
            earlier = await messages.idempotent_message_id(
                conn, user.id, idempotency_key, now - IDEMPOTENCY_WINDOW
            )
        if earlier is not None:
            return earlier, {}
    limits = svc.settings.current.limits
    decision = await svc.limiter.take(
        message_budget(user.id), limits.messagesPerMinute, limits.messageBurst
    )
    if not decision.allowed:
        raise RateLimited("You are sending messages too fast; wait a moment.", decision.headers())
    async with svc.db.write() as tx:
        if idempotency_key:
            earlier = await messages.idempotent_message_id(
                tx.conn, user.id, idempotency_key, now - IDEMPOTENCY_WINDOW
            )
            if earlier is not None:
                return earlier, decision.headers()
        # Id and time are taken inside the (serialized) write, so id order, time order and
        # commit order agree even for messages created in the same millisecond.
        message = Message(
            id=new_id("msg"),
            channel_id=channel_id,
            agent_id=None,
            user_id=user.id,
            content=content,
            type=kind,
            metadata=metadata or {},
            created_at=utcnow(),
        )
        if idempotency_key:
            await messages.remember_idempotency_key(
                tx.conn, user.id, idempotency_key, message.id, now
            )
        await messages.insert_message(tx.conn, message)
        tx.on_commit(lambda: svc.bus.publish(channel_topic(channel_id), message_event(message)))
    if hand_on:
        await _hand_on(svc, message, channel)
    return message.id, decision.headers()


async def _hand_on(svc: Services, message: Message, channel: Channel) -> None:
    for handler in svc.on_user_message:
        try:
            await handler(message, channel)
        except Exception:
            log.exception("a handler failed on message %s", message.id)
