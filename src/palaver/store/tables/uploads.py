"""Tables of uploaded files: who uploaded each, and the channels whose messages carry its URL.

An upload is readable by the owner, its uploader, and the members of a channel in which a
message carries its URL; both tables are keyed so that this check is one indexed lookup.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, String, Table

from palaver.store.tables.base import UtcDateTime, metadata

uploads = Table(
    "uploads",
    metadata,
    Column("path", String(300), primary_key=True),
    Column("user_id", String(40), ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
"""`path` is `<year-month>/<file name>`, the file name decoded (as it is on disk)."""

upload_references = Table(
    "upload_references",
    metadata,
    Column("path", String(300), primary_key=True),
    Column(
        "channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("message_id", String(40), nullable=False),
)
"""One row per (upload, channel): the first message of the channel that carried the URL."""
