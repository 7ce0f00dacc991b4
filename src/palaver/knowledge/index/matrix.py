"""One agent's vectors of one kind, as a float32 matrix searched by exact cosine.

A search may run in a worker thread while the event loop applies writes, so it works on a
snapshot: appends go past the snapshot's rows into spare capacity, while replacing or removing
rows builds new arrays and lists, leaving every snapshot as it was. A large matrix may also
hold a packed int8 scan of its rows (`int8_scan`), good for the rows it was made from while no
row is replaced or removed (the matrix's `version`); rows appended since are scored exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from palaver.knowledge.index import int8_scan
from palaver.knowledge.index.base import Entry, Hit, Space
from palaver.knowledge.index.int8_scan import PackedScan, encode_query

if TYPE_CHECKING:
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Snapshot:
    matrix: NDArray[np.float32]
    ids: Sequence[str]
    channels: Sequence[str | None]
    types: Sequence[str | None]
    version: int = 0
    scan: PackedScan | None = None
    """The packed int8 scan of the first rows, when it matches `version`."""

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
        insertion order so results are reproducible. Exact either way: with a packed scan the
        int8 scores pick which rows are scored exactly (see `_prefiltered`)."""
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
        if self.scan is not None and n - self.scan.rows <= n // 8:
            rows, found = self._prefiltered(self.scan, query, k, mask)
            return [Hit(self.ids[i], float(s)) for i, s in zip(rows, found, strict=True)]
        scores = self.matrix @ query
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        best = np.sort(np.argpartition(-scores, k - 1)[:k]) if k < n else np.arange(n)
        best = best[np.argsort(-scores[best], kind="stable")]
        return [Hit(self.ids[i], float(scores[i])) for i in best]

    def _prefiltered(
        self,
        scan: PackedScan,
        query: NDArray[np.float32],
        k: int,
        mask: NDArray[np.bool_] | None,
    ) -> tuple[NDArray[np.intp], NDArray[np.float32]]:
        """The exact top `k` (rows, scores): the scan's best `CANDIDATES` and the rows
        appended since it was made are scored in float32, then every other row whose int8
        score plus its error bound reaches the k-th best of those; the rest cannot beat it."""
        packed = scan.rows
        query_codes, query_scale = encode_query(query)
        approx = scan.approximate(query_codes, query_scale)
        tail = np.arange(packed, self.size)
        if mask is not None:
            approx = np.where(mask[:packed], approx, -np.inf)
            tail = tail[mask[packed:]]
        depth = min(int(np.isfinite(approx).sum()), max(int8_scan.CANDIDATES, k))
        picked = np.argpartition(-approx, depth - 1)[:depth] if depth else tail[:0]
        rows = np.concatenate([picked, tail])
        exact = self.matrix[rows] @ query
        kth = np.partition(exact, rows.size - k)[rows.size - k]
        reach = approx + scan.error_bounds(query, query_codes, query_scale)
        reach[picked] = -np.inf
        extra = np.flatnonzero(reach >= kth)
        if extra.size:
            rows = np.concatenate([rows, extra])
            exact = np.concatenate([exact, self.matrix[extra] @ query])
        order = np.lexsort((rows, -exact))[:k]
        return rows[order], exact[order]


class VectorMatrix:
    def __init__(self, space: Space, capacity: int = 16) -> None:
        self.space = space
        self._buf = np.empty((max(capacity, 1), space.dim), dtype=np.float32)
        self._n = 0
        self._ids: list[str] = []
        self._channels: list[str | None] = []
        self._types: list[str | None] = []
        self._pos: dict[str, int] = {}
        self.version = 0
        """Counts replaced and removed rows: a packed scan holds for one version."""
        self._scan: PackedScan | None = None
        self.unpackable = False
        """A packed scan could not be made: searches stay float32."""
        self.packed_at = -math.inf
        """When the last packed scan was begun (`time.monotonic`)."""

    @classmethod
    def sized(cls, space: Space, rows: int) -> VectorMatrix:
        """Room for `rows` and an eighth more, so that the first writes after a load do not
        copy the whole matrix."""
        return cls(space, capacity=rows + rows // 8 + 16)

    @property
    def nbytes(self) -> int:
        """Memory held by the vectors, spare capacity included (the id lists are small beside
        them: some 100 bytes a row against 1,536 for 384 floats)."""
        scan = self._scan.nbytes if self._scan is not None else 0
        return int(self._buf.nbytes) + 100 * self._n + scan

    def snapshot(self) -> Snapshot:
        scan = self._scan if self._scan and self._scan.version == self.version else None
        rows = self._buf[: self._n]
        return Snapshot(rows, self._ids, self._channels, self._types, self.version, scan)

    def needs_scan(self) -> bool:
        """Large, and without a packed scan of its current version that covers nearly all of
        its rows."""
        if self._n < int8_scan.PREFILTER_ROWS or self.unpackable:
            return False
        scan = self._scan
        return scan is None or scan.version != self.version or self._n - scan.rows > self._n // 8

    def attach(self, scan: PackedScan) -> None:
        """Keep `scan` if no row was replaced or removed since its snapshot was taken."""
        if scan.version == self.version and scan.rows <= self._n:
            self._scan = scan

    def upsert(self, entries: Sequence[Entry], vectors: NDArray[np.float32]) -> None:
        fresh = [(e, v) for e, v in zip(entries, vectors, strict=True) if e.id not in self._pos]
        known = [(e, v) for e, v in zip(entries, vectors, strict=True) if e.id in self._pos]
        if known:
            self.version += 1
            self._scan = None
            self._buf = self._buf.copy()
            self._channels = list(self._channels)
            self._types = list(self._types)
            for entry, vector in known:
                row = self._pos[entry.id]
                self._buf[row] = vector
                self._channels[row] = entry.channel_id
                self._types[row] = entry.type
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
        self.version += 1
        self._scan = None
        keep = [row for row in range(self._n) if row not in drop]
        self._buf = self._buf[keep].copy() if keep else np.empty((1, self.space.dim), np.float32)
        self._ids = [self._ids[row] for row in keep]
        self._channels = [self._channels[row] for row in keep]
        self._types = [self._types[row] for row in keep]
        self._n = len(keep)
        self._pos = {item_id: row for row, item_id in enumerate(self._ids)}

    def extend(self, entries: Sequence[Entry], vectors: NDArray[np.float32]) -> None:
        """Add rows the matrix does not hold yet."""
        needed = self._n + len(entries)
        if needed > self._buf.shape[0]:
            grown = np.empty((max(needed, 2 * self._buf.shape[0]), self.space.dim), np.float32)
            grown[: self._n] = self._buf[: self._n]
            self._buf = grown
        self._buf[self._n : needed] = vectors
        for offset, entry in enumerate(entries):
            self._pos[entry.id] = self._n + offset
            self._ids.append(entry.id)
            self._channels.append(entry.channel_id)
            self._types.append(entry.type)
        self._n = needed
