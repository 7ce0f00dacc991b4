"""Read state and mentions of people (issue 23): `read_states`, one row per person and channel
they read (the marker and the unread and mention counts after it, kept by the writes), and
`message_mentions`, the people each message mentions. On upgrade everyone has read everything
already there: counts start at zero, markers at each channel's newest message.

Revision ID: 0013_read_state
Revises: 0012_message_search
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_read_state"
down_revision = "0012_message_search"
branch_labels = None
depends_on = None

ALL_READ = (
    "INSERT INTO read_states (user_id, channel_id, last_read_id, unread_count, mention_count) "
    "SELECT p.user_id, p.channel_id, "
    "(SELECT max(m.id) FROM messages m WHERE m.channel_id = p.channel_id), 0, 0 "
    "FROM (SELECT user_id, channel_id FROM channel_members "
    "UNION SELECT u.id, c.id FROM users u CROSS JOIN channels c WHERE u.role = 'owner') p"
)
"""Every member of a channel, and the owner in every channel (the owner reads them all)."""


def upgrade() -> None:
    op.create_table(
        "read_states",
        sa.Column(
            "user_id",
            sa.String(40),
            sa.ForeignKey("users.id", ondelete="CASCADE", name="fk_read_states_user_id_users"),
            primary_key=True,
        ),
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey(
                "channels.id", ondelete="CASCADE", name="fk_read_states_channel_id_channels"
            ),
            primary_key=True,
        ),
        sa.Column("last_read_id", sa.String(40), nullable=True),
        sa.Column("unread_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("mention_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("user_id", "channel_id", name="pk_read_states"),
    )
    op.create_index("ix_read_states_channel_id", "read_states", ["channel_id"])
    op.create_table(
        "message_mentions",
        sa.Column(
            "message_id",
            sa.String(40),
            sa.ForeignKey(
                "messages.id", ondelete="CASCADE", name="fk_message_mentions_message_id_messages"
            ),
            primary_key=True,
        ),
        sa.Column(
            "user_id",
            sa.String(40),
            sa.ForeignKey("users.id", ondelete="CASCADE", name="fk_message_mentions_user_id_users"),
            primary_key=True,
        ),
        sa.Column("channel_id", sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint("message_id", "user_id", name="pk_message_mentions"),
    )
    op.create_index(
        "ix_message_mentions_user_id_channel_id_message_id",
        "message_mentions",
        ["user_id", "channel_id", "message_id"],
    )
    op.execute(ALL_READ)


def downgrade() -> None:
    op.drop_index("ix_message_mentions_user_id_channel_id_message_id", "message_mentions")
    op.drop_table("message_mentions")
    op.drop_index("ix_read_states_channel_id", "read_states")
    op.drop_table("read_states")
