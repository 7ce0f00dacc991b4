"""Chains: a run of agent replies in a channel, each building on the ones before."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import iso
from palaver.store.tables.chains import chain_steps, chains


@dataclass
class Step:
    position: int
    agent_id: str
    source: str
    """`mention` (named in the human message), `explicit` (POST /api/chains) or `handoff`."""
    status: str = "pending"
    """pending, running, completed, error, interrupted."""
    message_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.position,
            "agentId": self.agent_id,
            "source": self.source,
            "status": self.status,
            "messageId": self.message_id,
        }


@dataclass
class Chain:
    id: str
    channel_id: str
    trigger_message_id: str
    status: str
    created_at: datetime
    updated_at: datetime
    reason: str | None = None
    requested: str | None = None
    """A pause or cancel asked for while a step runs; honoured when it ends."""
    handoffs: int = 0
    steps: list[Step] = field(default_factory=list)
    node_id: str | None = None
    """The node driving the chain while it runs (its lease)."""
    trace_context: str | None = None
    """The `traceparent` of the chain's workflow span (written once, with the chain)."""

    @property
    def next_step(self) -> Step | None:
        return next((s for s in self.steps if s.status == "pending"), None)

    @property
    def current_step(self) -> Step | None:
        """The step running now, else the one that failed, else the next to run, else the last."""
        for status in ("running", "error"):
            found = next((s for s in self.steps if s.status == status), None)
            if found is not None:
                return found
        return self.next_step or (self.steps[-1] if self.steps else None)

    def as_json(self) -> dict[str, Any]:
        current = self.current_step
        return {
            "id": self.id,
            "channelId": self.channel_id,
            "triggerMessageId": self.trigger_message_id,
            "status": self.status,
            "reason": self.reason,
            "requested": self.requested,
            "currentAgent": current.agent_id if current else None,
            "step": current.position if current else 0,
            "totalSteps": len(self.steps),
            "steps": [s.as_json() for s in self.steps],
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }


async def _load(conn: AsyncConnection, rows: list[Any]) -> list[Chain]:
    ids = [r.id for r in rows]
    steps: dict[str, list[Step]] = defaultdict(list)
    if ids:
        for s in await conn.execute(
            select(chain_steps)
            .where(chain_steps.c.chain_id.in_(ids))
            .order_by(chain_steps.c.chain_id, chain_steps.c.position)
        ):
            steps[s.chain_id].append(Step(s.position, s.agent_id, s.source, s.status, s.message_id))
    return [
        Chain(
            id=r.id,
            channel_id=r.channel_id,
            trigger_message_id=r.trigger_message_id,
            status=r.status,
            created_at=r.created_at,
            updated_at=r.updated_at,
            reason=r.reason,
            requested=r.requested,
            handoffs=r.handoffs,
            steps=steps[r.id],
            node_id=r.node_id,
            trace_context=r.trace_context,
        )
        for r in rows
    ]


async def get(conn: AsyncConnection, chain_id: str) -> Chain | None:
    rows = list(await conn.execute(select(chains).where(chains.c.id == chain_id)))
    found = await _load(conn, rows)
    return found[0] if found else None


async def in_channel(conn: AsyncConnection, channel_id: str, limit: int) -> list[Chain]:
    query = (
        select(chains)
        .where(chains.c.channel_id == channel_id)
        .order_by(chains.c.created_at.desc(), chains.c.id.desc())
        .limit(limit)
    )
    return await _load(conn, list(await conn.execute(query)))


async def save(
    conn: AsyncConnection, chain: Chain, new: bool = False, settle_request: bool = False
) -> None:
    """Write the chain and all its steps (a chain has at most a few dozen).

    A pause or cancel request is written only by `request()`, or cleared with `settle_request`
    once it has been acted on: a save from a copy read earlier must not undo a newer request."""
    values: dict[str, Any] = {
        "channel_id": chain.channel_id,
        "trigger_message_id": chain.trigger_message_id,
        "status": chain.status,
        "reason": chain.reason,
        "handoffs": chain.handoffs,
        "created_at": chain.created_at,
        "updated_at": chain.updated_at,
        "node_id": chain.node_id if chain.status == "running" else None,
    }
    if new or settle_request:
        values["requested"] = None
    if new:
        await conn.execute(
            insert(chains).values(id=chain.id, trace_context=chain.trace_context, **values)
        )
    else:
        await conn.execute(update(chains).where(chains.c.id == chain.id).values(**values))
        await conn.execute(chain_steps.delete().where(chain_steps.c.chain_id == chain.id))
    await conn.execute(
        insert(chain_steps),
        [
            {
                "chain_id": chain.id,
                "position": s.position,
                "agent_id": s.agent_id,
                "source": s.source,
                "status": s.status,
                "message_id": s.message_id,
            }
            for s in chain.steps
        ],
    )


async def request(conn: AsyncConnection, chain_id: str, what: str | None) -> None:
    await conn.execute(update(chains).where(chains.c.id == chain_id).values(requested=what))


async def pause_running(
    conn: AsyncConnection, now: datetime, which: ColumnElement[bool] | None = None
) -> list[Chain]:
    """Running chains (those `which` selects, all if None) whose node stopped or died wait,
    paused, for a person to resume them; answers them."""
    query = select(chains.c.id).where(chains.c.status == "running")
    if which is not None:
        query = query.where(which)
    ids = list((await conn.execute(query)).scalars())
    if not ids:
        return []
    await conn.execute(
        update(chain_steps)
        .where(chain_steps.c.status == "running", chain_steps.c.chain_id.in_(ids))
        .values(status="interrupted")
    )
    await conn.execute(
        update(chains)
        .where(chains.c.id.in_(ids))
        .values(status="paused", requested=None, node_id=None, updated_at=now)
    )
    rows = await conn.execute(select(chains).where(chains.c.id.in_(ids)).order_by(chains.c.id))
    return await _load(conn, list(rows))
