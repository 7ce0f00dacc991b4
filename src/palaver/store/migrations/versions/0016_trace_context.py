"""Traces across nodes (issue 24): `trace_context` on reply drafts and chains, the W3C
`traceparent` of the span that began the work, so that a node taking it over (storing a reply
as interrupted, resuming a chain) continues the same trace. Null when traces are off.

Revision ID: 0016_trace_context
Revises: 0015_audit_log
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_trace_context"
down_revision = "0015_audit_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reply_drafts") as batch:
        batch.add_column(sa.Column("trace_context", sa.String(64), nullable=True))
    with op.batch_alter_table("chains") as batch:
        batch.add_column(sa.Column("trace_context", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chains") as batch:
        batch.drop_column("trace_context")
    with op.batch_alter_table("reply_drafts") as batch:
        batch.drop_column("trace_context")
