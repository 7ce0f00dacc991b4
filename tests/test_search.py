"""Message search (issue 23): one grammar on SQLite and PostgreSQL (the cases below run on
both: `tests/test_on_postgresql.py` re-runs this module there), visibility inside the query,
edits and deletes followed at once, and a search on another node than the write."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from palaver.search.sqlite import SCOPED_CHANNELS
from tests.support import Api, Guest, Server, new_agent, new_channel, post, sql, unique

WIDE = {"messagesPerMinute": 100_000, "messageBurst": 100_000}


@dataclass
class Corpus:
    server: Server
    owner: Api
    guest: Guest
    ids: dict[str, str]
    """A name for each seeded message -> its id."""
    alpha: dict[str, Any]
    beta: dict[str, Any]

    def name_of(self, message_id: str) -> str:
        return next((k for k, v in self.ids.items() if v == message_id), message_id)


def _agent_reply(server: Server, channel_id: str, agent_id: str, content: str) -> str:
    """A stored agent reply, as the runner stores it once finished (no model needed here)."""
    message_id = f"msg_{unique('agentreply')}"
    sql(
        server,
        "INSERT INTO messages (id, channel_id, agent_id, user_id, content, type, metadata, "
        "created_at, reply_count) VALUES (?, ?, ?, NULL, ?, 'text', '{}', ?, 0)",
        message_id,
        channel_id,
        agent_id,
        content,
        "2026-06-01 12:00:00.000000",
    )
    return message_id


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    srv = Server(tmp_path_factory.mktemp("search"))
    srv.start()
    owner = srv.login()
    owner.ok("PUT", "/api/settings", json={"limits": WIDE})
    guest = Guest(srv, owner, name="Grace Hopper")
    agent = new_agent(owner, name="Researcher")
    alpha = owner.ok(
        "POST",
        "/api/channels",
        json={"name": "alpha", "type": "group", "agentIds": [agent["id"]], "memberIds": [guest.id]},
    )["channel"]
    beta = owner.ok(
        "POST", "/api/channels", json={"name": "beta", "type": "group", "agentIds": []}
    )["channel"]
    a, b = alpha["id"], beta["id"]
    ids: dict[str, str] = {}
    ids["connection"] = post(owner, a, "The connection pipeline failed again")
    ids["connected"] = post(owner, a, "Running the connect scripts tonight")
    ids["phrase"] = post(guest.api, a, "exact phrase matters here: quick brown fox")
    ids["reversed"] = post(owner, a, "brown quick fox reversed")
    ids["link"] = post(owner, a, "see https://example.com/docs for details")
    ids["reply"] = post(owner, a, "thread reply about the pipeline", threadId=ids["connection"])
    ids["hostile"] = post(owner, a, "special NEAR(x y) and * and ^caret content:colon AND OR")
    ids["file"] = post(owner, a, "quarterly report /uploads/2026-11/report.pdf", type="file")
    ids["image"] = post(owner, a, "holiday picture /uploads/2026-11/beach.png", type="image")
    ids["html"] = post(owner, a, "<b>bold</b> & tagline zebra")
    ids["secret"] = post(owner, b, "connecting the secret project")
    ids["ancient"] = post(owner, a, "ancient archive note")
    sql(
        srv,
        "UPDATE messages SET created_at = ? WHERE id = ?",
        "2020-01-15 09:00:00.000000",
        ids["ancient"],
    )
    ids["agent"] = _agent_reply(srv, a, agent["id"], "Researcher findings on quantum widgets")
    sql(
        srv,
        "INSERT INTO reply_drafts (message_id, channel_id, agent_id, content, metadata, "
        "started_at, updated_at, node_id) VALUES (?, ?, ?, ?, '{}', ?, ?, NULL)",
        f"msg_{unique('draft')}",
        a,
        agent["id"],
        "a zeppelin still streaming",
        "2026-06-01 12:00:00.000000",
        "2026-06-01 12:00:00.000000",
    )
    edited = post(owner, a, "original wording kumquat")
    owner.ok("PATCH", f"/api/messages/{edited}", json={"content": "replacement wording persimmon"})
    ids["edited"] = edited
    gone = post(owner, a, "obliterate vanishing words")
    owner.ok("DELETE", f"/api/messages/{gone}")
    yield Corpus(srv, owner, guest, ids, alpha, beta)
    guest.close()
    owner.close()
    srv.stop()


def _search(api: Api, q: str, **params: Any) -> dict[str, Any]:
    return api.ok("GET", "/api/search", params={"q": q, **params})


def _found(corpus: Corpus, q: str, api: Api | None = None, **params: Any) -> set[str]:
    body = _search(api or corpus.owner, q, limit=100, **params)
    return {corpus.name_of(r["message"]["id"]) for r in body["results"]}


GRAMMAR: list[tuple[str, set[str]]] = [
    # words: all must match, stemmed
    ("connect", {"connection", "connected", "secret"}),
    ("CONNECTIONS", {"connection", "connected", "secret"}),
    ("pipeline failed", {"connection"}),
    ("pipeline", {"connection", "reply"}),
    ("quick brown fox", {"phrase", "reversed"}),
    # exact phrase
    ('"quick brown fox"', {"phrase"}),
    ('"brown quick"', {"reversed"}),
    # exclusion
    ("connected -secret", {"connection", "connected"}),
    ('fox -"brown quick"', {"phrase"}),
    ("connect -connects", set()),
    # operators, with words and alone
    ("from:@Researcher", {"agent"}),
    ("from:@researcher quantum", {"agent"}),
    ('from:@"Grace Hopper"', {"phrase"}),
    ('from:"@Grace Hopper" fox', {"phrase"}),
    ("from:@Nobody", set()),
    ("in:#alpha connect", {"connection", "connected"}),
    ("in:#beta", {"secret"}),
    ("in:#nowhere connect", set()),
    ("has:link", {"link"}),
    ("has:file", {"file", "image"}),
    ("has:image", {"image"}),
    ("is:thread", {"reply"}),
    ("is:thread pipeline", {"reply"}),
    ("before:2021-01-01", {"ancient"}),
    ("archive after:2021-01-01", set()),
    ("archive after:2020-01-15", {"ancient"}),
    ("archive before:2020-01-15", set()),
    ("from:@Researcher after:2026-05-01 before:2026-07-01", {"agent"}),
    # FTS5 syntax is literal text in a word
    ("NEAR(", {"hostile"}),
    ("NEAR(x", {"hostile"}),
    ("^caret", {"hostile"}),
    ("content:colon", {"hostile"}),
    ("fox*", {"phrase", "reversed"}),
    ("AND", {"hostile"}),
    ("OR special", {"hostile"}),
    ("special *", {"hostile"}),
    ("special )", {"hostile"}),
    ("-* special", {"hostile"}),
    ('special ""', {"hostile"}),
    ("special\x00NEAR", {"hostile"}),
    ("special\u200b", {"hostile"}),
    # what is no longer (or not yet) there
    ("kumquat", set()),
    ("persimmon", {"edited"}),
    ("wording", {"edited"}),
    ("vanishing", set()),
    ("zeppelin", set()),
]


@pytest.mark.parametrize(("q", "expected"), GRAMMAR, ids=[q for q, _ in GRAMMAR])
def test_the_grammar_finds_what_it_says(corpus: Corpus, q: str, expected: set[str]) -> None:
    assert _found(corpus, q) == expected
    assert _found(corpus, q, sort="recent") == expected


MALFORMED: list[tuple[str, str]] = [
    ('"unbalanced', "quote"),
    ('fox "brown', "quote"),
    ('"', "quote"),
    ("from:", "from:"),
    ("from:@", "from:"),
    ('from:@"Grace', "quote"),
    ("in:", "in:"),
    ("in:#", "in:"),
    ("has:", "has:"),
    ("has:video", "has:video"),
    ("is:", "is:"),
    ("is:pinned", "is:pinned"),
    ("before:", "before:"),
    ("before:2026-13-01", "before:2026-13-01"),
    ("after:yesterday", "after:yesterday"),
    ("after:2026-1-1", "after:2026-1-1"),
    ("after:2026-02-01 after:2026-03-01", "after:"),
    ("after:2026-02-01 before:2026-01-01", "after:"),
    ("-", "'-'"),
    ("fox -", "'-'"),
    ("-from:@Researcher", "-from:@Researcher"),
    ("-fox", "excludes"),
    ("*", "no word"),
    ("( ) ^ * :", "no word"),
    ('""', "no word"),
    ("   ", "no word"),
    ("x" * 501, "500"),
]


@pytest.mark.parametrize(("q", "named"), MALFORMED, ids=[q[:30] for q, _ in MALFORMED])
def test_a_malformed_query_is_a_400_naming_its_bad_part(corpus: Corpus, q: str, named: str) -> None:
    response = corpus.owner.get("/api/search", params={"q": q})
    assert response.status_code == 400, (q, response.status_code, response.text)
    body = response.json()
    assert set(body) - {"field", "requestId"} == {"error"}, body
    assert named.lower() in body["error"].lower(), body


def test_an_empty_or_missing_query_is_a_400(corpus: Corpus) -> None:
    for params in ({}, {"q": ""}):
        response = corpus.owner.get("/api/search", params=params)
        assert response.status_code == 400, response.text
        assert "error" in response.json()


def test_a_result_has_the_message_its_channel_and_a_marked_escaped_snippet(
    corpus: Corpus,
) -> None:
    [result] = _search(corpus.owner, "pipeline failed")["results"]
    assert result["message"]["id"] == corpus.ids["connection"]
    assert result["message"]["content"] == "The connection pipeline failed again"
    assert result["channel"] == {"id": corpus.alpha["id"], "name": "alpha", "type": "group"}
    assert "<mark>pipeline</mark>" in result["snippet"]
    assert "<mark>failed</mark>" in result["snippet"]
    [html] = _search(corpus.owner, "zebra")["results"]
    assert "&lt;b&gt;bold&lt;/b&gt; &amp;" in html["snippet"]
    assert "<mark>zebra</mark>" in html["snippet"]
    assert html["snippet"].replace("<mark>", "").replace("</mark>", "").count("<") == 0
    [only_operators] = _search(corpus.owner, "has:link")["results"]
    assert only_operators["snippet"] == "see https://example.com/docs for details"


def test_a_guest_finds_only_what_its_channels_hold(corpus: Corpus) -> None:
    api = corpus.guest.api
    assert _found(corpus, "connect", api=api) == {"connection", "connected"}
    assert _found(corpus, "secret", api=api) == set()
    assert _found(corpus, "in:#beta", api=api) == set()
    assert _found(corpus, "from:@Researcher", api=api) == {"agent"}


def test_a_guest_never_finds_a_channel_it_left(corpus: Corpus) -> None:
    owner, guest = corpus.owner, corpus.guest
    word = unique("marmalade")
    channel = new_channel(owner, member_ids=[guest.id])
    post(guest.api, channel["id"], f"left behind {word}")
    assert len(_search(guest.api, word)["results"]) == 1
    owner.ok("PUT", f"/api/channels/{channel['id']}", json={"memberIds": []})
    assert _search(guest.api, word)["results"] == []
    assert len(_search(owner, word)["results"]) == 1


def test_a_guests_few_channels_are_filtered_inside_the_query_not_after_a_top_k(
    corpus: Corpus,
) -> None:
    """Many newer matches in a channel the guest cannot read must not hide its own older one."""
    owner, guest = corpus.owner, corpus.guest
    word = unique("crowded")
    mine = new_channel(owner, member_ids=[guest.id])
    other = new_channel(owner)
    post(guest.api, mine["id"], f"{word} in my channel")
    for n in range(30):
        post(owner, other["id"], f"{word} number {n} elsewhere")
    for sort in ("relevance", "recent"):
        body = _search(guest.api, word, limit=5, sort=sort)
        assert [r["channel"]["id"] for r in body["results"]] == [mine["id"]]
        assert body["nextCursor"] is None


def test_a_channel_s_id_is_not_a_word_of_its_messages(corpus: Corpus) -> None:
    """The index holds each message's channel beside its text (for a guest's few channels):
    searching for the id, or a piece of it, finds no message that does not say it."""
    channel_id = corpus.alpha["id"]
    for q in (channel_id, channel_id.rsplit("_", 1)[-1], "ch"):
        assert _search(corpus.owner, q)["results"] == []
        assert _search(corpus.guest.api, q)["results"] == []


def test_a_guest_in_few_or_many_channels_finds_its_own_ranked_as_the_owner_sees_them(
    corpus: Corpus,
) -> None:
    """Held to a few channels, the index is asked for their messages alone; held to many, SQL
    checks each match's channel: either way the guest finds what it reads, in the order the
    owner's search puts those messages."""
    owner, guest = corpus.owner, corpus.guest
    word = unique("quokka")
    rooms = [new_channel(owner, member_ids=[guest.id]) for _ in range(SCOPED_CHANNELS + 1)]
    hidden = new_channel(owner)
    for n, text in enumerate([f"{word}", f"{word} and {word} again", f"{word} once more"]):
        post(owner, rooms[n]["id"], f"{text} in a room of mine")
        post(owner, hidden["id"], f"{text} elsewhere {word} {word}")
    mine = {room["id"] for room in rooms}

    def ranked(api: Api) -> list[str]:
        results = _search(api, word, limit=50)["results"]
        return [r["message"]["id"] for r in results if r["channel"]["id"] in mine]

    expected = ranked(owner)
    assert len(expected) == 3
    assert ranked(guest.api) == expected
    assert len(_search(guest.api, word, limit=50)["results"]) == 3
    for room in rooms[3:]:
        owner.ok("PUT", f"/api/channels/{room['id']}", json={"memberIds": []})
    assert ranked(guest.api) == expected
    assert len(_search(guest.api, word, limit=50)["results"]) == 3


def test_what_is_found_does_not_change_once_the_database_keeps_statistics(
    corpus: Corpus,
) -> None:
    """PostgreSQL reads a query with a phrase through its text index when the statistics
    ANALYZE keeps say few rows hold all its words, through the planner's choice otherwise: the
    results and their order are the same either way."""
    queries = ['"quick brown fox"', '"brown quick"', 'fox -"brown quick"', '"pipeline failed"']
    queries += ['in:#alpha "pipeline failed"', "quick brown fox", "connect"]

    def results() -> dict[tuple[str, str], list[str]]:
        return {
            (q, sort): [r["message"]["id"] for r in _search(corpus.owner, q, sort=sort)["results"]]
            for q in queries
            for sort in ("relevance", "recent")
        }

    before = results()
    sql(corpus.server, "ANALYZE")
    assert results() == before
    assert before[('"quick brown fox"', "recent")] == [corpus.ids["phrase"]]
    # A phrase of many rare words: its estimate, a product of small frequencies, is summed as
    # logs (as a product it fell below what a float holds and failed the search).
    long_phrase = '"' + " ".join(f"q{n}" for n in range(100)) + '"'
    for sort in ("relevance", "recent"):
        assert _search(corpus.guest.api, long_phrase, sort=sort)["results"] == []


def test_a_post_is_found_as_soon_as_it_returns_and_an_edit_by_its_new_words_only(
    corpus: Corpus,
) -> None:
    owner, channel = corpus.owner, corpus.alpha["id"]
    old, new = unique("before"), unique("after")
    message_id = post(owner, channel, f"first draft {old}")
    assert [r["message"]["id"] for r in _search(owner, old)["results"]] == [message_id]
    owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": f"second {new}"})
    assert _search(owner, old)["results"] == []
    assert [r["message"]["id"] for r in _search(owner, new)["results"]] == [message_id]
    owner.ok("DELETE", f"/api/messages/{message_id}")
    assert _search(owner, new)["results"] == []


def test_a_deleted_thread_root_kept_as_a_tombstone_is_not_found(corpus: Corpus) -> None:
    owner, channel = corpus.owner, corpus.alpha["id"]
    word = unique("tombstone")
    root = post(owner, channel, f"root {word}")
    post(owner, channel, "a reply", threadId=root)
    owner.ok("DELETE", f"/api/messages/{root}")
    assert _search(owner, word)["results"] == []
    assert _search(owner, "root is:thread")["results"] == []


def test_a_vacuum_of_the_sqlite_file_keeps_the_index_on_the_right_messages(
    corpus: Corpus,
) -> None:
    """The FTS5 index names messages by rowid; SQLite says a VACUUM may renumber the rowids
    of a table without an integer primary key (docs/SCALING.md). Gaps first, so that a
    renumbering would show."""
    if corpus.server.database_url is not None:
        pytest.skip("about SQLite's file")
    owner, channel = corpus.owner, corpus.alpha["id"]
    word = unique("vacuumed")
    kept = [post(owner, channel, f"kept {i} {word}") for i in range(6)]
    for message_id in kept[::2]:
        owner.ok("DELETE", f"/api/messages/{message_id}")
    sql(corpus.server, "VACUUM")
    found = _search(owner, word, sort="recent")["results"]
    assert [r["message"]["id"] for r in found] == kept[1::2][::-1]
    assert [r["message"]["content"] for r in found] == [f"kept {i} {word}" for i in (5, 3, 1)]


def test_pages_follow_each_other_without_gaps_or_repeats(corpus: Corpus) -> None:
    owner, channel = corpus.owner, corpus.alpha["id"]
    word = unique("paged")
    posted = [post(owner, channel, f"{word} {'again ' * (n % 4)}item {n}") for n in range(23)]
    for sort in ("recent", "relevance"):
        seen: list[str] = []
        cursor = None
        for _ in range(5):
            params: dict[str, Any] = {"limit": 10, "sort": sort}
            if cursor:
                params["cursor"] = cursor
            body = _search(owner, word, **params)
            seen += [r["message"]["id"] for r in body["results"]]
            cursor = body["nextCursor"]
            if cursor is None:
                break
        assert sorted(seen) == sorted(posted), sort
        if sort == "recent":
            assert seen == list(reversed(posted))


def test_a_cursor_of_another_search_or_a_forged_one_is_a_400(corpus: Corpus) -> None:
    owner = corpus.owner
    body = _search(owner, "connect", limit=1)
    assert body["nextCursor"]
    for q, cursor, sort in (
        ("pipeline", body["nextCursor"], "relevance"),
        ("connect", body["nextCursor"], "recent"),
        ("connect", "not-a-cursor", "relevance"),
        ("connect", "eyJrIjoxfQ", "relevance"),
    ):
        response = owner.get("/api/search", params={"q": q, "cursor": cursor, "sort": sort})
        assert response.status_code == 400, response.text
        assert "cursor" in response.json()["error"]


def test_bad_limit_and_sort_are_400(corpus: Corpus) -> None:
    for params in ({"limit": 0}, {"limit": 101}, {"sort": "best"}):
        response = corpus.owner.get("/api/search", params={"q": "connect", **params})
        assert response.status_code == 400, response.text


def test_search_needs_a_session(corpus: Corpus) -> None:
    with corpus.server.client() as anonymous:
        assert anonymous.get("/api/search", params={"q": "connect"}).status_code == 401


def test_relevance_puts_the_closer_match_first(corpus: Corpus) -> None:
    owner, channel = corpus.owner, corpus.alpha["id"]
    word = unique("ranked")
    weak = post(owner, channel, f"{word} " + "filler words that dilute the match " * 6)
    strong = post(owner, channel, f"{word} {word} {word}")
    ids = [r["message"]["id"] for r in _search(owner, word)["results"]]
    assert ids == [strong, weak]


def test_a_search_on_another_node_finds_what_one_node_wrote(
    tmp_path: Path, redis_server: Any
) -> None:
    """Two nodes, one database: the write on A, the search on B, at once."""
    folder = tmp_path / "data"
    a = Server(folder)
    a.start(REDIS_URL=redis_server.url())
    env = {"DATABASE_URL": a.database_url} if a.database_url else {}
    b = Server(folder, env=env)
    b.log_path = tmp_path / "b-server.log"
    try:
        b.start(REDIS_URL=a.env["REDIS_URL"])
        with a.login() as on_a, b.login() as on_b:
            channel = new_channel(on_a)
            word, later = unique("crossnode"), unique("edited")
            message_id = post(on_a, channel["id"], f"written on a {word}")
            assert [r["message"]["id"] for r in _search(on_b, word)["results"]] == [message_id]
            on_a.ok("PATCH", f"/api/messages/{message_id}", json={"content": f"now {later}"})
            assert _search(on_b, word)["results"] == []
            assert len(_search(on_b, later)["results"]) == 1
            on_a.ok("DELETE", f"/api/messages/{message_id}")
            assert _search(on_b, later)["results"] == []
    finally:
        b.stop()
        a.stop()
