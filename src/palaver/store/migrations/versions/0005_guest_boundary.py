"""The guest boundary: documents' visibility, who uploaded what and which channels carry each
upload's URL, and guests' schedules found by their guest.

Revision ID: 0005_guest_boundary
Revises: 0004_chains
"""

import json
import re
from urllib.parse import unquote

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import UtcDateTime

revision = "0005_guest_boundary"
down_revision = "0004_chains"
branch_labels = None
depends_on = None

_URL = re.compile(r"/uploads/(\d{4}-\d{2})/((?:[\w.\-]|%[0-9A-Fa-f]{2})+)")
"""As `palaver.store.uploads` finds upload URLs, frozen here as this revision knew it."""
_BATCH = 1000


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(
            sa.Column("visibility", sa.String(8), nullable=False, server_default="owner")
        )
    op.execute("UPDATE vectors SET type = 'owner' WHERE kind = 'chunk'")
    op.create_table(
        "uploads",
        sa.Column("path", sa.String(300), primary_key=True),
        sa.Column(
            "user_id",
            sa.String(40),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "upload_references",
        sa.Column("path", sa.String(300), primary_key=True),
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey("channels.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("message_id", sa.String(40), nullable=False),
    )
    op.create_index("ix_schedules_created_by", "schedules", ["created_by"])
    op.execute(
        "DELETE FROM schedules WHERE created_by IS NOT NULL "
        "AND created_by NOT IN (SELECT id FROM users)"
    )
    _backfill_references()


def _backfill_references() -> None:
    """Messages stored before this revision keep sharing the uploads they link to."""
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT id, channel_id, content, metadata FROM messages "
            "WHERE content LIKE '%/uploads/%' OR CAST(metadata AS TEXT) LIKE '%/uploads/%' "
            "ORDER BY id"
        )
    )
    seen: set[tuple[str, str]] = set()
    batch: list[dict[str, str]] = []
    table = sa.table(
        "upload_references", sa.column("path"), sa.column("channel_id"), sa.column("message_id")
    )
    for message_id, channel_id, content, metadata in rows:
        raw = metadata if isinstance(metadata, str) else json.dumps(metadata, ensure_ascii=False)
        text = f"{content}{raw or ''}"
        for month, name in _URL.findall(text):
            path = f"{month}/{unquote(name).rstrip('.')}"
            if len(path) > 300 or (path, channel_id) in seen:
                continue
            seen.add((path, channel_id))
            batch.append({"path": path, "channel_id": channel_id, "message_id": message_id})
    for start in range(0, len(batch), _BATCH):
        conn.execute(sa.insert(table), batch[start : start + _BATCH])


def downgrade() -> None:
    op.drop_index("ix_schedules_created_by", table_name="schedules")
    op.drop_table("upload_references")
    op.drop_table("uploads")
    op.execute("UPDATE vectors SET type = NULL WHERE kind = 'chunk'")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("visibility")
