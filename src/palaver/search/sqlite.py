"""Message search on SQLite: the FTS5 table `messages_fts` (migrations 0012 and 0020) over
each message's `content` and `channel_id`: new messages are indexed a batch at a time and
before each search (`palaver.store.search_backlog`), edits and erasures by triggers.

Every word and phrase goes to FTS5 as a string (`"..."`, its quotes doubled), which FTS5
cuts with the table's own tokenizer: its syntax (`NEAR(`, `*`, `^`, `col:`, `AND`) in a word
is plain text there, and the words are matched in `content` only. A search held to a few
channels asks FTS5 for those channels' matches alone (`channel_id`); SQL still checks the
channel of each. Newest first walks the index by rowid backwards and stops at the page's end;
relevance ranks the newest `RANKED_CANDIDATES` matches by BM25 of the content.
"""

from __future__ import annotations

from sqlalchemy import (
    Connection,
    Integer,
    String,
    column,
    func,
    literal_column,
    select,
    table,
)

from palaver.search.base import (
    RANKED_CANDIDATES,
    SNIPPET_TOKENS,
    START,
    STOP,
    Found,
    Hit,
    Position,
    Sort,
    Viewer,
    decode_cursor,
    encode_cursor,
    marked,
    plain_snippet,
)
from palaver.search.narrowing import narrowing, with_channels
from palaver.search.query import Query, Terms
from palaver.store.tables.core import messages

fts = table("messages_fts", column("rowid", Integer), column("content", String))
_MESSAGE_ROWID = literal_column("messages.rowid", Integer)
_MATCH = literal_column("messages_fts").op("MATCH")
SCOPED_CHANNELS = 12
"""Up to how many channels a search asks FTS5 for their matches alone. FTS5 merges one doclist
per channel with the words', a cost that grows with the channels; SQL's check of each match's
channel costs less the more of the matches the channels hold. At 1,000,000 messages in 200
channels, a word by relevance: 9.5 against 20.7 ms for 5 channels, 15.7 against 20.2 for 12,
even at 16 and worse beyond (bench/results/search.md)."""


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_expression(parts: tuple[Terms, ...], joiner: str) -> str:
    """FTS5 query text for `parts` in the content: each a quoted string, joined by AND or OR."""
    return "content : (" + f" {joiner} ".join(_quoted(p.text) for p in parts) + ")"


def channel_expression(channels: list[str] | None) -> str | None:
    """FTS5 query text for the messages of `channels`, when there are few enough of them.
    An id's last part (`ch_01J…` is tokenized as `ch` and `01j…`) is a token of its own."""
    if channels is None or not 0 < len(channels) <= SCOPED_CHANNELS:
        return None
    return "channel_id : (" + " OR ".join(_quoted(c.rsplit("_", 1)[-1]) for c in channels) + ")"


def match_text(query: Query, channels: list[str] | None = None) -> str | None:
    """The whole MATCH text of a query with words: required ones, NOT the excluded, in the
    channels' messages when `channel_expression` narrows to them."""
    if not query.required:
        return None
    match = fts_expression(query.required, "AND")
    if query.excluded:
        match = f"{match} NOT {fts_expression(query.excluded, 'OR')}"
    scope = channel_expression(channels)
    return match if scope is None else f"({match}) AND {scope}"


class SqliteMessageSearch:
    def search(
        self,
        conn: Connection,
        query: Query,
        viewer: Viewer,
        sort: Sort,
        limit: int,
        cursor: str | None,
        query_text: str,
    ) -> Found:
        position = decode_cursor(cursor, query_text, sort)
        narrowed = narrowing(conn, query, viewer)
        conditions = narrowed.conditions
        match = match_text(query, narrowed.channels)
        if match is None:
            rowid = _MESSAGE_ROWID
            found = select(messages.c.id, rowid.label("r")).where(*conditions)
            if query.excluded:
                unwanted = select(fts.c.rowid).where(_MATCH(fts_expression(query.excluded, "OR")))
                found = found.where(rowid.not_in(unwanted))
        else:
            rowid = fts.c.rowid
            found = (
                select(messages.c.id, rowid.label("r"))
                .select_from(fts.join(messages, fts.c.rowid == _MESSAGE_ROWID))
                .where(_MATCH(match), *conditions)
            )
        if sort == "relevance" and match is not None:
            candidates = (
                found.add_columns(
                    # The channel column weighs nothing (its tokens count in a row's length).
                    func.bm25(literal_column("messages_fts"), 1.0, 0.0).label("score")
                )
                .order_by(rowid.desc())
                .limit(RANKED_CANDIDATES)
                .subquery()
            )
            page = (
                select(candidates.c.id, candidates.c.r)
                .order_by(candidates.c.score, candidates.c.r.desc())
                .offset(position.offset)
                .limit(limit + 1)
            )
            rows = conn.execute(page).all()
            more = len(rows) > limit
            rows = rows[:limit]
            following = Position(offset=position.offset + limit) if more else None
        else:
            if isinstance(position.key, int):
                found = found.where(rowid < position.key)
            rows = conn.execute(found.order_by(rowid.desc()).limit(limit + 1)).all()
            more = len(rows) > limit
            rows = rows[:limit]
            following = Position(key=rows[-1].r) if more else None
        snippets = _snippets(conn, query, [r.r for r in rows])
        loaded = with_channels(conn, [r.id for r in rows])
        hits = []
        for row in rows:
            message, name, kind, _ = loaded[row.id]
            snippet = snippets.get(row.r)
            hits.append(
                Hit(
                    message=message,
                    channel_id=message.channel_id,
                    channel_name=name,
                    channel_type=kind,
                    snippet=marked(snippet)
                    if snippet is not None
                    else plain_snippet(message.content),
                )
            )
        next_cursor = encode_cursor(query_text, sort, following) if following is not None else None
        return Found(hits=hits, next_cursor=next_cursor)


_SNIPPET = (
    "SELECT snippet(messages_fts, 0, ?, ?, '…', ?) "
    "FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?"
)


def _snippets(conn: Connection, query: Query, rowids: list[int]) -> dict[int, str]:
    """Each found row's text around its matched words, marked by FTS5's own tokenizer; one
    row at a time, which FTS5 seeks to (with `rowid IN (...)` it would walk the whole match),
    on the driver's cursor of the same transaction (twenty statements through SQLAlchemy cost
    more than the search itself)."""
    if not query.required or not rowids:
        return {}
    match = fts_expression(query.required, "AND")
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    found: dict[int, str] = {}
    try:
        for rowid in rowids:
            row = cursor.execute(_SNIPPET, (START, STOP, SNIPPET_TOKENS, match, rowid)).fetchone()
            if row is not None:
                found[rowid] = str(row[0])
    finally:
        cursor.close()
    return found
