"""Message search on PostgreSQL reads a common word's newest matches alone (issue 23): a block
range index (BRIN) over the messages' ids, whose bitmap of the newest ids' pages, taken
together with the text index's bitmap, leaves PostgreSQL fetching only the matches among the
newest rows, where before it fetched every match of the word to keep its newest thousand. Rows
go in about in the order of their ids, so each range of 16 pages holds a narrow span of ids;
an index of some 25 pages covers 1,000,000 messages, and new rows cost it nothing until VACUUM
sums up their ranges (unsummed ranges match every search, as they should). The index is of
the expression `id || ''`, which only that search writes: a bitmap from it is lossy (whole
pages), and the planner, had it been of `id` itself, ANDed it into other statements' exact
bitmaps wherever they bounded the id, so that every row on those pages was read and checked.
Built in one pass over the table (0.6 s for 1,000,000 messages), which holds new messages back
meanwhile.
SQLite: nothing (FTS5 reads a word's matches newest first from its own index).

Revision ID: 0022_id_block_ranges
Revises: 0021_search_backlog
"""

from alembic import op

revision = "0022_id_block_ranges"
down_revision = "0021_search_backlog"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute(
        "CREATE INDEX ix_messages_id_brin ON messages USING brin ((id || '')) "
        "WITH (pages_per_range = 16)"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute("DROP INDEX IF EXISTS ix_messages_id_brin")
