"""Alembic environment: migrations run on the connection that `palaver.store.migrate` hands in."""

from __future__ import annotations

from alembic import context

from palaver.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
