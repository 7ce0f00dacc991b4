"""The registry of running nodes and their heartbeats, and which leased work is lost.

A node's reply drafts and running chains carry its id. Work is *lost* when its node's heartbeat
is older than the lease, or when its node has no row at all (removed as dead, or stopped)
and the work itself has not moved for a lease; work that carries no node, written by an
older version, is lost only when a starting node says so. A node never judges its own work.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    and_,
    delete,
    exists,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.store.tables.core import nodes


async def register(conn: AsyncConnection, node_id: str, now: datetime) -> None:
    await conn.execute(insert(nodes).values(id=node_id, started_at=now, heartbeat_at=now))


def beat(conn: Connection, node_id: str, now: datetime) -> bool:
    """Refresh the node's heartbeat; answers False if its row was gone (it was judged dead
    while only slow), in which case it is registered again.

    A write unit (`Database.write_unit`): it needs no place in the order of the writes that
    check, then write, so on PostgreSQL a beat never waits behind other nodes' writes for the
    writer lock, and a long write cannot make live nodes look dead."""
    found = conn.execute(update(nodes).where(nodes.c.id == node_id).values(heartbeat_at=now))
    if found.rowcount:
        return True
    conn.execute(insert(nodes).values(id=node_id, started_at=now, heartbeat_at=now))
    return False


def registered(conn: Connection) -> set[str]:
    """The ids of the nodes in the registry: running, or dead and not yet swept."""
    return set(conn.execute(select(nodes.c.id)).scalars())


async def remove(conn: AsyncConnection, node_id: str) -> None:
    await conn.execute(delete(nodes).where(nodes.c.id == node_id))


async def remove_dead(conn: AsyncConnection, me: str, cutoff: datetime | None) -> list[str]:
    """Delete the rows of the nodes whose heartbeat is older than `cutoff` (all others' if
    None); answers their ids."""
    query = delete(nodes).where(nodes.c.id != me)
    if cutoff is not None:
        query = query.where(nodes.c.heartbeat_at < cutoff)
    removed = await conn.execute(query.returning(nodes.c.id))
    return sorted(removed.scalars())


def lost(
    owner: ColumnElement[str | None],
    moved_at: ColumnElement[datetime],
    me: str,
    cutoff: datetime,
    unowned: bool,
) -> ColumnElement[bool]:
    """Whether the work whose node is in column `owner` and that last moved at `moved_at` is
    lost (see the module's docstring); `unowned` counts work that carries no node too."""
    dead = select(nodes.c.id).where(nodes.c.heartbeat_at < cutoff, nodes.c.id != me)
    gone = and_(
        owner.is_not(None),
        owner != me,
        owner.not_in(select(nodes.c.id)),
        moved_at < cutoff,
    )
    clauses = [owner.in_(dead), gone]
    if unowned:
        clauses.append(owner.is_(None))
    return or_(*clauses)


async def any_of(conn: AsyncConnection, where: list[tuple[Table, ColumnElement[bool]]]) -> bool:
    """Whether any table holds a row its condition selects, in one statement."""
    found = select(or_(*(exists().select_from(table).where(cond) for table, cond in where)))
    return bool((await conn.execute(found)).scalar_one())
