"""Tables of the core service: people, sessions, agents, channels and messages."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    text,
)

from palaver.store.tables.base import JsonValue, UtcDateTime, metadata

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

settings = Table(
    "settings",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("data", JsonValue, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("role", String(16), nullable=False),
    Column("key_hash", String(64), nullable=True, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
)

sessions = Table(
    "sessions",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", String(40), ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("owner_key_tag", String(64), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("last_used_at", UtcDateTime, nullable=False),
    Index("ix_sessions_user_id", "user_id"),
)

agents = Table(
    "agents",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("name_key", String(64), nullable=False, unique=True),
    Column("avatar", String(32), nullable=False),
    Column("description", Text, nullable=False),
    Column("model", String(200), nullable=False),
    Column("tools", JsonValue, nullable=False),
    Column("soul", Text, nullable=False),
    Column("auto_inject_memory", Boolean, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

channels = Table(
    "channels",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("type", String(8), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

channel_agents = Table(
    "channel_agents",
    metadata,
    Column(
        "channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, nullable=False),
    Index("ix_channel_agents_agent_id", "agent_id"),
)

channel_members = Table(
    "channel_members",
    metadata,
    Column(
        "channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("user_id", String(40), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, nullable=False),
    Index("ix_channel_members_user_id", "user_id"),
)

messages = Table(
    "messages",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), nullable=False),
    Column("agent_id", String(40), nullable=True),
    Column("user_id", String(40), nullable=True),
    Column("content", Text, nullable=False),
    Column("type", String(16), nullable=False),
    Column("metadata", JsonValue, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    # The root's id for a reply in a thread (replies to replies attach to the root).
    Column("thread_id", String(40), nullable=True),
    Column("edited_at", UtcDateTime, nullable=True),
    # Set on a thread root deleted while it has replies: kept, emptied, as the thread's head.
    Column("deleted_at", UtcDateTime, nullable=True),
    # A root's thread summary and every message's reactions, kept on the row so that a history
    # page stays one read; written in the transaction of the change they summarize.
    Column("reply_count", Integer, nullable=False, server_default=text("0")),
    Column("last_reply_at", UtcDateTime, nullable=True),
    Column("participant_ids", JsonValue, nullable=True),
    Column("reactions", JsonValue, nullable=True),
    Index("ix_messages_channel_id_id", "channel_id", "id"),
    Index("ix_messages_channel_id_thread_id_id", "channel_id", "thread_id", "id"),
    Index("ix_messages_thread_id_id", "thread_id", "id"),
)

message_versions = Table(
    "message_versions",
    metadata,
    Column(
        "message_id", String(40), ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("content", Text, nullable=False),
    Column("edited_at", UtcDateTime, nullable=True),
)
"""A message's earlier contents, numbered from 0 (as first posted, `edited_at` null)."""

message_reactions = Table(
    "message_reactions",
    metadata,
    Column(
        "message_id", String(40), ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("user_id", String(40), primary_key=True),
    Column("emoji", String(32), primary_key=True),
    Column("created_at", UtcDateTime, nullable=False),
)
"""Who reacted with what: a person's or an agent's id in `user_id`."""

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("user_id", String(40), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("message_id", String(40), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

reply_drafts = Table(
    "reply_drafts",
    metadata,
    Column("message_id", String(40), primary_key=True),
    Column("channel_id", String(40), nullable=False),
    Column("agent_id", String(40), nullable=False),
    Column("content", Text, nullable=False),
    Column("metadata", JsonValue, nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # The node running the reply (its lease); null in drafts an older version wrote.
    Column("node_id", String(40), nullable=True),
    Column("thread_id", String(40), nullable=True),
    # The reply's span (`traceparent`), which a node storing it as interrupted continues.
    Column("trace_context", String(64), nullable=True),
)

nodes = Table(
    "nodes",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("started_at", UtcDateTime, nullable=False),
    Column("heartbeat_at", UtcDateTime, nullable=False),
)
"""The nodes running now, each beating its `heartbeat_at`; see docs/SCALING.md."""
