"""Documents' ingest status: `indexing` while their chunks are embedded in the background,
then `ready`, or `failed` with the reason.

Revision ID: 0006_document_status
Revises: 0005_guest_boundary
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_document_status"
down_revision = "0005_guest_boundary"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("status", sa.String(8), nullable=False, server_default="ready"))
        batch.add_column(sa.Column("error", sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("DELETE FROM documents WHERE status != 'ready'")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("error")
        batch.drop_column("status")
