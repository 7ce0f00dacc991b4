"""Message search on PostgreSQL: the generated `messages.search_tsv` column with its GIN index
(migration 0012), in the configuration `palaver_search` (English Snowball stems, no stop
words, so that every word a person types counts as it does on SQLite).

Each word and phrase is a bound parameter of `phraseto_tsquery` (a word the parser cuts in
several, as `don't`, is a phrase of them, as FTS5 makes it); the pieces are joined with
tsquery's `&&`, `||` and `!!` in SQL, so no user text is ever read as tsquery syntax.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, literal_column, select, text

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

CONFIG: ColumnElement[Any] = literal_column("'palaver_search'::regconfig")
TSV: ColumnElement[Any] = literal_column("messages.search_tsv")
HEADLINE_OPTIONS = f"StartSel={START}, StopSel={STOP}, MaxWords={SNIPPET_TOKENS}, MinWords=12"
FEW_ROWS = 20_000
"""Up to how many rows holding every word of a query with a phrase the text index's bitmap (each
such row read and checked for the phrase, then sorted) costs less than the planner's walk."""
_HOLDING_ALL = text(
    "SELECT sum(ln(greatest(coalesce(s.freqs[array_position(s.elems, w)], s.freqs[s.n + 1]), "
    "1e-9))) + ln(greatest(max(c.reltuples), 1)) "
    "FROM unnest(tsvector_to_array(to_tsvector('palaver_search', :words))) AS w, "
    "(SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs, "
    "cardinality(most_common_elems::text::text[]) AS n FROM pg_stats p "
    "JOIN pg_class t ON t.relname = p.tablename "
    "JOIN pg_namespace ns ON ns.oid = t.relnamespace AND ns.nspname = p.schemaname "
    "WHERE t.oid = 'messages'::regclass AND p.attname = 'search_tsv' AND NOT p.inherited "
    "AND p.most_common_elems IS NOT NULL) AS s, "
    "(SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass) AS c"
)
"""The natural log of about how many rows hold every one of `words`, from the statistics
ANALYZE keeps of the column (its most common lexemes with their frequencies; one not among
them is at most as frequent as the least of them), taken as independent, as the planner takes
them. Summed as logs: the product of a long phrase's frequencies is below what a float holds.
Null before the first ANALYZE."""


def _tsquery(parts: tuple[Terms, ...], joiner: str) -> Any:
    pieces = [func.phraseto_tsquery(CONFIG, p.text) for p in parts]
    combined: Any = pieces[0]
    for piece in pieces[1:]:
        combined = combined.op(joiner)(piece)
    return combined


def _matches(query: Query) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if query.required:
        conditions.append(TSV.op("@@")(_tsquery(query.required, "&&")))
    if query.excluded:
        excluded = TSV.op("@@")(_tsquery(query.excluded, "||"))
        conditions.append(func.coalesce(excluded, False).is_(False))
    return conditions


class PostgresMessageSearch:
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
        found = select(messages.c.id).where(
            *narrowing(conn, query, viewer).conditions, *_matches(query)
        )
        walk_avoided = bool(query.required) and (
            query.before is not None or bool(query.has) or _rare_phrase(conn, query)
        )
        if walk_avoided:
            # The planner walks the primary key backwards whenever it expects matches all
            # along it; `before:` puts them far back and `has:` is a guess, so its walk read
            # most of the table (0.3 s at 1M messages). A phrase it estimates as its words
            # together, expecting thousands of matches where there are hundreds. The text
            # index bounds the work by the words' matches instead. Until the page's ids are
            # read, in this transaction only.
            conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
        if sort == "relevance" and query.required:
            candidates = (
                found.add_columns(func.ts_rank(TSV, _tsquery(query.required, "&&")).label("score"))
                .order_by(messages.c.id.desc())
                .limit(RANKED_CANDIDATES)
                .subquery()
            )
            page = (
                select(candidates.c.id)
                .order_by(candidates.c.score.desc(), candidates.c.id.desc())
                .offset(position.offset)
                .limit(limit + 1)
            )
            ids = list(conn.execute(page).scalars())
            following = Position(offset=position.offset + limit) if len(ids) > limit else None
        else:
            if isinstance(position.key, str):
                found = found.where(messages.c.id < position.key)
            ids = list(
                conn.execute(found.order_by(messages.c.id.desc()).limit(limit + 1)).scalars()
            )
            following = Position(key=ids[limit - 1]) if len(ids) > limit else None
        ids = ids[:limit]
        if walk_avoided:
            conn.exec_driver_sql("RESET enable_indexscan")
        snippets = _headlines(conn, query, ids)
        loaded = with_channels(conn, ids)
        hits = []
        for message_id in ids:
            message, name, kind = loaded[message_id]
            headline = snippets.get(message_id)
            hits.append(
                Hit(
                    message=message,
                    channel_id=message.channel_id,
                    channel_name=name,
                    channel_type=kind,
                    snippet=marked(headline, escaped=True)
                    if headline is not None
                    else plain_snippet(message.content),
                )
            )
        next_cursor = encode_cursor(query_text, sort, following) if following is not None else None
        return Found(hits=hits, next_cursor=next_cursor)


def _rare_phrase(conn: Connection, query: Query) -> bool:
    """Whether the query has a phrase and few rows hold all its words (`FEW_ROWS`)."""
    if not any(len(t.words) > 1 for t in query.required):
        return False
    words = " ".join(t.text for t in query.required)
    rows = conn.execute(_HOLDING_ALL, {"words": words}).scalar()
    return rows is not None and rows <= math.log(FEW_ROWS)


def _headlines(conn: Connection, query: Query, ids: list[str]) -> dict[str, str]:
    if not query.required or not ids:
        return {}
    # Escaped before: ts_headline drops what its parser reads as HTML tags (`<b>`), which a
    # message about code must keep; entities (`&lt;`) it passes through whole.
    content: Any = messages.c.content
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        content = func.replace(content, char, entity)
    headline = func.ts_headline(CONFIG, content, _tsquery(query.required, "&&"), HEADLINE_OPTIONS)
    rows = conn.execute(select(messages.c.id, headline.label("s")).where(messages.c.id.in_(ids)))
    return {row.id: str(row.s) for row in rows}
