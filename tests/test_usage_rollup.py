"""The usage rollup (store/usage.py) on SQLite and PostgreSQL: a reply's calls move one row per
day and agent, person, channel, model and install; the report and the budgets' reads agree
with the ledger over days, and split by day on request."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, func, select

from palaver.settings import Price
from palaver.store import migrate, usage
from palaver.store.tables.usage import usage_ledger, usage_rollup
from palaver.store.urls import sync_url
from palaver.store.usage import Call


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'palaver.db'}"
    else:
        url = request.getfixturevalue("pg").new_database()
    migrate.upgrade(url)
    made = create_engine(sync_url(url))
    request.addfinalizer(made.dispose)
    return made


PRICES = {"oai/a": Price(input=1.0, output=2.0)}


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def test_the_rollup_sums_what_the_ledger_holds_by_day_and_dimension(engine: Engine) -> None:
    replies = [
        (
            at(1),
            ("agent_A", "user_P", "ch_1", "msg_1"),
            [Call("oai/a", 100, 10), Call("oai/b", 5, 1)],
        ),
        (at(1, 23), ("agent_A", "user_Q", "ch_2", "msg_2"), [Call("oai/a", 200, 20, 50)]),
        (at(2), ("agent_B", "", "ch_1", "msg_3"), [Call("oai/a", 300, 30), Call("oai/a", 1, 1)]),
    ]
    with engine.begin() as conn:
        for when, who, calls in replies:
            usage.record(conn, when, who, calls, PRICES)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(usage_ledger)) == 5
        # Two replies' calls of one day and agent are one row, however many calls they made.
        agent_a = usage_rollup.c.key == "agent_A"
        assert conn.scalar(select(func.count()).select_from(usage_rollup).where(agent_a)) == 1
        by_agent = usage.report(conn, date(2026, 3, 1), date(2026, 3, 31), "agent")
        assert [(r["key"], r["inputTokens"], r["calls"], r["unpricedCalls"]) for r in by_agent] == [
            ("agent_A", 305, 3, 1),
            ("agent_B", 301, 2, 0),
        ]
        assert by_agent[0]["cost"] == pytest.approx((100 + 20 + 200 + 40) / 1e6)
        per_day = usage.report(conn, date(2026, 3, 1), date(2026, 3, 31), "person", per_day=True)
        assert [(r["day"], r["key"], r["inputTokens"]) for r in per_day] == [
            ("2026-03-01", "user_P", 105),
            ("2026-03-01", "user_Q", 200),
            ("2026-03-02", "", 301),
        ]
        days = usage.report(conn, date(2026, 3, 1), date(2026, 3, 31), "day")
        assert [(r["key"], r["calls"]) for r in days] == [("2026-03-01", 3), ("2026-03-02", 2)]
        assert usage.report(conn, date(2026, 3, 2), date(2026, 3, 2), "model") == [
            {**r, "key": "oai/a"}
            for r in usage.report(conn, date(2026, 3, 2), date(2026, 3, 2), "day")
        ]
        assert usage.report(conn, date(2026, 3, 3), date(2026, 3, 1), "agent") == []

        spent = usage.spent_since(conn, date(2026, 3, 1), "agent_A", "user_P")
        assert spent.agent[0] == 100 + 10 + 5 + 1 + 200 + 20
        assert spent.person[0] == 100 + 10 + 5 + 1
        assert spent.total[0] == 116 + 220 + 332
        since_second = usage.spent_since(conn, date(2026, 3, 2), "agent_B", "")
        assert (since_second.agent[0], since_second.person[0], since_second.total[0]) == (
            332,
            332,
            332,
        )
