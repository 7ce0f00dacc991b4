"""Messages people can fix, thread and react to: `edited_at`, `deleted_at` (a thread root kept
as a tombstone), `thread_id` with the root's summary (`reply_count`, `last_reply_at`,
`participant_ids`) and the reactions' summary on the message itself, so that a history page
stays one read; `message_versions` (earlier contents) and `message_reactions` (one row per
message, actor and emoji: the truth the summary is recomputed from); `reply_drafts.thread_id`,
so that a reply in a thread stored as interrupted stays in it.

Revision ID: 0011_message_lifecycle
Revises: 0010_node_leases
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import JsonValue, UtcDateTime

revision = "0011_message_lifecycle"
down_revision = "0010_node_leases"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("thread_id", sa.String(40), nullable=True))
        batch.add_column(sa.Column("edited_at", UtcDateTime, nullable=True))
        batch.add_column(sa.Column("deleted_at", UtcDateTime, nullable=True))
        batch.add_column(
            sa.Column("reply_count", sa.Integer, nullable=False, server_default=sa.text("0"))
        )
        batch.add_column(sa.Column("last_reply_at", UtcDateTime, nullable=True))
        batch.add_column(sa.Column("participant_ids", JsonValue, nullable=True))
        batch.add_column(sa.Column("reactions", JsonValue, nullable=True))
        batch.create_index("ix_messages_channel_id_thread_id_id", ["channel_id", "thread_id", "id"])
        batch.create_index("ix_messages_thread_id_id", ["thread_id", "id"])
    with op.batch_alter_table("reply_drafts") as batch:
        batch.add_column(sa.Column("thread_id", sa.String(40), nullable=True))
    op.create_table(
        "message_versions",
        sa.Column(
            "message_id",
            sa.String(40),
            sa.ForeignKey(
                "messages.id",
                ondelete="CASCADE",
                name="fk_message_versions_message_id_messages",
            ),
            primary_key=True,
        ),
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("edited_at", UtcDateTime, nullable=True),
        sa.PrimaryKeyConstraint("message_id", "version", name="pk_message_versions"),
    )
    op.create_table(
        "message_reactions",
        sa.Column(
            "message_id",
            sa.String(40),
            sa.ForeignKey(
                "messages.id",
                ondelete="CASCADE",
                name="fk_message_reactions_message_id_messages",
            ),
            primary_key=True,
        ),
        sa.Column("user_id", sa.String(40), primary_key=True),
        sa.Column("emoji", sa.String(32), primary_key=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("message_id", "user_id", "emoji", name="pk_message_reactions"),
    )


def downgrade() -> None:
    op.drop_table("message_reactions")
    op.drop_table("message_versions")
    with op.batch_alter_table("reply_drafts") as batch:
        batch.drop_column("thread_id")
    with op.batch_alter_table("messages") as batch:
        batch.drop_index("ix_messages_thread_id_id")
        batch.drop_index("ix_messages_channel_id_thread_id_id")
        batch.drop_column("reactions")
        batch.drop_column("participant_ids")
        batch.drop_column("last_reply_at")
        batch.drop_column("reply_count")
        batch.drop_column("deleted_at")
        batch.drop_column("edited_at")
        batch.drop_column("thread_id")
