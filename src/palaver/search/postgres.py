"""Message search on PostgreSQL: the generated `messages.search_tsv` column with its GIN index
(migration 0012), in the configuration `palaver_search` (English Snowball stems, no stop
words, so that every word a person types counts as it does on SQLite).

Each word and phrase is a bound parameter of `phraseto_tsquery` (a word the parser cuts in
several, as `don't`, is a phrase of them, as FTS5 makes it); the pieces are joined with
tsquery's `&&`, `||` and `!!` in SQL, so no user text is ever read as tsquery syntax.

A page needs the newest matches (the newest `RANKED_CANDIDATES` to rank, or a page's worth),
and PostgreSQL has two ways to them: walk the primary key backwards checking each row, which
pays for every row passed, or take every match from the text index and sort them, which pays
for every match. The planner weighs them with costs that do not fit a hot table (a walk it
thought dearer took 42 ms where the index took 14), and for a phrase it expects its words
together, where a phrase of common words is rare. So for a query of words alone the adapter
chooses (`route`), from the statistics ANALYZE keeps: the text index when few rows hold the
words; for a phrase otherwise a walk bounded to a window of the newest rows a few times what it
should need; for words the text index's matches since an id, where the newest ids should hold
twice the matches needed (its bitmap ANDed with the block ranges of migration 0022's index, so
that only those are fetched), or the planner's walk for words nearly everywhere. When a window
holds too few, the rest goes through the text index (or walking on, for words in a large share
of the table). A wrong estimate then costs at most the window.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from sqlalchemy import (
    ARRAY,
    BindParameter,
    Column,
    ColumnElement,
    Connection,
    Row,
    Select,
    String,
    any_,
    bindparam,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.sql import visitors
from sqlalchemy.sql.util import ClauseAdapter

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
from palaver.search.narrowing import Narrowing, loaded, narrowing, page_statement
from palaver.search.query import Query, Terms
from palaver.store.tables.core import messages

CONFIG: ColumnElement[Any] = literal_column("'palaver_search'::regconfig")
TSV: ColumnElement[Any] = literal_column("messages.search_tsv")
RANGED_ID: ColumnElement[str] = literal_column("(messages.id || '')", String)
"""The id as the block-range index of migration 0022 holds it: an expression no other
statement's conditions use, so that the planner never ANDs that index's lossy bitmap into
another's elsewhere (a search's rest through the text index took 190 ms where it takes 40).
A search held to channels orders by it (an order no index yields), which takes no index in."""
HEADLINE_OPTIONS = f"StartSel={START}, StopSel={STOP}, MaxWords={SNIPPET_TOKENS}, MinWords=12"


def _escaped(content: ColumnElement[str]) -> ColumnElement[str]:
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        content = func.replace(content, char, entity)
    return content


ESCAPED_CONTENT = _escaped(messages.c.content)
"""A message's text as the headline reads it (with the query's words marked, read with the
message itself): escaped before, since ts_headline drops what its parser reads as HTML tags
(`<b>`), which a message about code must keep; entities (`&lt;`) it passes through whole."""
FEW_ROWS = 20_000
"""Up to how many rows holding every word of a query with a phrase the text index's bitmap (each
such row read and checked for the phrase, then sorted) costs less than the planner's walk."""
WALK_SHARE = 0.15
"""What a walk's check of one row costs against the text index's fetch of one match (a heap
page each, the phrase checked, sorted): 0.25 against 1.7 µs, 1,000,000 messages, warm."""
WINDOW_SLACK = 4
"""A walk may pass this many times the rows the estimate says it needs before the rest of the
history is left to the text index."""
WINDOW_SHARE = 0.25
"""At most what share of the text index's cost a walk's window may cost: when the estimate
was wrong and the rest goes through the index after all, the search costs at most 1.25 times
the index's alone."""
BITMAP_SHARE = 0.14
"""What the text index's bitmap costs for one match (its posting read and set) against the
fetch of one match from the table: 0.23 against 1.7 µs."""
RANGE_SHARE = 0.0004
"""What the id's block-range index (migration 0022) costs a search for each row of the table,
against the fetch of one match: 0.7 ms for 1,000,000 rows in ranges of 16 pages."""
RANGES_PAGE_COST = "20"
"""The planner's `random_page_cost` for a search `since` an id. The planner ANDs bitmaps into
the one it thinks cheapest to make, and an exact bitmap ANDed into a lossy one (the block
ranges') is lossy: every row on the pages would be read and checked (20 ms where the exact one
takes 3). Pages costing this much, the block ranges' pages cost more than the text index's
for a word in up to some 3% of the rows (1,000,000 messages, 25 pages), past where `route`
lets the planner walk for a word the statistics know."""
SINCE_SLACK = 2
"""How many times the matches it needs a search expects in the newest ids it reads the text
index's matches among."""
CHANNELS_SHARE = 0.25
"""At most what share of its channels' rows a search held to them reads the newest of, since
an id, through the index of (channel, id): the planner's bitmap of all their rows cost a
guest's search in 5 channels of 200 some 4 ms of its 6."""
UNKNOWN_SHARE = 0.1
"""At most what share of the table a search `since` an id may expect to read the matches of
a word rarer than the statistics' common ones among: its matches may be far fewer than their
bound, and when the newest ids hold too few, the rest costs the index's fetches anyway."""
_WORDS = text(
    "SELECT tsvector_to_array(to_tsvector('palaver_search', :words)), "
    "(SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass), "
    "ARRAY(SELECT channel_id FROM channel_members WHERE user_id = :member), "
    "set_config('max_parallel_workers_per_gather', '0', true), "
    "set_config('plan_cache_mode', 'force_custom_plan', true)"
)
"""The lexemes of `words`, about how many rows the table has, and the channels of `member` (a
guest's, for its search's narrowing: in the same round trip). And for the rest of the
transaction: parallel workers off, since a search is one person's request on a server
answering many, and workers take the cores the others need (they made a walk slower here, 64
against 42 ms); and a plan for each statement's own words and bounds, since the generic plan a
prepared statement settles on after five runs knows neither (one sorted the whole table,
330 ms)."""
_STATISTICS = text(
    "SELECT attname, most_common_elems::text::text[], most_common_elem_freqs, "
    "histogram_bounds::text::text[], most_common_vals::text::text[], most_common_freqs, "
    "n_distinct FROM pg_stats p "
    "JOIN pg_class t ON t.relname = p.tablename "
    "JOIN pg_namespace ns ON ns.oid = t.relnamespace AND ns.nspname = p.schemaname "
    "WHERE t.oid = 'messages'::regclass AND p.attname IN ('search_tsv', 'id', 'channel_id') "
    "AND NOT p.inherited"
)
"""What ANALYZE keeps of the text column (its most common lexemes with their frequencies, the
least of them after them), of the ids (those that cut the table into about equal shares, a
hundred) and of the channels (the busiest with their shares, and how many there are)."""
STATISTICS_SECONDS = 300.0
"""How long a process keeps a database's statistics: reading them costs a search a
millisecond, and they change only with ANALYZE. Old ones cost a search only time: whatever
way it takes, it finds the same messages."""


@dataclass(frozen=True)
class _Statistics:
    common: dict[str, float]
    """The most common lexemes with the share of rows holding each."""
    rarest: float
    """The share of the least common of them: a lexeme not among them is at most as common."""
    bounds: tuple[str, ...]
    busiest: dict[str, float]
    """The channels with the most messages, with their shares of the rows."""
    others: float
    """The share of any other channel's rows."""

    def channels_share(self, channels: Sequence[str]) -> float:
        """About what share of the rows `channels` hold, as the planner weighs them."""
        return min(1.0, sum(self.busiest.get(c, self.others) for c in channels))


_statistics_read: dict[str, tuple[float, _Statistics]] = {}


_PLANNING = text(
    "SELECT set_config('enable_indexscan', :index, true), "
    "set_config('enable_bitmapscan', :bitmap, true), "
    "set_config('max_parallel_workers_per_gather', '0', true), "
    "set_config('plan_cache_mode', 'force_custom_plan', true), "
    "set_config('random_page_cost', coalesce(:pages, current_setting('random_page_cost')), true)"
)


@dataclass(frozen=True)
class Estimate:
    holding: float
    """About how many rows hold every required word."""
    table: float
    """About how many rows the table has."""
    bounds: tuple[str, ...] = ()
    """Ids in order, about as many rows between each two (empty when not known, or for a
    phrase)."""
    known: bool = True
    """Whether the statistics know every word's share; else `holding` is only a bound."""


@dataclass(frozen=True)
class Route:
    """How the newest matches are read: as the planner chooses; every match from the text
    index; a walk of a window of the newest rows; or the text index's matches from `since` on
    (the index's bitmap and the id's block ranges together, so that only those matches are
    fetched). After a window or `since`, the older ones as `estimate` says."""

    way: Literal["planner", "index", "window", "since"]
    window: int = 0
    estimate: Estimate | None = None
    since: str = ""
    in_channels: bool = False
    """`since` for a search held to some channels: their ids from `since` on through the
    index of (channel, id), exact, instead of the block ranges."""


PLANNER = Route("planner")
INDEX = Route("index")


@dataclass(frozen=True)
class Page:
    offset: int
    size: int


def route(estimate: Estimate, wanted: int, phrase: bool) -> Route:
    """The cheaper way to the newest `wanted` matches, in what fetching one match from the
    table costs. A walk passes about `wanted * table / holding` rows (`WALK_SHARE` each), the
    index fetches `holding` matches.

    Words alone may also go `since` an id: the index's bitmap of all `holding` (`BITMAP_SHARE`
    each) and the id's block ranges (`RANGE_SHARE` a row of the table) fetch only the matches
    in the newest ids where `SINCE_SLACK` times `wanted` are expected; else the planner walks,
    as it does for them. For words rarer than the statistics' common ones `holding` is only a
    bound, and a walk for a far rarer one passes the table: the index, or `since` when its
    window is small (`UNKNOWN_SHARE`), so that finding too few there costs little.

    A phrase's rows are fewer than its words' by a share nothing tells: walked within a window
    of `WINDOW_SLACK` times the rows it should need, but costing at most `WINDOW_SHARE` of what
    the index would, rounded down to a power of two so that the statements' texts stay few."""
    holding, table = max(estimate.holding, 1.0), max(estimate.table, 1.0)
    walk = WALK_SHARE * wanted * table / holding
    if phrase:
        if holding <= walk:
            return INDEX
        rows = min(WINDOW_SLACK * wanted * table / holding, WINDOW_SHARE * holding / WALK_SHARE)
        return Route("window", 1 << (max(int(rows), 1).bit_length() - 1), estimate)
    share = SINCE_SLACK * wanted / holding
    cut = math.floor((1 - share) * (len(estimate.bounds) - 1)) if share < 1 else 0
    since = BITMAP_SHARE * holding + SINCE_SLACK * wanted + RANGE_SHARE * table
    if not estimate.known:
        if cut > 0 and share <= UNKNOWN_SHARE and since < holding:
            return Route("since", estimate=estimate, since=estimate.bounds[cut])
        return INDEX
    if cut > 0 and since < min(holding, walk):
        return Route("since", estimate=estimate, since=estimate.bounds[cut])
    return INDEX if holding <= walk else PLANNER


def route_in_channels(estimate: Estimate, wanted: int) -> Route:
    """The way to the newest `wanted` matches of words alone in some channels, `holding`
    their rows there: since an id, where the newest ids should hold `SINCE_SLACK` times
    `wanted` of them, when that is at most `CHANNELS_SHARE` of the channels' rows; else the
    planner's way (the text index's bitmap and the channels' rows)."""
    share = SINCE_SLACK * wanted / max(estimate.holding, 1.0)
    if share > CHANNELS_SHARE or len(estimate.bounds) < 2:
        return PLANNER
    cut = math.floor((1 - share) * (len(estimate.bounds) - 1))
    return Route("since", estimate=estimate, since=estimate.bounds[cut], in_channels=True)


def rest_by_index(estimate: Estimate, wanted: int, walked: int, found: int) -> bool:
    """Whether the rest of `wanted` matches, after a walk of `walked` rows found `found`, costs
    less through the text index (`holding` matches fetched) than walking on at the density
    the walk saw (one more than found, so that finding none still says something)."""
    further = min(estimate.table, (wanted - found) * walked / (found + 1))
    return estimate.holding <= WALK_SHARE * further


def _tsquery(parts: Sequence[Terms | BindParameter[str]], joiner: str) -> Any:
    """Each of `parts` (the query's terms, or their text as parameters) as `phraseto_tsquery`,
    joined by `joiner`."""
    pieces = [func.phraseto_tsquery(CONFIG, p.text if isinstance(p, Terms) else p) for p in parts]
    combined: Any = pieces[0]
    for piece in pieces[1:]:
        combined = combined.op(joiner)(piece)
    return combined


@functools.lru_cache(maxsize=16)
def _page(terms: int) -> Select[Any]:
    """A page's messages by their ids (`ids`) with their channels, and each text with the
    query's `terms` required words and phrases (`term_0`...) marked: one statement object for
    each count of them, which SQLAlchemy compiles once and the driver prepares (built for each
    search, each id its own parameter, the read of twenty took 2.2 to 2.7 ms where it takes
    2.0, their messages made included)."""
    among = messages.c.id == any_(bindparam("ids", type_=ARRAY(String)))
    if not terms:
        return page_statement(among)
    required = _tsquery([bindparam(f"term_{n}", type_=String) for n in range(terms)], "&&")
    return page_statement(
        among, func.ts_headline(CONFIG, ESCAPED_CONTENT, required, HEADLINE_OPTIONS)
    )


def _matches(query: Query, required: Any) -> list[ColumnElement[bool]]:
    """The conditions of the query's words: `required`, the tsquery of its required ones (built
    once a search: its rank reads it too), and none of the excluded ones."""
    conditions: list[ColumnElement[bool]] = []
    if required is not None:
        conditions.append(TSV.op("@@")(required))
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
        words = _words(conn, query, viewer) if _weighed(query) else None
        narrowed = narrowing(conn, query, viewer, None if words is None else words.member_of)
        required = _tsquery(query.required, "&&") if query.required else None
        conditions = [*narrowed.conditions, *_matches(query, required)]
        ranked = sort == "relevance" and required is not None
        columns: list[ColumnElement[Any]] = [messages.c.id]
        if ranked:
            columns.append(func.ts_rank(TSV, required).label("score"))
        below = position.key if not ranked and isinstance(position.key, str) else None
        wanted = RANKED_CANDIDATES if ranked else limit + 1
        page = Page(position.offset, limit + 1) if ranked else None
        chosen = self._route(conn, query, narrowed, wanted, words)
        rows = newest(conn, columns, conditions, below, wanted, chosen, page)
        ids = [r.id for r in rows]
        if ranked:
            following = Position(offset=position.offset + limit) if len(ids) > limit else None
        else:
            following = Position(key=ids[limit - 1]) if len(ids) > limit else None
        ids = ids[:limit]
        terms = {f"term_{n}": t.text for n, t in enumerate(query.required)}
        page_rows = conn.execute(_page(len(terms)), {"ids": ids, **terms}) if ids else ()
        found = loaded(page_rows)
        hits = []
        for message_id in ids:
            message, name, kind, headline = found[message_id]
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

    def _route(
        self,
        conn: Connection,
        query: Query,
        narrowed: Narrowing,
        wanted: int,
        words: _Words | None,
    ) -> Route:
        """How to read the newest `wanted` matches of `query` (its `words` read when
        `_weighed`)."""
        if not query.required:
            return PLANNER
        if query.before is not None or query.has:
            # The planner walks the primary key backwards whenever it expects matches all
            # along it; `before:` puts them far back and `has:` is a guess, so its walk read
            # most of the table (0.3 s at 1M messages). The text index bounds the work by the
            # words' matches instead.
            return INDEX
        phrase = any(len(t.words) > 1 for t in query.required)
        plain = _plain(query, narrowed)
        held = _held_to_channels(query, narrowed)
        if held is not None and not phrase:
            in_channels = _estimate(conn, query, held, words)
            return PLANNER if in_channels is None else route_in_channels(in_channels, wanted)
        estimate = _estimate(conn, query, None, words) if plain or phrase else None
        if estimate is None:
            return PLANNER
        if not plain:
            # Narrowed by channels, authors or dates, a walk passes more rows than the words'
            # estimate says, by a share the statistics do not tell: the planner, which weighs
            # those columns too, chooses; but a phrase it estimates as its words together,
            # expecting thousands of matches where there are hundreds, so a phrase few rows
            # hold all the words of goes through the text index.
            return INDEX if estimate.holding <= FEW_ROWS else PLANNER
        return route(estimate, wanted, phrase)


def newest(
    conn: Connection,
    columns: Sequence[ColumnElement[Any]],
    conditions: Sequence[ColumnElement[bool]],
    below: str | None,
    wanted: int,
    chosen: Route,
    page: Page | None = None,
) -> Sequence[Row[Any]]:
    """The newest `wanted` rows of `columns` meeting `conditions` (older than `below`), read
    as `chosen` says: the same rows whichever way. With a `page`, that page of them by their
    `score` column, best first (ids: newest first)."""
    bounded = [*conditions, messages.c.id < below] if below is not None else list(conditions)
    if chosen.way == "planner":
        return conn.execute(_ranked(_ordered(columns, bounded, wanted), page)).all()
    if chosen.way == "index":
        _planning(conn, "enable_indexscan")
        return conn.execute(_ranked(_ordered(columns, bounded, wanted), page)).all()
    if chosen.way == "since":
        return _since(conn, columns, bounded, wanted, chosen, page, below)
    # Only the columns the statement reads: the walk copies each row it passes.
    used = {
        element.key
        for clause in (*columns, *conditions)
        for element in visitors.iterate(clause)
        if isinstance(element, Column) and element.table is messages
    }
    recent = select(*(messages.c[key] for key in sorted(used | {"id"})), TSV.label("search_tsv"))
    if below is not None:
        recent = recent.where(messages.c.id < below)
    # The window's size in the statement's text, so that no plan is made without it.
    size = chosen.window
    window = recent.order_by(messages.c.id.desc()).limit(literal_column(str(size)))
    rows = window.subquery("messages")
    adapt = ClauseAdapter(rows)
    walked = (
        select(*(adapt.traverse(c) for c in columns))
        .where(*(adapt.traverse(c) for c in conditions))
        .order_by(rows.c.id.desc())
        .limit(wanted)
    )
    _planning(conn, "enable_bitmapscan")
    found = list(conn.execute(walked).all())
    if len(found) < wanted:
        # Every match of the window is in `found`, so the rest are older than its oldest (or,
        # when it held none, than the window: the index's matches, the walk passing it again).
        oldest = found[-1].id if found else below
        older = [*conditions, messages.c.id < oldest] if oldest is not None else list(conditions)
        by_index = chosen.estimate is None or rest_by_index(
            chosen.estimate, wanted, size, len(found)
        )
        _planning(conn, "enable_indexscan" if by_index else "enable_bitmapscan")
        found += conn.execute(_ordered(columns, older, wanted - len(found))).all()
    return _paged(found, page)


def _since(
    conn: Connection,
    columns: Sequence[ColumnElement[Any]],
    conditions: Sequence[ColumnElement[bool]],
    wanted: int,
    chosen: Route,
    page: Page | None,
    below: str | None,
) -> Sequence[Row[Any]]:
    """`newest` on the `since` route: the matches from `chosen.since` on, through the text
    index's bitmap and the id's block ranges together (held to channels: the (channel, id)
    index's instead); when they are too few, the older ones the cheaper way at the density
    they showed. A later page whose cursor (`below`) is already past `since` reads only older
    ones.

    Held to channels, the statements are ordered by `RANGED_ID` rather than the id: the same
    order, which no index yields, so that the planner never walks the primary key backwards
    checking every row (as it chose for a common word in 34 of 320 guests' searches) and no
    round trip switches its index scans off. It reads their rows through bitmaps then, as it
    did with index scans off: so did all 325 such statements of 400 guests' searches in
    `bench_search`'s fill."""
    held = chosen.in_channels
    order = RANGED_ID if held else messages.c.id
    recent = [*conditions, chosen.since <= (messages.c.id if held else RANGED_ID)]
    found: list[Row[Any]] = []
    newer = below is None or chosen.since < below
    costed = newer and not held
    if costed:
        _planning(conn, "enable_indexscan", RANGES_PAGE_COST)
    if newer:
        if page is not None:
            # Ranked in SQL when they are enough (as they are but for a wrong estimate):
            # a page leaves the server where a thousand rows cost Python 4 ms.
            counted = _ranked(_ordered(columns, recent, wanted, order), page, True)
            best = conn.execute(counted).all()
            if best and best[0].found >= wanted:
                return best
        found = list(conn.execute(_ordered(columns, recent, wanted, order)).all())
    if len(found) < wanted:
        older = [*conditions, messages.c.id < chosen.since]
        rest = _ordered(columns, older, wanted - len(found), order)
        if held:
            # The text index's bitmap and the channels'.
            found += conn.execute(rest).all()
            return _paged(found, page)
        if costed:
            conn.exec_driver_sql("RESET random_page_cost")
        estimate = chosen.estimate
        # The cheaper way at the density the newest ids showed.
        by_index = estimate is None or rest_by_index(
            estimate, wanted, _rows_since(estimate, chosen.since), len(found)
        )
        _planning(conn, "enable_indexscan" if by_index else "enable_bitmapscan")
        found += conn.execute(rest).all()
    return _paged(found, page)


def _rows_since(estimate: Estimate, since: str) -> int:
    """About how many rows have an id from `since` on, from the histogram's share (the table
    when `since` is not one of its bounds)."""
    bounds = estimate.bounds
    if since not in bounds or len(bounds) < 2:
        return max(1, int(estimate.table))
    after = len(bounds) - 1 - bounds.index(since)
    return max(1, int(estimate.table * after / (len(bounds) - 1)))


def _paged(found: list[Row[Any]], page: Page | None) -> Sequence[Row[Any]]:
    if page is None:
        return found
    best = sorted(found, key=attrgetter("score", "id"), reverse=True)
    return best[page.offset : page.offset + page.size]


def _ranked(statement: Select[Any], page: Page | None, counted: bool = False) -> Select[Any]:
    """`page` of `statement`'s rows by their `score`, best first (and with how many rows there
    were, `found`, when `counted`); the rows themselves without a page."""
    if page is None:
        return statement
    found = statement.subquery()
    best = found.c.score.desc(), found.c.id.desc()
    columns = [found.c.id, func.count().over().label("found")] if counted else [found.c.id]
    return select(*columns).order_by(*best).offset(page.offset).limit(page.size)


def _ordered(
    columns: Sequence[ColumnElement[Any]],
    conditions: Sequence[ColumnElement[bool]],
    wanted: int,
    order: ColumnElement[str] = messages.c.id,
) -> Select[Any]:
    return select(*columns).where(*conditions).order_by(order.desc()).limit(wanted)


def _planning(conn: Connection, switched_off: str, page_cost: str | None = None) -> None:
    """The planner without one of its ways (the other one back) and with `page_cost` for a
    random page, when given, for the statements that follow; with a plan for each statement's
    own words, since the generic plan a driver's prepared statement settles on after five runs
    does not know them, and with one way switched off sorted the whole table (330 ms).

    The settings last until the transaction ends, as `_WORDS`'s do: a search runs in one of
    its own, and a RESET after each statement was a round trip more. So a later statement's
    settings are set whole, both ways named; the page cost, when set, is RESET by whoever
    plans after it. What runs after the last (a page's messages by their ids) reads so few
    rows that any of the ways serves it."""
    conn.execute(
        _PLANNING,
        {
            "index": "off" if switched_off == "enable_indexscan" else "on",
            "bitmap": "off" if switched_off == "enable_bitmapscan" else "on",
            "pages": page_cost,
        },
    )


def _words_alone(query: Query) -> bool:
    """Whether no operator but `in:` narrows the query."""
    return not (query.authors or query.in_thread or query.after or query.before or query.has)


def _plain(query: Query, narrowed: Narrowing) -> bool:
    """Whether the query is words alone over every channel: a walk's share of matching rows is
    then what the statistics say of the words."""
    return narrowed.channels is None and _words_alone(query)


def _held_to_channels(query: Query, narrowed: Narrowing) -> list[str] | None:
    """The channels a query of words is held to when nothing else narrows it (a guest's
    channels, `in:`); else None."""
    return narrowed.channels if _words_alone(query) else None


@dataclass(frozen=True)
class _Words:
    """What `_WORDS` read for a search, before its narrowing."""

    lexemes: list[str]
    table: float
    member_of: list[str] | None
    """The channels of the viewer, when it is not the owner."""


def _weighed(query: Query) -> bool:
    """Whether `_route` weighs the query by the statistics of its words: words with nothing
    but `in:` (or a guest's channels) narrowing them, or a phrase, and neither `before:` nor
    `has:`."""
    if not query.required or query.before is not None or query.has:
        return False
    return _words_alone(query) or any(len(t.words) > 1 for t in query.required)


def _words(conn: Connection, query: Query, viewer: Viewer | None = None) -> _Words:
    member = None if viewer is None or viewer.reads_everything else viewer.user_id
    words = " ".join(t.text for t in query.required)
    lexemes, table, member_of, *_ = conn.execute(_WORDS, {"words": words, "member": member}).one()
    return _Words(
        list(lexemes or ()),
        max(float(table or 0), 1.0),
        None if member is None else list(member_of),
    )


def _estimate(
    conn: Connection,
    query: Query,
    channels: Sequence[str] | None = None,
    words: _Words | None = None,
) -> Estimate | None:
    """What the statistics ANALYZE keeps say of the query's required words (in `channels`,
    when given), taken as independent, as the planner takes them: about how many rows hold all
    of them; None before the first ANALYZE. `words` as `_words` read them, else read here."""
    read = words if words is not None else _words(conn, query)
    rows = read.table
    statistics = _statistics(conn, rows)
    if statistics is None or not read.lexemes:
        return None
    # Summed as logs: the product of a long phrase's shares is below what a float holds.
    shares = [statistics.common.get(lexeme, statistics.rarest) for lexeme in read.lexemes]
    share = sum(math.log(max(s, 1e-9)) for s in shares)
    bounds = statistics.bounds if all(len(t.words) == 1 for t in query.required) else ()
    known = all(lexeme in statistics.common for lexeme in read.lexemes)
    if channels is not None:
        share += math.log(max(statistics.channels_share(channels), 1e-9))
    return Estimate(math.exp(share) * rows, rows, bounds, known)


def _statistics(conn: Connection, rows: float) -> _Statistics | None:
    """The statistics of the database `conn` is on (its table about `rows` long), read at most
    every `STATISTICS_SECONDS`; None (and read again next time) before the first ANALYZE."""
    database = conn.engine.url.render_as_string(hide_password=True)
    now = time.monotonic()
    kept = _statistics_read.get(database)
    if kept is not None and now - kept[0] < STATISTICS_SECONDS:
        return kept[1]
    read = {row[0]: row[1:] for row in conn.execute(_STATISTICS)}
    elems, freqs = read.get("search_tsv", (None,) * 6)[:2]
    if not elems or not freqs:
        return None
    bounds = tuple(read.get("id", (None,) * 6)[2] or ())
    _, _, _, values, shares, distinct = read.get("channel_id", (None,) * 6)
    busiest = dict(zip(values or (), shares or (), strict=False))
    # n_distinct: a count, or (negative) a share of the rows; channels beyond the busiest split
    # the rest of the rows evenly.
    count = (distinct or 0) if (distinct or 0) >= 0 else -distinct * rows
    rest = max(count - len(busiest), 1.0)
    others = max(1.0 - sum(busiest.values()), 0.0) / rest
    statistics = _Statistics(
        dict(zip(elems, freqs, strict=False)), freqs[len(elems)], bounds, busiest, others
    )
    _statistics_read[database] = (now, statistics)
    return statistics
