"""Query words as the agents' FTS5 tables index them, from FTS5's own tokenizer.

The tables' tokenizer (`FTS_TOKENIZE`) folds and stems words in ways a re-implementation gets
wrong for some of them: "technology" is "technolog" to FTS5 and "technologi" to the snowball
Porter stemmer, words under 3 bytes are not stemmed, and only some letters lose their
diacritics ("сценарий" keeps its breve). So a word goes through an FTS5 table of the same
tokenizer in a private in-memory database, and its terms are read back from that table's
vocabulary (some 50 us a word; the last 10,000 words are remembered).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict

from palaver.store.tables.knowledge import FTS_TOKENIZE

_REMEMBERED = 10_000


class _Tokenizer:
    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{FTS_TOKENIZE}')"
        )
        self._conn.execute("CREATE VIRTUAL TABLE found USING fts5vocab(words, 'instance')")
        self._known: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    def terms(self, word: str) -> tuple[str, ...]:
        known = self._known.get(word)
        if known is not None:
            self._known.move_to_end(word)
            return known
        self._conn.execute("INSERT INTO words(rowid, word) VALUES (1, ?)", (word,))
        found = tuple(
            term for (term,) in self._conn.execute("SELECT term FROM found ORDER BY offset")
        )
        self._conn.execute("DELETE FROM words")
        self._known[word] = found
        if len(self._known) > _REMEMBERED:
            self._known.popitem(last=False)
        return found


_tokenizer: _Tokenizer | None = None
_lock = threading.Lock()
"""Searches run on several reader threads; one word at a time goes through the table."""


def fts_terms(word: str) -> tuple[str, ...]:
    """The terms FTS5 indexes `word` as, in order: none for separators alone, several for a
    word it cuts in parts."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            _tokenizer = _Tokenizer()
        return _tokenizer.terms(word)
