"""Tables of what each person has read and who was mentioned: kept by the writes themselves
(a post, a read, a deletion), so that listing a person's channels with their unread and
mention counts is one indexed read whatever the number of messages."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, text

from palaver.store.tables.base import metadata

read_states = Table(
    "read_states",
    metadata,
    Column("user_id", String(40), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("last_read_id", String(40), nullable=True),
    Column("unread_count", Integer, nullable=False, server_default=text("0")),
    Column("mention_count", Integer, nullable=False, server_default=text("0")),
    Index("ix_read_states_channel_id", "channel_id"),
)
"""One row per person and channel they read: the marker (the newest message read; null before
any), and the counts of what came after it, moved by each post and recounted when the marker
moves or a message goes."""

message_mentions = Table(
    "message_mentions",
    metadata,
    Column(
        "message_id", String(40), ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("user_id", String(40), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("channel_id", String(40), nullable=False),
    Index(
        "ix_message_mentions_user_id_channel_id_message_id", "user_id", "channel_id", "message_id"
    ),
)
"""The people a message mentions (who could read its channel when it was written)."""
