"""The usage ledger and its rollup by day and dimension (tables/usage.py): written with a
reply, read by the usage report and the budgets. Plain functions over a sync connection, so
that a reply's ledger rows go in its final write and a budget check is one read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import Connection, case, func, insert, or_, select, update

from palaver.settings import Price
from palaver.store.tables.usage import usage_ledger, usage_rollup

GroupBy = Literal["agent", "person", "channel", "model", "day"]
NOBODY = ""
"""The person of a call nobody's message caused."""
TOTAL = "total"
"""The rollup's dimension of the whole install (its key is '')."""
_SUMS = ("input_tokens", "output_tokens", "cached_tokens", "cost", "calls", "unpriced_calls")


@dataclass(frozen=True)
class Call:
    """One model call's counts, as the provider reported them (or estimated)."""

    model: str
    """As agents name it: `<provider id>/<model name>`."""
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    estimated: bool = False

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def cost(call: Call, price: Price | None) -> float:
    """What the call cost by the price table; nothing for a model without a price."""
    if price is None:
        return 0.0
    cached = min(call.cached_tokens, call.input_tokens)
    cached_price = price.input if price.cachedInput is None else price.cachedInput
    return (
        (call.input_tokens - cached) * price.input
        + cached * cached_price
        + call.output_tokens * price.output
    ) / 1_000_000


@dataclass(frozen=True)
class Spent:
    """Tokens and cost so far this month: of one agent, of one person, of the install."""

    agent: tuple[int, float]
    person: tuple[int, float]
    total: tuple[int, float]


def record(
    conn: Connection,
    at: datetime,
    who: tuple[str, str, str, str],
    calls: Sequence[Call],
    prices: dict[str, Price],
) -> None:
    """The ledger rows of one reply's calls (`who`: agent, person, channel and reply ids), and
    the day's rollup moved by them."""
    agent_id, user_id, channel_id, message_id = who
    day = at.date()
    moved: dict[tuple[str, str], dict[str, Any]] = {}
    for call in calls:
        price = prices.get(call.model)
        spent = cost(call, price)
        conn.execute(
            insert(usage_ledger).values(
                at=at,
                agent_id=agent_id,
                user_id=user_id,
                channel_id=channel_id,
                message_id=message_id,
                provider=call.model.split("/", 1)[0],
                model=call.model,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                cached_tokens=call.cached_tokens,
                cost=spent,
                priced=price is not None,
                estimated=call.estimated,
            )
        )
        sums = (
            call.input_tokens,
            call.output_tokens,
            call.cached_tokens,
            spent,
            1,
            0 if price is not None else 1,
        )
        keys = (
            ("agent", agent_id),
            ("person", user_id),
            ("channel", channel_id),
            ("model", call.model),
            (TOTAL, ""),
        )
        for row in keys:
            held = moved.setdefault(row, dict.fromkeys(_SUMS, 0))
            for name, value in zip(_SUMS, sums, strict=True):
                held[name] += value
    # The reply's calls share their agent, person and channel: one write per row of the rollup.
    for (dimension, key), held in moved.items():
        _add(conn, day, dimension, key, held)


def _add(conn: Connection, day: date, dimension: str, key: str, sums: dict[str, Any]) -> None:
    """Move one row of the rollup by a call's sums. Writes are serialized (one writer on SQLite,
    the cluster's writer lock on PostgreSQL), so an update that found no row can insert it."""
    row = usage_rollup.c
    moved = conn.execute(
        update(usage_rollup)
        .where(row.dimension == dimension, row.key == key, row.day == day)
        .values({k: row[k] + v for k, v in sums.items()})
    )
    if moved.rowcount == 0:
        conn.execute(insert(usage_rollup).values(day=day, dimension=dimension, key=key, **sums))


def spent_since(conn: Connection, since: date, agent_id: str, user_id: str) -> Spent:
    """What the agent, the person and the install have used since `since`, in one read of a
    row per day for each."""
    row = usage_rollup.c
    tokens = row.input_tokens + row.output_tokens
    mine = (row.dimension == "agent") & (row.key == agent_id)
    theirs = (row.dimension == "person") & (row.key == user_id)
    everyone = (row.dimension == TOTAL) & (row.key == "")

    def total(value: Any, where: Any) -> Any:
        return func.coalesce(func.sum(case((where, value), else_=0)), 0)

    got = conn.execute(
        select(
            total(tokens, mine),
            total(row.cost, mine),
            total(tokens, theirs),
            total(row.cost, theirs),
            total(tokens, everyone),
            total(row.cost, everyone),
        ).where(or_(mine, theirs, everyone), row.day >= since)
    ).one()
    return Spent(
        agent=(int(got[0]), float(got[1])),
        person=(int(got[2]), float(got[3])),
        total=(int(got[4]), float(got[5])),
    )


def report(
    conn: Connection, first: date, last: date, group_by: GroupBy, per_day: bool = False
) -> list[dict[str, Any]]:
    """Sums per agent, person, channel, model or day, from `first` to `last` (both included),
    in one read of the rollup; `per_day` splits each group's sums by day (a row per group and
    day with any use, in day order)."""
    row = usage_rollup.c
    by_day = group_by == "day"
    dimension = TOTAL if by_day else group_by
    key = row.day if by_day else row.key
    picked = (key.label("key"), row.day) if per_day else (key.label("key"),)
    query = (
        select(*picked, *(func.sum(row[name]) for name in _SUMS))
        .where(row.dimension == dimension, row.day >= first, row.day <= last)
        .group_by(*picked)
        .order_by(*reversed(picked))
    )
    return [_row(r, per_day) for r in conn.execute(query)]


def _row(r: Any, per_day: bool) -> dict[str, Any]:
    sums = r[2:] if per_day else r[1:]
    day = {"day": r[1].isoformat()} if per_day else {}
    return {
        "key": r[0].isoformat() if isinstance(r[0], date) else r[0],
        **day,
        "inputTokens": int(sums[0]),
        "outputTokens": int(sums[1]),
        "cachedTokens": int(sums[2]),
        "cost": round(float(sums[3]), 6),
        "calls": int(sums[4]),
        "unpricedCalls": int(sums[5]),
    }
