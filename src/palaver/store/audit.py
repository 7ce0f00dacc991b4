"""The audit log (tables/audit.py): who changed what in the install, from where, on which node.

A row is written by the action it records, in that action's own transaction (a write unit's
sync connection or a `Database.write` transaction's async one), so that a change without its
row, or a row without its change, cannot be committed. Rows are read newest first, one indexed
query per page, and never cached: every node reads the shared table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Insert, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import iso
from palaver.ids import new_id
from palaver.store.tables.audit import audit_log
from palaver.store.tables.base import utcnow

CHANGED = "(changed)"
"""What a row shows in place of a secret that was set or changed: never the value, nor any
part of it."""
MAX_ADDRESS = 64
MAX_PAGE = 200


def text_size(text: str) -> dict[str, int]:
    """What a row keeps of a text it must not copy (SOUL.md, a memory, a prompt): its length."""
    return {"length": len(text)}


@dataclass(frozen=True)
class Actor:
    """Who acts, from which client address (null without a request), on which node: what each
    row of their actions carries. `user_id` is null for a failed login."""

    user_id: str | None
    address: str | None
    node: str

    def _insert(self, action: str, target: str | None, changes: dict[str, Any] | None) -> Insert:
        return insert(audit_log).values(
            id=new_id("audit"),
            at=utcnow(),
            actor_id=self.user_id,
            action=action,
            resource=action.split(".", 1)[0],
            target=target,
            changes=changes or {},
            node=self.node,
            address=None if self.address is None else self.address[:MAX_ADDRESS],
        )

    def record(
        self,
        conn: Connection,
        action: str,
        target: str | None,
        changes: dict[str, Any] | None = None,
    ) -> None:
        """The row of `action` (`resource.verb`) on `target`, in a write unit's transaction."""
        conn.execute(self._insert(action, target, changes))

    async def add(
        self,
        conn: AsyncConnection,
        action: str,
        target: str | None,
        changes: dict[str, Any] | None = None,
    ) -> None:
        """The same, in a `Database.write` transaction."""
        await conn.execute(self._insert(action, target, changes))


def page(
    conn: Connection,
    limit: int,
    before: str | None = None,
    actor_id: str | None = None,
    action: str | None = None,
) -> list[dict[str, Any]]:
    """Up to `limit` rows older than the row `before` names, newest first; `action` is one
    action, or with a trailing dot (`agent.`) every action of a resource. One read, on the
    index of the filter given (the primary key's without one)."""
    query = select(audit_log).order_by(audit_log.c.id.desc()).limit(min(limit, MAX_PAGE))
    if before is not None:
        query = query.where(audit_log.c.id < before)
    if actor_id is not None:
        query = query.where(audit_log.c.actor_id == actor_id)
    if action is not None:
        if action.endswith("."):
            query = query.where(audit_log.c.resource == action[:-1])
        else:
            query = query.where(audit_log.c.action == action)
    return [
        {
            "id": row.id,
            "at": iso(row.at),
            "actorId": row.actor_id,
            "action": row.action,
            "target": row.target,
            "changes": row.changes,
            "node": row.node,
            "address": row.address,
        }
        for row in conn.execute(query)
    ]
