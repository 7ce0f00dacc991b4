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

A common word not kept (new to the agent's parts, or the table changed since) would cost
FTS5's scoring of every row holding it, some 1.1 us a row. So when the query's other words
leave a k-th best score that the common words' largest possible parts cannot lift a row
without those words over, only rows within reach are scored for them (`ranked`): a common
word's rows and in-row counts come from `fts5vocab`'s instance table (a walk of its postings,
no scoring), each candidate's length from FTS5's `%_docsize`, and its part from `bm25()`'s own
formula, in its order of operations. These parts answer one query and are not kept.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, text

if TYPE_CHECKING:
    from numpy.typing import NDArray

_STRUCTURE = "SELECT block FROM {table}_data WHERE id = 10"
_PHRASE = "SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?"
_AVERAGES = "SELECT block FROM {table}_data WHERE id = 1"
_INSTANCES = "SELECT group_concat(doc) FROM {table}_instances WHERE term = ?"
_LENGTHS = (
    "SELECT group_concat(id), group_concat(hex(sz), '') FROM (SELECT id, sz FROM "
    "{table}_docsize WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id)"
)
_COLUMNS = 2
"""The agent tables' columns (context, content): each row's `%_docsize` record holds a length
per column, FTS5's averages record the row count and then a total per column."""
K1 = 1.2
B = 0.75
"""FTS5's BM25 constants (`fts5_aux.c`)."""
COMMON_ROWS = 2_000
"""A word held by this many rows or more, not kept, is left out of the first pass of `ranked`;
below it, asking FTS5 for its part costs under 2 ms."""
MAX_CANDIDATES = 5_000
"""Beyond this many candidates the common words' parts are asked of FTS5 whole instead."""
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
    """One agent's phrase parts, valid while FTS5's structure record (on PostgreSQL, the
    agent's `text_stamps` counter) is `stamp`; the least recently used are dropped beyond
    `limit_bytes`."""

    def __init__(self, stamp: bytes | int | None, limit_bytes: int) -> None:
        self.stamp = stamp
        self._limit = limit_bytes
        self._parts: OrderedDict[str, Part] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        """Searches of one agent may run on several reader threads at once."""
        self.unfinished: set[str] = set()
        """Phrases a search scored only in part, for `finish` to ask of FTS5 whole."""

    @property
    def nbytes(self) -> int:
        return self._bytes

    def holds(self, phrase: str) -> bool:
        with self._lock:
            return phrase in self._parts

    def kept(self, phrase: str) -> Part | None:
        """The phrase's part if kept (now the most recently used)."""
        with self._lock:
            found = self._parts.get(phrase)
            if found is not None:
                self._parts.move_to_end(phrase)
            return found

    def part(self, conn: Connection, table: str, phrase: str) -> Part:
        """The phrase's part, asked of FTS5 unless kept; `conn` must be the read transaction
        that read `stamp`."""
        found = self.kept(phrase)
        if found is not None:
            return found
        fetched = _fetch(conn, table, phrase)
        self.keep(phrase, fetched)
        return fetched

    def leave_unfinished(self, phrases: Iterable[str]) -> None:
        with self._lock:
            self.unfinished.update(phrases)

    def finish(self, conn: Connection, table: str) -> None:
        """Ask FTS5 for the unfinished phrases' parts, if the table is still at `stamp`."""
        with self._lock:
            phrases, self.unfinished = self.unfinished, set()
        if structure_stamp(conn, table) == self.stamp:
            for phrase in phrases:
                self.part(conn, table, phrase)

    def keep(self, phrase: str, part: Part) -> None:
        """Keep the phrase's whole part, made in a read transaction that read `stamp`."""
        with self._lock:
            if phrase not in self._parts:
                self._parts[phrase] = part
                self._bytes += part.nbytes
            while self._bytes > self._limit and len(self._parts) > 1:
                _, dropped = self._parts.popitem(last=False)
                self._bytes -= dropped.nbytes


@dataclass(frozen=True)
class Word:
    """A query phrase, the term FTS5 indexes it as, and how many of the agent's rows held that
    term when last counted (it only tells cheap words from costly ones)."""

    phrase: str
    term: str
    rows: int


@dataclass(frozen=True)
class _Totals:
    rows: int
    tokens: int


def ranked(
    conn: Connection, table: str, parts: TextParts, words: list[Word], limit: int
) -> list[tuple[int, float]]:
    """The best `limit` rows for the OR of `words`, as `best` over every word's whole part
    ranks them and with the same scores. Common words not kept are scored only for the rows
    they could lift into the top when the other words leave few enough; else the rarest of
    them is asked of FTS5 whole (and kept) and the others tried again (module docstring)."""
    common = sorted(
        (w for w in words if w.rows >= COMMON_ROWS and not parts.holds(w.phrase)),
        key=lambda w: w.rows,
    )
    whole = {w.phrase: parts.part(conn, table, w.phrase) for w in words if w not in common}
    totals = _totals(conn, table) if common and limit > 0 else None
    counted = _counted(conn, table, common) if totals is not None else None
    while common and totals is not None and counted is not None:
        reach = {w.phrase: counted[w.phrase] for w in common}
        pruned = _pruned(conn, table, totals, list(whole.values()), reach, limit)
        if pruned is not None:
            parts.leave_unfinished(pruned)
            return best([pruned.get(w.phrase) or whole[w.phrase] for w in words], limit)
        rarest = common.pop(0).phrase
        made = _whole(conn, table, totals, counted[rarest])
        if made is None:
            whole[rarest] = parts.part(conn, table, rarest)
        else:
            parts.keep(rarest, made)
            whole[rarest] = made
    return best([whole.get(w.phrase) or parts.part(conn, table, w.phrase) for w in words], limit)


def _counted(
    conn: Connection, table: str, words: list[Word]
) -> dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] | None:
    """Every word's rows and counts (`_instances`), or None if any is not to be had so."""
    counted = {}
    for word in words:
        found = _instances(conn, table, word)
        if found is None:
            return None
        counted[word.phrase] = found
    return counted


def _pruned(
    conn: Connection,
    table: str,
    totals: _Totals,
    whole: list[Part],
    counted: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]],
    limit: int,
) -> dict[str, Part] | None:
    """The `counted` words' parts for the rows within reach of the top `limit`, or None when
    too many rows are, or the `whole` parts place fewer than `limit` rows.

    The whole parts give each row a floor, and the `limit`-th best floor is a floor of the
    `limit`-th best score; a counted word adds at most its part at length zero to a row (the
    part falls as the row's length grows). A row whose floor plus that reach stays below it
    cannot be in the top (margins of 1e-9 cover rounding)."""
    idf = {phrase: _idf(totals, rows.size) for phrase, (rows, _) in counted.items()}
    floors = [(p.rows, p.scores) for p in whole if p.rows.size]
    reaches = [
        (rows, _bm25(freq, np.zeros_like(rows), totals, idf[phrase]))
        for phrase, (rows, freq) in counted.items()
    ]
    if not floors:
        return None
    listed = np.concatenate([rows for rows, _ in floors + reaches])
    base = int(listed.min())
    size = int(listed.max()) - base + 1
    floor = np.zeros(size)
    for rows, weights in floors:
        floor += np.bincount(rows - base, weights=weights, minlength=size)
    reach = np.zeros(size)
    for rows, weights in reaches:
        reach += np.bincount(rows - base, weights=weights, minlength=size)
    held = np.flatnonzero(floor)
    if held.size < limit:
        return None
    kth = np.partition(floor[held], held.size - limit)[held.size - limit]
    candidates = np.flatnonzero(floor + reach * (1 + 1e-9) >= kth * (1 - 1e-9)) + base
    if candidates.size > MAX_CANDIDATES:
        return None
    lengths = _lengths(conn, table, candidates)
    if lengths is None:
        return None
    pruned: dict[str, Part] = {}
    for phrase, (rows, freq) in counted.items():
        at = np.minimum(np.searchsorted(candidates, rows), candidates.size - 1)
        inside = candidates[at] == rows
        scores = _bm25(freq[inside], lengths[at[inside]], totals, idf[phrase])
        pruned[phrase] = Part(rows[inside], scores)
    return pruned


def _whole(
    conn: Connection,
    table: str,
    totals: _Totals,
    counted: tuple[NDArray[np.int64], NDArray[np.float64]],
) -> Part | None:
    """A word's whole part from its counted rows and their lengths: what `bm25()` of the word
    alone gives, for a third of its cost."""
    rows, freq = counted
    lengths = _lengths(conn, table, rows)
    if lengths is None:
        return None
    return Part(rows, _bm25(freq, lengths, totals, _idf(totals, rows.size)))


def _idf(totals: _Totals, hits: int) -> float:
    """FTS5's IDF, floored as it is: a word in half the rows or more weighs 1e-6."""
    idf = math.log((totals.rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def _bm25(
    freq: NDArray[np.float64], lengths: NDArray[np.int64], totals: _Totals, idf: float
) -> NDArray[np.float64]:
    """A phrase's part in each row, written as `fts5Bm25Function` computes it, operation by
    operation, so that the doubles come out the same."""
    average = totals.tokens / totals.rows
    size = lengths.astype(np.float64)
    scores: NDArray[np.float64] = idf * (
        (freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / average))
    )
    return scores


def _totals(conn: Connection, table: str) -> _Totals | None:
    """Row and token counts from FTS5's averages record (`%_data` row 1): what `bm25()` reads
    through `xRowCount` and `xColumnTotalSize`."""
    record = _driver(conn).execute(_AVERAGES.format(table=table)).fetchone()
    values = _varints(bytes(record[0])) if record is not None else None
    if values is None or values.size != 1 + _COLUMNS or values[0] <= 0:
        return None
    return _Totals(int(values[0]), int(values[1:].sum()))


def _instances(
    conn: Connection, table: str, word: Word
) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
    """The rows holding the word's term and its count in each (every column weighs 1), read
    from the instance table: the rows FTS5 matches for the phrase, since the term is the one
    FTS5's tokenizer makes of it (`fts_terms`; a word it cuts in several terms is never
    here). None when the table is older than its instance table, or holds no such term."""
    driver = _driver(conn)
    try:
        listed = driver.execute(_INSTANCES.format(table=table), (word.term,)).fetchone()[0]
    except sqlite3.OperationalError:  # a table made before its instance table was
        return None
    docs = _integers(listed)
    if docs.size == 0:
        return None
    docs.sort()
    starts = np.flatnonzero(np.diff(docs, prepend=docs[0] - 1))
    rows = docs[starts]
    freq = np.diff(np.append(starts, docs.size)).astype(np.float64)
    return rows, freq


def _lengths(conn: Connection, table: str, rows: NDArray[np.int64]) -> NDArray[np.int64] | None:
    """Each row's length in tokens, all columns (`bm25()`'s `xColumnSize(-1)`), from FTS5's
    `%_docsize`; `rows` ascending."""
    listed = json.dumps(rows.tolist())
    ids, sizes = _driver(conn).execute(_LENGTHS.format(table=table), (listed,)).fetchone()
    values = _varints(bytes.fromhex(sizes or ""))
    if values is None or values.size != _COLUMNS * rows.size:
        return None
    if not np.array_equal(_integers(ids), rows):
        return None
    lengths: NDArray[np.int64] = values.reshape(-1, _COLUMNS).sum(axis=1)
    return lengths


def _varints(data: bytes) -> NDArray[np.int64] | None:
    """SQLite varints (FTS5's records use them), seven bits a byte, most significant first;
    None if the data ends inside one. Lengths and counts never need the nine-byte form."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if raw.size == 0 or raw[-1] >= 0x80:
        return None
    last = raw < 0x80
    ends = np.flatnonzero(last)
    starts = np.concatenate(([0], ends[:-1] + 1))
    which: NDArray[np.int64] = np.cumsum(last) - last
    shifts = 7 * (ends[which] - np.arange(raw.size))
    values: NDArray[np.int64] = np.add.reduceat((raw & 0x7F).astype(np.int64) << shifts, starts)
    return values


def _integers(listed: str | None) -> NDArray[np.int64]:
    """A `group_concat` of integers as an array."""
    return np.array(listed.split(","), dtype=np.int64) if listed else np.zeros(0, np.int64)


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
    if limit <= 0:
        return []
    base, summed = _summed(parts)
    top = np.flatnonzero(summed)
    if limit < top.size:
        found = summed[top]
        kth = np.partition(found, top.size - limit)[top.size - limit]
        above = top[found > kth]
        top = np.concatenate([above, top[found == kth][: limit - above.size]])
    order = np.lexsort((top, -summed[top]))
    return [(int(top[i]) + base, float(summed[top[i]])) for i in order]


def _summed(parts: list[Part]) -> tuple[int, NDArray[np.float64]]:
    """Each row's sum of its parts, added in the parts' order from zero as FTS5 adds a query's
    phrases, indexed by rowid less the returned base."""
    parts = [p for p in parts if p.rows.size]
    if not parts:
        return 0, np.zeros(0, dtype=np.float64)
    rows = np.concatenate([p.rows for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    base = int(rows.min())
    summed = np.bincount(rows - base, weights=scores).astype(np.float64, copy=False)
    return base, summed
