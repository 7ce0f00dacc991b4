"""Agents' messages in threads: a reply, an interrupted reply or a `call_agent` question stored
in a thread counts in its root's summary, in the same transaction, and the root's channel
hears the new summary after the commit."""

from __future__ import annotations

from palaver.domain import Message
from palaver.message_events import changed
from palaver.services import Services
from palaver.store import messages as messages_store
from palaver.store.db import Tx
from palaver.store.message_changes import count_reply


async def count_in_thread(svc: Services, tx: Tx, message: Message) -> None:
    if message.thread_id is None:
        return
    root = await tx.conn.run_sync(messages_store.get, message.thread_id)
    if root is None:
        return
    summary = await tx.conn.run_sync(count_reply, root, message)
    tx.on_commit(lambda: changed(svc, summary))
