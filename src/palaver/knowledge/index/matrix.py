"""One agent's vectors of one kind, as a float32 matrix searched by exact cosine.

A search may run in a worker thread while the event loop applies writes, so it works on a
snapshot: appends go past the snapshot's rows into spare capacity, while replacing or removing
rows builds new arrays and lists, leaving every snapshot as it was. Each row is kept as int8
codes too (a quarter of its bytes more), which large matrices scan first (see `int8_scan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from palaver.knowledge.index.base import Entry, Hit, Space
from palaver.knowledge.index.int8_scan import Codes, approximate, encode, encode_query

if TYPE_CHECKING:
    from numpy.typing import NDArray

PREFILTER_ROWS = 20_000
"""From this many rows a search scans the int8 codes first: below it the float32 scan takes
under 2 ms, and the two steps would save little."""
CANDIDATES = 200
"""Rows scored exactly after the int8 scan, before the rows its error bounds add (none, for
the vectors we measured: see docs/NOTES.md)."""


@dataclass(frozen=True)
class Snapshot:
    matrix: NDArray[np.float32]
    codes: Codes
    ids: Sequence[str]
    channels: Sequence[str | None]
    types: Sequence[str | None]

    @property
    def size(self) -> int:
        return int(self.matrix.shape[0])

    def top(
        self,
        query: NDArray[np.float32],
        limit: int,
        channel_id: str | None = None,
        type: str | None = None,
    ) -> list[Hit]:
        """The best `limit` rows by dot product (cosine, rows being unit length); ties keep
        insertion order so results are reproducible. Exact at any size: large matrices scan
        their int8 codes first, then score exactly every row that may be in the top."""
        n = self.size
        if n == 0 or limit <= 0:
            return []
        mask = None
        if channel_id is not None or type is not None:
            mask = np.fromiter(
                (
                    (channel_id is None or c == channel_id) and (type is None or t == type)
                    for c, t in zip(self.channels[:n], self.types[:n], strict=True)
                ),
                dtype=bool,
                count=n,
            )
        available = n if mask is None else int(mask.sum())
        k = min(limit, available)
        if k == 0:
            return []
        if n >= PREFILTER_ROWS:
            rows, scores = self._prefiltered(query, k, available, mask)
            return [Hit(self.ids[i], float(s)) for i, s in zip(rows, scores, strict=True)]
        every = self.matrix @ query
        if mask is not None:
            every = np.where(mask, every, -np.inf)
        best = np.sort(np.argpartition(-every, k - 1)[:k]) if k < n else np.arange(n)
        best = best[np.argsort(-every[best], kind="stable")]
        return [Hit(self.ids[i], float(every[i])) for i in best]

    def _prefiltered(
        self, query: NDArray[np.float32], k: int, available: int, mask: NDArray[np.bool_] | None
    ) -> tuple[NDArray[np.intp], NDArray[np.float32]]:
        """The exact top `k` (rows, scores): the best `CANDIDATES` by int8 score are scored in
        float32, then every other row whose int8 score plus its error bound reaches the k-th
        best of those; the rest cannot beat it."""
        query_codes, query_scale = encode_query(query)
        approx = approximate(self.codes, query_codes, query_scale)
        if mask is not None:
            approx = np.where(mask, approx, -np.inf)
        depth = min(available, max(CANDIDATES, k))
        rows = np.argpartition(-approx, depth - 1)[:depth]
        exact = self.matrix[rows] @ query
        kth = np.partition(exact, depth - k)[depth - k]
        reach = approx + self.codes.error_bounds(query, query_scale)
        reach[rows] = -np.inf
        extra = np.flatnonzero(reach >= kth)
        if extra.size:
            rows = np.concatenate([rows, extra])
            exact = np.concatenate([exact, self.matrix[extra] @ query])
        order = np.lexsort((rows, -exact))[:k]
        return rows[order], exact[order]


class _Rows:
    """The float32 rows and their int8 codes, in buffers of one capacity."""

    def __init__(self, dim: int, capacity: int) -> None:
        capacity = max(capacity, 1)
        self.vectors = np.empty((capacity, dim), dtype=np.float32)
        self.codes = np.empty((capacity, dim), dtype=np.int8)
        self.scales = np.empty(capacity, dtype=np.float32)
        self.l1 = np.empty(capacity, dtype=np.float32)

    @property
    def capacity(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.codes.nbytes + self.scales.nbytes + self.l1.nbytes)

    def put(self, at: slice | list[int], vectors: NDArray[np.float32]) -> None:
        coded = encode(vectors)
        self.vectors[at] = vectors
        self.codes[at] = coded.codes
        self.scales[at] = coded.scales
        self.l1[at] = coded.l1

    def taken(self, rows: list[int] | slice, capacity: int | None = None) -> _Rows:
        """A copy holding `rows` (a slice keeps the remaining capacity empty)."""
        vectors = self.vectors[rows]
        made = _Rows(vectors.shape[1], max(capacity or 0, vectors.shape[0]))
        count = vectors.shape[0]
        made.vectors[:count] = vectors
        made.codes[:count] = self.codes[rows]
        made.scales[:count] = self.scales[rows]
        made.l1[:count] = self.l1[rows]
        return made

    def head(self, n: int) -> tuple[NDArray[np.float32], Codes]:
        return self.vectors[:n], Codes(self.codes[:n], self.scales[:n], self.l1[:n])


class VectorMatrix:
    def __init__(self, space: Space, capacity: int = 16) -> None:
        self.space = space
        self._rows = _Rows(space.dim, capacity)
        self._n = 0
        self._ids: list[str] = []
        self._channels: list[str | None] = []
        self._types: list[str | None] = []
        self._pos: dict[str, int] = {}

    @classmethod
    def sized(cls, space: Space, rows: int) -> VectorMatrix:
        """Room for `rows` and an eighth more, so that the first writes after a load do not
        copy the whole matrix."""
        return cls(space, capacity=rows + rows // 8 + 16)

    @property
    def nbytes(self) -> int:
        """Memory held by the vectors and their codes, spare capacity included (the id lists
        are small beside them: some 100 bytes a row against 1,920 for 384 dimensions)."""
        return self._rows.nbytes + 100 * self._n

    def snapshot(self) -> Snapshot:
        matrix, codes = self._rows.head(self._n)
        return Snapshot(matrix, codes, self._ids, self._channels, self._types)

    def upsert(self, entries: Sequence[Entry], vectors: NDArray[np.float32]) -> None:
        fresh = [(e, v) for e, v in zip(entries, vectors, strict=True) if e.id not in self._pos]
        known = [(e, v) for e, v in zip(entries, vectors, strict=True) if e.id in self._pos]
        if known:
            self._rows = self._rows.taken(slice(0, self._n), self._rows.capacity)
            self._channels = list(self._channels)
            self._types = list(self._types)
            for entry, _ in known:
                row = self._pos[entry.id]
                self._channels[row] = entry.channel_id
                self._types[row] = entry.type
            self._rows.put([self._pos[e.id] for e, _ in known], np.stack([v for _, v in known]))
        if fresh:
            self.extend([e for e, _ in fresh], np.stack([v for _, v in fresh]))

    def relabel(self, ids: Iterable[str], type: str | None) -> None:
        """Give the rows a new `type` (a chunk's visibility), copying as `upsert` does."""
        rows = [self._pos[i] for i in ids if i in self._pos]
        if not rows:
            return
        self._types = list(self._types)
        for row in rows:
            self._types[row] = type

    def remove(self, ids: Iterable[str]) -> None:
        drop = {self._pos[i] for i in ids if i in self._pos}
        if not drop:
            return
        keep = [row for row in range(self._n) if row not in drop]
        self._rows = self._rows.taken(keep)
        self._ids = [self._ids[row] for row in keep]
        self._channels = [self._channels[row] for row in keep]
        self._types = [self._types[row] for row in keep]
        self._n = len(keep)
        self._pos = {item_id: row for row, item_id in enumerate(self._ids)}

    def extend(self, entries: Sequence[Entry], vectors: NDArray[np.float32]) -> None:
        """Add rows the matrix does not hold yet."""
        needed = self._n + len(entries)
        if needed > self._rows.capacity:
            capacity = max(needed, 2 * self._rows.capacity)
            self._rows = self._rows.taken(slice(0, self._n), capacity)
        self._rows.put(slice(self._n, needed), vectors)
        for offset, entry in enumerate(entries):
            self._pos[entry.id] = self._n + offset
            self._ids.append(entry.id)
            self._channels.append(entry.channel_id)
            self._types.append(entry.type)
        self._n = needed
