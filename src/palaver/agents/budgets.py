"""Monthly caps on what agents spend (`settings.budgets`), checked before each model call of a
reply against the ledger (the truth on every node, not a counter of this process) plus the
calls this reply has made and not yet written. A reply in flight when a cap is crossed is not
cut mid-stream: the next call is refused."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime

from palaver.domain import Agent
from palaver.services import Services
from palaver.settings import Cap
from palaver.store import usage
from palaver.store import users as users_store
from palaver.store.usage import NOBODY, Call


class BudgetSpent(Exception):
    """The reply may not call its model: the message says which budget and when it resets."""


def month_of(now: datetime) -> tuple[date, date]:
    """The first day of `now`'s calendar month (UTC) and of the next, when caps reset."""
    first = now.astimezone(UTC).date().replace(day=1)
    following = (
        first.replace(year=first.year + 1, month=1)
        if first.month == 12
        else (first.replace(month=first.month + 1))
    )
    return first, following


async def check(
    svc: Services, agent: Agent, person_id: str | None, pending: Sequence[Call], now: datetime
) -> None:
    """Raise BudgetSpent if the agent's, the person's or the install's cap is reached; no read
    at all when none of them has a cap."""
    settings = svc.settings.current
    budgets = settings.budgets
    caps = {
        "agent": budgets.agents.get(agent.id),
        "person": budgets.guests.get(person_id) if person_id else None,
        "total": budgets.total,
    }
    if not any(_capped(cap) for cap in caps.values()):
        return
    first, resets = month_of(now)
    spent = await svc.db.read_unit(
        lambda conn: usage.spent_since(conn, first, agent.id, person_id or NOBODY)
    )
    extra_tokens = sum(c.tokens for c in pending)
    extra_cost = sum(usage.cost(c, settings.prices.get(c.model)) for c in pending)
    for scope, (tokens, cost) in (
        ("agent", spent.agent),
        ("person", spent.person),
        ("total", spent.total),
    ):
        cap = caps[scope]
        if cap is None:
            continue
        tokens, cost = tokens + extra_tokens, cost + extra_cost
        if cap.monthlyTokens is not None and tokens >= cap.monthlyTokens:
            whose = await _whose(svc, scope, agent, person_id)
            raise BudgetSpent(
                f"The monthly token budget of {whose} is spent ({tokens:,} of "
                f"{cap.monthlyTokens:,} tokens); it resets on {resets.isoformat()}."
            )
        if cap.monthlyCost is not None and cost >= cap.monthlyCost:
            whose = await _whose(svc, scope, agent, person_id)
            raise BudgetSpent(
                f"The monthly cost budget of {whose} is spent ({cost:,.2f} of "
                f"{cap.monthlyCost:,.2f}); it resets on {resets.isoformat()}."
            )


def _capped(cap: Cap | None) -> bool:
    return cap is not None and (cap.monthlyTokens is not None or cap.monthlyCost is not None)


async def _whose(svc: Services, scope: str, agent: Agent, person_id: str | None) -> str:
    if scope == "agent":
        return f"the agent {agent.name}"
    if scope == "total":
        return "this installation"
    async with svc.db.read() as conn:
        person = await users_store.get(conn, person_id or "")
    return f"replies for {person.name}" if person is not None else "replies for this person"
