"""BM25 text search from FTS5's own per-term scores, kept in memory and summed in numpy.

FTS5 ranks an OR query by scoring every row that holds one of its words: at 100,000 chunks a
query of words found in a fifth of them each scores half the table, 50 ms. Yet its `bm25()` is
a sum over the query's phrases of a part that depends only on that phrase, the row and the
table's totals (IDF from the phrase's own row count, the row's length, the average length). So
each phrase's part is asked of FTS5 once (`bm25()` of that phrase alone: its tokenizer, its
statistics, its formula, to the bit) and kept as two arrays, rowids and scores; a query adds
its phrases' arrays with `np.bincount` and takes the best rows. The sum runs in the query's
phrase order from zero, as FTS5's does, so scores and ranks are FTS5's own.

Every part changes when the table does (the row count and average length move), so an agent's
parts are kept under the bytes of FTS5's structure record (`%_data` row 10), which FTS5
rewrites on every write: a search reads it in the same read transaction as anything it fetches,
and parts fetched under another record are dropped. Writes of another process are seen too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, text

if TYPE_CHECKING:
    from numpy.typing import NDArray

_STRUCTURE = "SELECT block FROM {table}_data WHERE id = 10"
_PHRASE = "SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?"
_PART_OVERHEAD = 200
"""Bytes a phrase's entry holds besides its arrays (key, arrays' headers)."""


@dataclass(frozen=True)
class Part:
    """One phrase's BM25 part: the rows holding it (ascending rowids) and its score in each."""

    rows: NDArray[np.int64]
    scores: NDArray[np.float64]

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.scores.nbytes) + _PART_OVERHEAD


class TextParts:
    """One agent's phrase parts, valid while FTS5's structure record is `stamp`; the least
    recently used are dropped beyond `limit_bytes`."""

    def __init__(self, stamp: bytes | None, limit_bytes: int) -> None:
        self.stamp = stamp
        self._limit = limit_bytes
        self._parts: OrderedDict[str, Part] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        """Searches of one agent may run on several reader threads at once."""

    @property
    def nbytes(self) -> int:
        return self._bytes

    def part(self, conn: Connection, table: str, phrase: str) -> Part:
        """The phrase's part, asked of FTS5 unless kept; `conn` must be the read transaction
        that read `stamp`."""
        with self._lock:
            found = self._parts.get(phrase)
            if found is not None:
                self._parts.move_to_end(phrase)
                return found
        fetched = _fetch(conn, table, phrase)
        with self._lock:
            if phrase not in self._parts:
                self._parts[phrase] = fetched
                self._bytes += fetched.nbytes
            while self._bytes > self._limit and len(self._parts) > 1:
                _, dropped = self._parts.popitem(last=False)
                self._bytes -= dropped.nbytes
        return fetched


def structure_stamp(conn: Connection, table: str) -> bytes | None:
    """FTS5's structure record for `table`, different after every write to it."""
    found = conn.execute(text(_STRUCTURE.format(table=table))).scalar()
    return bytes(found) if found is not None else None


def _fetch(conn: Connection, table: str, phrase: str) -> Part:
    cursor = _driver(conn).execute(_PHRASE.format(table=table), (phrase,))
    found = np.array(cursor.fetchall(), dtype=[("row", np.int64), ("score", np.float64)])
    found.sort(order="row")
    return Part(np.ascontiguousarray(found["row"]), -np.ascontiguousarray(found["score"]))


def _driver(conn: Connection) -> Any:
    """The sqlite3 connection under SQLAlchemy's: tens of thousands of rows come back as plain
    tuples, several times faster than as SQLAlchemy rows."""
    return conn.connection.dbapi_connection


def best(parts: list[Part], limit: int) -> list[tuple[int, float]]:
    """The `limit` rows of highest summed score, best first, as FTS5 would rank the OR of the
    parts' phrases; of rows with equal scores the lower rowids come first and stay in."""
    parts = [p for p in parts if p.rows.size]
    if not parts or limit <= 0:
        return []
    rows = np.concatenate([p.rows for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    base = int(rows.min())
    summed = np.bincount(rows - base, weights=scores)
    top = np.flatnonzero(summed)
    if limit < top.size:
        found = summed[top]
        kth = np.partition(found, top.size - limit)[top.size - limit]
        above = top[found > kth]
        top = np.concatenate([above, top[found == kth][: limit - above.size]])
    order = np.lexsort((top, -summed[top]))
    return [(int(top[i]) + base, float(summed[top[i]])) for i in order]
