"""Core schema: users, sessions, settings, agents, channels, messages.

Revision ID: 0001_core
Revises:
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import JsonValue, UtcDateTime

revision = "0001_core"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "settings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("data", JsonValue, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=True, unique=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column(
            "user_id", sa.String(40), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("owner_key_tag", sa.String(64), nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("last_used_at", UtcDateTime, nullable=False),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_table(
        "agents",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("name_key", sa.String(64), nullable=False, unique=True),
        sa.Column("avatar", sa.String(32), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("tools", JsonValue, nullable=False),
        sa.Column("soul", sa.Text, nullable=False),
        sa.Column("auto_inject_memory", sa.Boolean, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "channels",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("type", sa.String(8), nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "channel_agents",
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey("channels.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "agent_id",
            sa.String(40),
            sa.ForeignKey("agents.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, nullable=False),
    )
    op.create_index("ix_channel_agents_agent_id", "channel_agents", ["agent_id"])
    op.create_table(
        "channel_members",
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey("channels.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "user_id",
            sa.String(40),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, nullable=False),
    )
    op.create_index("ix_channel_members_user_id", "channel_members", ["user_id"])
    op.create_table(
        "messages",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey("channels.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("agent_id", sa.String(40), nullable=True),
        sa.Column("user_id", sa.String(40), nullable=True),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("metadata", JsonValue, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )
    op.create_index("ix_messages_channel_id_id", "messages", ["channel_id", "id"])
    op.create_table(
        "idempotency_keys",
        sa.Column("user_id", sa.String(40), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("message_id", sa.String(40), nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "reply_drafts",
        sa.Column("message_id", sa.String(40), primary_key=True),
        sa.Column("channel_id", sa.String(40), nullable=False),
        sa.Column("agent_id", sa.String(40), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("metadata", JsonValue, nullable=False),
        sa.Column("started_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "reply_drafts",
        "idempotency_keys",
        "messages",
        "channel_members",
        "channel_agents",
        "channels",
        "agents",
        "sessions",
        "users",
        "settings",
        "meta",
    ):
        op.drop_table(table)
