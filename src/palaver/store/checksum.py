"""Order-independent checksums of a table's rows that agree between SQLite and PostgreSQL.

The same row reads back differently from the two databases when a column is read without the
table's declared type: SQLite keeps times as text, JSON as text and booleans as integers. Each
value is first put in one canonical form, chosen by the column's type, so that a row copied
faithfully hashes the same on both sides; the table's checksum is the sum of its rows' hashes
modulo 2**128, which neither row order nor batching changes (a sum, not a XOR, so that two
equal rows do not cancel out).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Any, Literal

from sqlalchemy import JSON, Boolean, Column, Date, DateTime, LargeBinary, TypeDecorator

Normalize = Callable[[Any], Any]
_MODULUS = 2**128


def _moment(value: Any) -> Any:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return moment.isoformat(timespec="microseconds")
    return value


def _day(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    return value


def _json(value: Any) -> Any:
    if isinstance(value, str | bytes):
        value = json.loads(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _flag(value: Any) -> Any:
    return value if value is None else bool(value)


def _bytes(value: Any) -> Any:
    return value if value is None else bytes(value).hex()


def _plain(value: Any) -> Any:
    return value


Kind = Literal["time", "date", "json", "bool", "bytes", "plain"]
"""What a column holds, as far as its canonical form goes (recorded in a backup's manifest)."""


def kind_of(column: Column[Any]) -> Kind:
    """Which canonical form `column`'s values take, chosen by its type."""
    kind = column.type
    if isinstance(kind, TypeDecorator):
        kind = kind.impl_instance
    if isinstance(kind, DateTime):
        return "time"
    if isinstance(kind, Date):
        return "date"
    if isinstance(kind, JSON):
        return "json"
    if isinstance(kind, Boolean):
        return "bool"
    if isinstance(kind, LargeBinary):
        return "bytes"
    return "plain"


_NORMALIZERS: dict[Kind, Normalize] = {
    "time": _moment,
    "date": _day,
    "json": lambda value: value if value is None else _json(value),
    "bool": _flag,
    "bytes": _bytes,
    "plain": _plain,
}


def normalizer(column: Column[Any]) -> Normalize:
    """How a value of `column` is written before hashing, whichever database it came from."""
    return _NORMALIZERS[kind_of(column)]


def encode(values: Sequence[Any]) -> bytes:
    """A row's canonical values as the bytes that are hashed: compact JSON, one line (a
    backup's table part is these lines, so that its checksum needs no parsing)."""
    return json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()


class TableSum:
    """The running checksum of one table: feed it rows, in any order and any batches."""

    def __init__(self, columns: Sequence[Column[Any]]) -> None:
        self._normalize = [normalizer(column) for column in columns]
        self.rows = 0
        self._total = 0

    def add(self, rows: Iterable[Sequence[Any]]) -> None:
        for row in rows:
            self.add_encoded(encode(self.canonical(row)))

    def canonical(self, row: Sequence[Any]) -> list[Any]:
        """The row's values in their canonical form (what `encode` writes)."""
        return [norm(value) for norm, value in zip(self._normalize, row, strict=True)]

    def add_encoded(self, encoded: bytes) -> None:
        """Count one row given as `encode` wrote it."""
        digest = hashlib.blake2b(encoded, digest_size=16).digest()
        self._total = (self._total + int.from_bytes(digest, "big")) % _MODULUS
        self.rows += 1

    @property
    def hexdigest(self) -> str:
        return f"{self._total:032x}"
