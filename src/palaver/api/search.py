"""Searching messages (issue 23): the grammar is in `palaver.search.query` and docs/SPEC.md
section 11."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from palaver.actions import search
from palaver.api import schemas
from palaver.api.deps import Caller, Svc, errors
from palaver.api.routing import DeferredRoute
from palaver.api.schemas import ok
from palaver.search.base import Sort
from palaver.search.query import MAX_QUERY_CHARS

router = APIRouter(prefix="/api/search", tags=["search"], route_class=DeferredRoute)

QUERY_HELP = (
    'Words (all must match, stemmed), "an exact phrase", -word or -"a phrase" to exclude, '
    'from:@Name (a person or an agent; quotes for names with spaces: from:@"Ada Lovelace"), '
    "in:#channel, has:file, has:image, has:link, is:thread (replies in threads), "
    "before:YYYY-MM-DD (before that day, UTC), after:YYYY-MM-DD (that day or later). "
    "Operators alone are a valid query. A malformed query is a 400 naming its bad part."
)


@router.get("", responses={**errors(), **ok(schemas.SearchResults, "One page of matches")})
async def search_messages(
    caller: Caller,
    svc: Svc,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description=QUERY_HELP)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[
        str | None,
        Query(min_length=1, max_length=500, description="`nextCursor` of the page before."),
    ] = None,
    sort: Annotated[
        Sort,
        Query(
            description="`relevance` (default): best first, BM25 on SQLite and ts_rank on "
            "PostgreSQL among the newest 1,000 matches; `recent`: newest first. A query of "
            "operators only is always newest first."
        ),
    ] = "relevance",
) -> dict[str, Any]:
    """Messages of the channels the caller reads (a guest: the channels it is in), never a
    deleted message, nor an edited message's earlier text."""
    return await search.search(svc, caller.user, q, sort, limit, cursor)
