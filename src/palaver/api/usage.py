"""What agents cost (issue 24): the owner's report over the usage ledger's rollup."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from palaver.agents.budgets import month_of
from palaver.api import schemas
from palaver.api.deps import Owner, Svc, errors
from palaver.api.routing import DeferredRoute
from palaver.api.schemas import ok
from palaver.errors import Invalid
from palaver.store import usage
from palaver.store.usage import GroupBy

router = APIRouter(prefix="/api/usage", tags=["usage"], route_class=DeferredRoute)

DAY = r"^\d{4}-\d{2}-\d{2}$"


@router.get("", responses={**errors(403), **ok(schemas.UsageReport, "Sums per group")})
async def usage_report(
    _: Owner,
    svc: Svc,
    start: Annotated[
        str | None,
        Query(
            alias="from",
            pattern=DAY,
            json_schema_extra={"format": "date"},
            description="First day (UTC), included; default the first of this month.",
        ),
    ] = None,
    end: Annotated[
        str | None,
        Query(
            alias="to",
            pattern=DAY,
            json_schema_extra={"format": "date"},
            description="Last day (UTC), included; default today.",
        ),
    ] = None,
    groupBy: Annotated[GroupBy, Query(description="What each row sums over.")] = "agent",
    per: Annotated[
        Literal["day"] | None,
        Query(description="`day`: each group's sums split by day, a row per group and day."),
    ] = None,
) -> dict[str, Any]:
    """Tokens, cost and calls of the agents' model calls, grouped, from one read of the
    ledger's rollup; a range that ends before it starts holds nothing."""
    now = datetime.now(UTC)
    first = _day(start, "from") if start else month_of(now)[0]
    last = _day(end, "to") if end else now.date()
    rows = await svc.db.read_unit(
        lambda conn: usage.report(conn, first, last, groupBy, per == "day")
    )
    return {"rows": rows}


def _day(text: str, name: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise Invalid(f"'{name}' must be a real day, YYYY-MM-DD.", field=name) from None
