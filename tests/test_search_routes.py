"""PostgreSQL's ways to a search's newest matches (`search/postgres.py`): the text index
alone, a walk of a window of the newest rows or the text index's matches since an id (with the
id's block ranges) and then the rest through the index or walking on, or the planner's choice.
Whichever a search takes, it finds the same messages in the same order, every page; and `route`
takes the cheaper one for what the statistics say."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, Engine, create_engine, event, insert, text

from palaver.search import postgres
from palaver.search.base import RANKED_CANDIDATES, Sort, Viewer
from palaver.search.postgres import (
    INDEX,
    PLANNER,
    WALK_SHARE,
    WINDOW_SHARE,
    Estimate,
    PostgresMessageSearch,
    Route,
    rest_by_index,
    route,
    route_in_channels,
)
from palaver.search.query import parse
from palaver.store import migrate
from palaver.store.tables.core import channel_members, channels, messages, users
from palaver.store.urls import sync_url
from tests.pg_server import PgServer

TOTAL = 3000
OWNER = Viewer("user_owner", reads_everything=True)
QUERIES = [
    "alpha",
    '"quick brown"',
    '"deep sea"',
    '"quick brown" -alpha',
    '"deep sea" alpha',
    "rare",
    '"brown quick"',
    '"sea deep" -nothing',
]
"""A word in most rows; a phrase few rows hold though its words are in many (the estimate's
trap); a phrase most rows hold; with an excluded word and beside a word; a rare word; phrases
no row or nearly none holds."""


def _content(rng: random.Random, n: int) -> str:
    """Each of `quick` and `brown` in half the rows, next to each other in every 97th only."""
    units = [rng.choice(("plain", "text", "here", "more"))]
    if rng.random() < 0.6:
        units.append("alpha")
    if rng.random() < 0.4:
        units.append("deep sea")
    if n % 600 == 0:
        units.append("rare")
    rng.shuffle(units)
    if n % 97 == 0:
        units += ["quick", "brown"]
    else:
        pair = rng.sample(["quick", "slow", "brown", "green"], 2)
        units += pair[::-1] if pair == ["quick", "brown"] else pair
    return " ".join(units)


def _filled(
    pg: PgServer,
    name: str,
    seed: int,
    total: int,
    channel_of: Callable[[int], str],
    guest_reads: str | None = None,
) -> Engine:
    """A database of `total` messages, message n in `channel_of(n)` (each channel named for its
    id without the `ch_`), by the owner, every 13th a tool record and every 17th deleted (passed
    by every window, never found); analysed. With `guest_reads`, a guest in that channel."""
    url = pg.new_database(name)
    migrate.upgrade(url)
    eng = create_engine(sync_url(url))
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    people = [{"id": "user_owner", "name": "Owner", "role": "owner", "created_at": start}]
    if guest_reads is not None:
        people.append({"id": "user_guest", "name": "Guest", "role": "guest", "created_at": start})
    with eng.begin() as conn:
        conn.execute(insert(users), people)
        conn.execute(
            insert(channels),
            [
                {"id": c, "name": c[3:], "type": "group", "created_at": start, "updated_at": start}
                for c in sorted({channel_of(n) for n in range(total)})
            ],
        )
        if guest_reads is not None:
            conn.execute(
                insert(channel_members),
                [{"channel_id": guest_reads, "user_id": "user_guest", "position": 0}],
            )
        conn.execute(
            insert(messages),
            [
                {
                    "id": f"msg_{n:06d}",
                    "channel_id": channel_of(n),
                    "user_id": "user_owner",
                    "content": _content(rng, n),
                    "type": "tool" if n % 13 == 0 else "text",
                    "deleted_at": start if n % 17 == 0 else None,
                    "metadata": {},
                    "created_at": start + timedelta(seconds=n),
                }
                for n in range(total)
            ],
        )
    with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE messages"))
    return eng


@pytest.fixture(scope="module")
def engine(pg: PgServer) -> Iterator[Engine]:
    eng = _filled(pg, "routes", 7, TOTAL, lambda n: "ch_1")
    yield eng
    eng.dispose()


def _every_page(
    conn: Connection, q: str, sort: Sort, limit: int, viewer: Viewer = OWNER
) -> list[str]:
    """The ids of every page of the search, following its cursors."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        with conn.begin():
            page = PostgresMessageSearch().search(
                conn,
                parse(q),
                viewer,
                sort,
                limit,
                cursor,
                q,
            )
        found += [hit.message.id for hit in page.hits]
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def _expected(conn: Connection, q: str, sort: Sort, channel: str | None = None) -> list[str]:
    """The same search in plain SQL, the words as tsquery syntax (they are plain here), in
    `channel` alone when given."""
    parsed = parse(q)
    required = " & ".join(" <-> ".join(t.words) for t in parsed.required)
    excluded = " | ".join(" <-> ".join(t.words) for t in parsed.excluded)
    where = "deleted_at IS NULL AND type IN ('text', 'image', 'file') AND search_tsv @@ q.req"
    if channel is not None:
        where += f" AND channel_id = '{channel}'"
    if excluded:
        where += " AND NOT search_tsv @@ q.exc"
    matched = (
        "SELECT id, ts_rank(search_tsv, q.req) AS score FROM messages, "
        "(SELECT to_tsquery('palaver_search', :req) AS req, "
        "to_tsquery('palaver_search', :exc) AS exc) AS q "
        f"WHERE {where} ORDER BY id DESC"
    )
    if sort == "relevance":
        statement = (
            f"SELECT id FROM ({matched} LIMIT {RANKED_CANDIDATES}) AS c "
            "ORDER BY score DESC, id DESC"
        )
    else:
        statement = matched
    with conn.begin():
        rows = conn.execute(text(statement), {"req": required, "exc": excluded or "x"})
        return [row.id for row in rows]


def _since(since: str, holding: float) -> Callable[[Estimate, int, bool], Route]:
    """The `since` route from `since`, its rest through the index (`holding` 0) or walking on."""
    return lambda e, w, p: Route("since", estimate=Estimate(holding, e.table), since=since)


ROUTES: dict[str, Callable[[Estimate, int, bool], Route]] = {
    "as chosen": route,
    "the planner": lambda e, w, p: PLANNER,
    "since the histogram's middle": lambda e, w, p: (
        Route("since", estimate=e, since=e.bounds[len(e.bounds) // 2]) if e.bounds else INDEX
    ),
    "the index": lambda e, w, p: INDEX,
    "a window of 8, then the index": lambda e, w, p: Route("window", 8, Estimate(0.0, e.table)),
    "a window of 8, then walking on": lambda e, w, p: Route("window", 8, Estimate(1e18, e.table)),
    "a window of 512, then the index": lambda e, w, p: Route("window", 512, Estimate(0.0, e.table)),
    "a window of 512, then walking on": lambda e, w, p: Route("window", 512, Estimate(1e18, 1e9)),
    "a window past the table": lambda e, w, p: Route("window", 8192, e),
    "since the newest 10 ids, then the index": _since("msg_002990", 0.0),
    "since the newest 10 ids, then walking on": _since("msg_002990", 1e18),
    "since the middle, then the index": _since("msg_001500", 0.0),
    "since the middle, then walking on": _since("msg_001500", 1e18),
    "since a deleted id, then the index": _since(f"msg_{17 * 100:06d}", 0.0),
    "since before the first id": _since("msg_", 0.0),
    "since after the last id": _since("msg_999999", 1e18),
}


@pytest.mark.parametrize("way", ROUTES)
@pytest.mark.parametrize("sort", ["recent", "relevance"])
def test_every_way_finds_the_same_messages_in_the_same_order(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, way: str, sort: Sort
) -> None:
    monkeypatch.setattr(postgres, "route", ROUTES[way])
    with engine.connect() as conn:
        for q in QUERIES:
            expected = _expected(conn, q, sort)
            # Small pages where they stay few: a page's cursor starts the next walk.
            for limit in (200, 7) if len(expected) < 100 else (200,):
                assert _every_page(conn, q, sort, limit) == expected, (q, limit)
        # What makes the cases: a phrase few rows hold, a word past the ranked candidates.
        assert 0 < len(_expected(conn, '"quick brown"', "recent")) < 40
        assert len(_expected(conn, "alpha", "recent")) > RANKED_CANDIDATES
        assert _expected(conn, '"sea deep" -nothing', "recent") == []


def test_the_statistics_give_an_estimate_and_a_phrase_of_common_words_is_walked(
    engine: Engine,
) -> None:
    with engine.connect() as conn, conn.begin():
        estimate = postgres._estimate(conn, parse('"quick brown"'))
        assert estimate is not None
        # Each word is in about half the rows, so the estimate expects a quarter to hold
        # both: far more than the 31 that hold the phrase.
        assert estimate.holding > 300
        assert 0.9 * TOTAL < estimate.table < 1.1 * TOTAL
        assert route(estimate, 21, True).way == "window"
        # A phrase never goes since an id (its estimate is of its words): no ids read.
        assert estimate.bounds == ()


def test_a_word_the_statistics_know_comes_with_the_ids_that_cut_the_table(
    engine: Engine,
) -> None:
    with engine.connect() as conn, conn.begin():
        estimate = postgres._estimate(conn, parse("alpha"))
        assert estimate is not None
        # About as many rows between each two: each share holds about as many messages.
        bounds = estimate.bounds
        assert len(bounds) > 10
        assert list(bounds) == sorted(bounds)
        assert bounds[0] <= "msg_000100" and bounds[-1] >= "msg_002900"
        middle = bounds[len(bounds) // 2]
        assert "msg_001200" < middle < "msg_001800"
        # A word none of the common ones: its share is only a bound.
        absent = postgres._estimate(conn, parse("absent"))
        assert absent is not None
        assert absent.bounds == bounds
        assert not absent.known
        assert estimate.known


def test_a_phrase_goes_through_the_index_when_few_rows_hold_its_words_else_a_bounded_window() -> (
    None
):
    million = 1_000_000.0
    assert route(Estimate(holding=5_000, table=million), RANKED_CANDIDATES, True) == INDEX
    assert route(Estimate(holding=1_000, table=million), 21, True) == INDEX
    common = route(Estimate(holding=400_000, table=million), RANKED_CANDIDATES, True)
    assert common.way == "window"
    # Four times the 2,500 rows a walk should pass, to a power of two below.
    assert common.window == 8192
    middling = route(Estimate(holding=20_000, table=million), RANKED_CANDIDATES, True)
    assert middling.way == "window"
    # Never more than a share of what the index would cost.
    assert middling.window * WALK_SHARE <= WINDOW_SHARE * 20_000
    assert middling.window & (middling.window - 1) == 0


def test_after_a_window_the_rest_goes_the_cheaper_way() -> None:
    million = 1_000_000.0
    # A window of 4,096 found 20 of 21: one more is about 200 rows on, far less than 30,000
    # matches through the index.
    assert not rest_by_index(Estimate(30_000, million), 21, 4096, 20)
    # It found none: at less than one in 4,096, walking on would pass some 86,000 rows, more
    # than 10,000 matches through the index cost; but less than 30,000 do.
    assert rest_by_index(Estimate(10_000, million), 21, 4096, 0)
    assert not rest_by_index(Estimate(30_000, million), 21, 4096, 0)
    # Walking on cannot pass more than the table.
    assert not rest_by_index(Estimate(900_000, million), 21, 4096, 0)


BOUNDS = tuple(f"msg_{n * 10_000:07d}" for n in range(101))
"""A histogram of a million ids, a hundredth of the table between each two."""


def test_words_go_since_an_id_where_their_matches_are_neither_few_nor_everywhere() -> None:
    million = 1_000_000.0
    # 10,000 rows hold the word: 2,000 matches are in the newest fifth of the ids, whose
    # fetch, with the index's bitmap of all 10,000, costs less than fetching all of them or
    # walking the 100,000 newest rows.
    middling = route(Estimate(10_000, million, BOUNDS), RANKED_CANDIDATES, False)
    assert middling == Route("since", estimate=middling.estimate, since="msg_0800000")
    # Twice the matches wanted are all there are: the index.
    assert route(Estimate(2_000, million, BOUNDS), RANKED_CANDIDATES, False) == INDEX
    # Everywhere: a walk passes few rows for each match, and the planner walks.
    assert route(Estimate(200_000, million, BOUNDS), RANKED_CANDIDATES, False) == PLANNER
    assert route(Estimate(10_000, million, BOUNDS), 21, False) == PLANNER
    assert route(Estimate(4_000, million, BOUNDS), 21, False) == PLANNER
    # No ids known: the index or the planner.
    assert route(Estimate(10_000, million), RANKED_CANDIDATES, False) == INDEX
    assert route(Estimate(200_000, million), RANKED_CANDIDATES, False) == PLANNER
    # A word rarer than the statistics' common ones, which a walk might pass the table for:
    # since an id when the window is small, else the index, whose cost the bound bounds.
    rarer = Estimate(3_800, million, BOUNDS, known=False)
    assert route(rarer, 21, False) == Route("since", estimate=rarer, since="msg_0980000")
    assert route(rarer, RANKED_CANDIDATES, False) == INDEX
    assert route(Estimate(3_800, million, known=False), 21, False) == INDEX


GUEST = Viewer("user_guest", reads_everything=False)


@pytest.fixture(scope="module")
def two_channels(pg: PgServer) -> Iterator[Engine]:
    """2,000 messages in two channels, every third in `ch_b`, which the guest is not in."""
    eng = _filled(
        pg, "routes_in_channels", 11, 2000, lambda n: "ch_b" if n % 3 == 0 else "ch_a", "ch_a"
    )
    yield eng
    eng.dispose()


IN_CHANNELS: dict[str, Callable[[Estimate, int], Route]] = {
    "as chosen": route_in_channels,
    "since the newest 10 ids": lambda e, w: Route("since", since="msg_001990", in_channels=True),
    "since the middle": lambda e, w: Route("since", since="msg_001000", in_channels=True),
    "since before the first id": lambda e, w: Route("since", since="msg_", in_channels=True),
    "since after the last id": lambda e, w: Route("since", since="msg_999999", in_channels=True),
}


@pytest.mark.parametrize("way", IN_CHANNELS)
@pytest.mark.parametrize("sort", ["recent", "relevance"])
def test_a_search_held_to_channels_finds_what_plain_sql_does_and_nothing_elsewhere(
    two_channels: Engine, monkeypatch: pytest.MonkeyPatch, way: str, sort: Sort
) -> None:
    monkeypatch.setattr(postgres, "route_in_channels", IN_CHANNELS[way])
    with two_channels.connect() as conn:
        for q in ("alpha", "rare", "alpha -quick", "nothing"):
            # The guest reads ch_a alone; the owner asks for ch_b by name.
            expected = _expected(conn, q, sort, "ch_a")
            limits = (200, 7) if len(expected) < 100 else (200,)
            for limit in limits:
                assert _every_page(conn, q, sort, limit, GUEST) == expected, (q, limit)
            named = _expected(conn, q, sort, "ch_b")
            assert _every_page(conn, f"in:#b {q}", sort, 200) == named, q
        assert len(_expected(conn, "alpha", "recent", "ch_a")) > RANKED_CANDIDATES // 2


def test_words_held_to_channels_go_since_an_id_when_the_newest_quarter_holds_enough() -> None:
    million = 1_000_000.0
    # 1,000 rows of the channels hold the word: 42 are in the newest 4.2% of the ids.
    often = route_in_channels(Estimate(1_000, million, BOUNDS), 21)
    assert often == Route("since", estimate=often.estimate, since="msg_0950000", in_channels=True)
    # 100 rows: the newest 42% would be needed, past a quarter: the planner's way.
    assert route_in_channels(Estimate(100, million, BOUNDS), 21) == PLANNER
    assert route_in_channels(Estimate(1_000, million, BOUNDS), RANKED_CANDIDATES) == PLANNER
    assert route_in_channels(Estimate(1_000, million), 21) == PLANNER


def test_a_guests_search_of_words_reads_its_channels_with_its_words_and_plans_in_no_round_trip(
    two_channels: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "route_in_channels", IN_CHANNELS["since the middle"])
    sent: list[str] = []

    def record(conn: Connection, cursor: object, statement: str, *args: object) -> None:
        sent.append(statement)

    def search(q: str) -> list[str]:
        with two_channels.connect() as conn, conn.begin():
            found = PostgresMessageSearch().search(conn, parse(q), GUEST, "recent", 20, None, q)
        return [hit.message.id for hit in found.hits]

    search("alpha")  # the statistics, read once a while
    event.listen(two_channels, "before_cursor_execute", record)
    try:
        found = search("alpha")
    finally:
        event.remove(two_channels, "before_cursor_execute", record)
    # Its words with its channels, the newest matches since the middle, the page's messages.
    assert len(sent) == 3, sent
    assert "channel_members" in sent[0]
    assert "set_config('enable_indexscan'" not in " ".join(sent)
    with two_channels.connect() as conn:
        assert found == _expected(conn, "alpha", "recent", "ch_a")[:20]


@pytest.mark.parametrize("sort", ["recent", "relevance"])
def test_a_guest_held_to_no_channel_finds_nothing(two_channels: Engine, sort: Sort) -> None:
    # A guest in no channel; the guest asking for a channel it is not in.
    nobody = Viewer("user_nobody", reads_everything=False)
    with two_channels.connect() as conn:
        assert _expected(conn, "alpha", sort, "ch_b")
        assert _every_page(conn, "alpha", sort, 20, nobody) == []
        assert _every_page(conn, "in:#b alpha", sort, 20, GUEST) == []
        assert _every_page(conn, "in:#b", sort, 20, GUEST) == []
