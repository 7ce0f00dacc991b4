"""The channel list's times, sliced from SQLite's stored text, are what `domain.iso` makes of
the datetime the table type would have read (`UtcDateTime`: a time without a zone is UTC)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from palaver.domain import iso
from palaver.store.channel_list import _iso


@pytest.mark.parametrize(
    "stored",
    [
        "2026-11-26 17:05:03.123456",
        "2026-11-26 17:05:03.000000",
        "2026-11-26 23:59:59.999999",
        "2026-11-26 17:05:03",
        "2026-11-26T17:05:03.5",
        "2026-11-26 17:05:03.123456+02:00",
        "2026-11-26 17:05:03.1+0200",
    ],
)
def test_a_stored_time_reads_as_the_table_type_would_give_it(stored: str) -> None:
    read = datetime.fromisoformat(stored)
    read = read.replace(tzinfo=UTC) if read.tzinfo is None else read.astimezone(UTC)
    assert _iso(stored) == iso(read)


def test_postgresql_s_datetimes_are_written_in_utc() -> None:
    there = datetime(2026, 11, 26, 19, 5, 3, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert _iso(there) == "2026-11-26T17:05:03.123Z"
