"""The search grammar's parser, alone: whatever a person types either parses or is `Invalid`,
and what it compiles to is never an FTS5 syntax error (hypothesis over arbitrary text)."""

from __future__ import annotations

import sqlite3
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaver.errors import Invalid
from palaver.search.base import marked
from palaver.search.query import Query, Terms, parse
from palaver.search.sqlite import SCOPED_CHANNELS, match_text
from palaver.store.tables.knowledge import FTS_TOKENIZE


def test_a_query_parses_into_its_parts() -> None:
    q = parse('Deploy "quick brown" -draft -"old plan" from:@"Ada L" in:#general has:link '
              "is:thread after:2026-11-01 before:2026-12-01")  # fmt: skip
    assert q == Query(
        required=(Terms(("Deploy",)), Terms(("quick", "brown"), phrase=True)),
        excluded=(Terms(("draft",)), Terms(("old", "plan"), phrase=True)),
        authors=("Ada L",),
        channels=("general",),
        has=frozenset({"link"}),
        in_thread=True,
        after=date(2026, 11, 1),
        before=date(2026, 12, 1),
    )


def test_fts5_syntax_in_a_word_is_quoted_text() -> None:
    assert match_text(parse('NEAR(a b) x* ^y content:z "say ""hi"""')) == (
        'content : ("NEAR(a" AND "b)" AND "x*" AND "^y" AND "content:z" AND "say" AND "hi")'
    )
    assert match_text(parse('a -b -"c d"')) == 'content : ("a") NOT content : ("b" OR "c d")'


def test_a_search_held_to_a_few_channels_asks_fts5_for_their_messages_alone() -> None:
    query = parse("a -b")
    assert match_text(query, ["ch_01ABC", "ch_01DEF"]) == (
        '(content : ("a") NOT content : ("b")) AND channel_id : ("01ABC" OR "01DEF")'
    )
    many = [f"ch_{n:03}" for n in range(SCOPED_CHANNELS + 1)]
    assert match_text(query, many) == match_text(query) == match_text(query, [])


_FTS = sqlite3.connect(":memory:")
_FTS.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, channel_id, tokenize='{FTS_TOKENIZE}')")
_FTS.execute("INSERT INTO t VALUES ('the quick brown fox NEAR content', 'ch_01ABC')")


_PIECES = [
    *list('ab -"*^():#@\t.é中'),
    "NEAR(", "AND", "OR", "NOT", "content:", "from:", "from:@", 'from:@"', "in:#", "has:",
    "has:link", "is:thread", "before:", "after:2026-02-30", "after:2026-01-01", "-", '-"',
]  # fmt: skip
TYPED = st.text(max_size=60) | st.lists(
    st.sampled_from(_PIECES) | st.text(max_size=6), max_size=10
).map(lambda parts: "".join(parts))


@settings(max_examples=500, deadline=None)
@given(TYPED)
def test_anything_typed_parses_or_is_invalid_and_fts5_accepts_what_it_compiles_to(
    typed: str,
) -> None:
    try:
        query = parse(typed)
    except Invalid as exc:
        assert exc.message and exc.status == 400
        return
    for channels in (None, ["ch_01ABC", 'ch_0"1']):
        match = match_text(query, channels)
        if match is not None:
            _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()


@pytest.mark.parametrize(
    ("engine_text", "html"),
    [
        ("a \x01b\x02 <c>", "a <mark>b</mark> &lt;c&gt;"),
        ("\x02stray \x01open", "stray <mark>open</mark>"),
        ('"&', "&quot;&amp;"),
    ],
)
def test_a_snippet_is_escaped_with_marks_only(engine_text: str, html: str) -> None:
    assert marked(engine_text) == html
