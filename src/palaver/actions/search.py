"""Searching messages: parse the query, then one read that finds a page among the channels
the caller reads (filtered inside the query, never after it)."""

from __future__ import annotations

from typing import Any

from palaver.domain import User
from palaver.search.base import Sort, Viewer
from palaver.search.query import parse
from palaver.services import Services


async def search(
    svc: Services, user: User, q: str, sort: Sort, limit: int, cursor: str | None
) -> dict[str, Any]:
    """`{results: [{message, channel, snippet}], nextCursor}`; `Invalid` for a malformed
    query or a cursor of another search."""
    query = parse(q)
    viewer = Viewer(user_id=user.id, reads_everything=user.is_owner)
    found = await svc.db.read_indexed(
        lambda conn: svc.message_search.search(conn, query, viewer, sort, limit, cursor, q)
    )
    return {
        "results": [
            {
                "message": hit.message.as_json(),
                "channel": {
                    "id": hit.channel_id,
                    "name": hit.channel_name,
                    "type": hit.channel_type,
                },
                "snippet": hit.snippet,
            }
            for hit in found.hits
        ],
        "nextCursor": found.next_cursor,
    }
