"""The usage ledger and its daily rollup (tables/usage.py): written with a reply, read by the
usage report and the budgets. Plain functions over a sync connection, so that a reply's ledger
rows go in its final write and a budget check is one read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import Connection, case, func, insert, select, update

from palaver.settings import Price
from palaver.store.tables.usage import usage_daily, usage_ledger

GroupBy = Literal["agent", "person", "channel", "model", "day"]
GROUPS: dict[str, Any] = {
    "agent": usage_daily.c.agent_id,
    "person": usage_daily.c.user_id,
    "channel": usage_daily.c.channel_id,
    "model": usage_daily.c.model,
    "day": usage_daily.c.day,
}
NOBODY = ""
"""The person of a call nobody's message caused."""


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
        key = {
            "day": day,
            "agent_id": agent_id,
            "user_id": user_id,
            "channel_id": channel_id,
            "model": call.model,
        }
        sums = {
            "input_tokens": call.input_tokens,
            "output_tokens": call.output_tokens,
            "cached_tokens": call.cached_tokens,
            "cost": spent,
            "calls": 1,
            "unpriced_calls": 0 if price is not None else 1,
        }
        # Writes are serialized (one writer on SQLite, the cluster's writer lock on
        # PostgreSQL), so an update that found no row can insert it.
        moved = conn.execute(
            update(usage_daily)
            .where(*(usage_daily.c[k] == v for k, v in key.items()))
            .values({k: usage_daily.c[k] + v for k, v in sums.items()})
        )
        if moved.rowcount == 0:
            conn.execute(insert(usage_daily).values(**key, **sums))


def spent_since(conn: Connection, since: date, agent_id: str, user_id: str) -> Spent:
    """What the agent, the person and the install have used since `since`, in one read."""
    tokens = usage_daily.c.input_tokens + usage_daily.c.output_tokens
    mine = usage_daily.c.agent_id == agent_id
    theirs = usage_daily.c.user_id == user_id

    def total(value: Any, where: Any = None) -> Any:
        picked = value if where is None else case((where, value), else_=0)
        return func.coalesce(func.sum(picked), 0)

    row = conn.execute(
        select(
            total(tokens, mine),
            total(usage_daily.c.cost, mine),
            total(tokens, theirs),
            total(usage_daily.c.cost, theirs),
            total(tokens),
            total(usage_daily.c.cost),
        ).where(usage_daily.c.day >= since)
    ).one()
    return Spent(
        agent=(int(row[0]), float(row[1])),
        person=(int(row[2]), float(row[3])),
        total=(int(row[4]), float(row[5])),
    )


def report(conn: Connection, first: date, last: date, group_by: GroupBy) -> list[dict[str, Any]]:
    """Sums per agent, person, channel, model or day, from `first` to `last` (both included),
    in one read of the rollup."""
    key = GROUPS[group_by]
    rows = conn.execute(
        select(
            key.label("key"),
            func.sum(usage_daily.c.input_tokens),
            func.sum(usage_daily.c.output_tokens),
            func.sum(usage_daily.c.cached_tokens),
            func.sum(usage_daily.c.cost),
            func.sum(usage_daily.c.calls),
            func.sum(usage_daily.c.unpriced_calls),
        )
        .where(usage_daily.c.day >= first, usage_daily.c.day <= last)
        .group_by(key)
        .order_by(key)
    )
    return [
        {
            "key": r[0].isoformat() if isinstance(r[0], date) else r[0],
            "inputTokens": int(r[1]),
            "outputTokens": int(r[2]),
            "cachedTokens": int(r[3]),
            "cost": round(float(r[4]), 6),
            "calls": int(r[5]),
            "unpricedCalls": int(r[6]),
        }
        for r in rows
    ]
