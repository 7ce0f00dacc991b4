"""The audit log (issue 24): `audit_log`, one row per action that changes the install, written
in the action's own transaction; triggers refuse to change or delete a row once written.

Revision ID: 0015_audit_log
Revises: 0014_usage_ledger
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import JsonValue, UtcDateTime

revision = "0015_audit_log"
down_revision = "0014_usage_ledger"
branch_labels = None
depends_on = None

_REFUSED = "the audit log is append-only"
_SQLITE_TRIGGERS = [
    f"CREATE TRIGGER audit_log_no_{verb.lower()} BEFORE {verb} ON audit_log "
    f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}'); END"
    for verb in ("UPDATE", "DELETE")
]
_POSTGRESQL_TRIGGERS = [
    "CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    f"$$ BEGIN RAISE EXCEPTION '{_REFUSED}'; END $$",
    "CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log "
    "FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()",
]


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("at", UtcDateTime, nullable=False),
        sa.Column("actor_id", sa.String(40), nullable=True),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("resource", sa.String(32), nullable=False),
        sa.Column("target", sa.Text, nullable=True),
        sa.Column("changes", JsonValue, nullable=False),
        sa.Column("node", sa.String(40), nullable=False),
        sa.Column("address", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_actor_id_id", "audit_log", ["actor_id", "id"])
    op.create_index("ix_audit_log_action_id", "audit_log", ["action", "id"])
    op.create_index("ix_audit_log_resource_id", "audit_log", ["resource", "id"])
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_TRIGGERS if sqlite else _POSTGRESQL_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.execute("DROP TRIGGER IF EXISTS audit_log_append_only ON audit_log")
        op.execute("DROP FUNCTION IF EXISTS audit_log_append_only()")
    op.drop_index("ix_audit_log_resource_id", "audit_log")
    op.drop_index("ix_audit_log_action_id", "audit_log")
    op.drop_index("ix_audit_log_actor_id_id", "audit_log")
    op.drop_table("audit_log")
