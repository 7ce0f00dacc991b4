"""This node's lease on its work: its row in the node registry, its heartbeat, and the sweeper
that takes over the work of nodes that died.

With several nodes (on Redis), each beats every `node_heartbeat_seconds` and sweeps every
`node_sweep_seconds`: a read first, and only when it finds something lost, one transaction in
which the reply drafts, running chains and documents being indexed whose node is dead (no
heartbeat for `node_lease_seconds`) are stored as interrupted, paused and marked failed, as a
restart does, a scheduled backup it was making is stored as interrupted (the next is then
due), and the dead nodes' rows are removed. The design, timings and guarantees are in
docs/SCALING.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_

from palaver.agents.dispatch import store_interrupted
from palaver.knowledge import documents as documents_store
from palaver.services import Services
from palaver.store import backup_runs as backup_runs_store
from palaver.store import nodes as nodes_store
from palaver.store.faults import log_failure
from palaver.store.tables.backups import backup_runs
from palaver.store.tables.base import utcnow
from palaver.store.tables.chains import chains
from palaver.store.tables.core import nodes, reply_drafts
from palaver.store.tables.knowledge import documents

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Taken:
    """What one take-over stored or paused."""

    replies: int
    chains: int
    documents: int
    nodes: list[str]
    backups: int = 0


class NodeLease:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        config = svc.config
        self.heartbeat = config.node_heartbeat_seconds
        self.lease = timedelta(seconds=config.node_lease_seconds)
        self.sweep_every = config.node_sweep_seconds
        self.alone = not config.redis_url
        """With the in-process bus there is one node: all work in flight at its start was the
        previous process's."""
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> Taken:
        """Register, take over what the last stop left, then beat and sweep in the background;
        alone, there is no one to beat for nor anyone's work to sweep."""
        async with self.svc.db.write() as tx:
            await nodes_store.register(tx.conn, self.svc.node_id, utcnow())
        taken = await self.take_over(at_start=True)
        if self.alone:
            return taken
        self._tasks = [
            asyncio.create_task(self._every(self.heartbeat, self._beat), name="node-heartbeat"),
            asyncio.create_task(self._every(self.sweep_every, self._sweep), name="node-sweeper"),
        ]
        return taken

    async def stop(self) -> None:
        """After this node stored its own replies and paused its chains: leave the registry."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        async with self.svc.db.write() as tx:
            await nodes_store.remove(tx.conn, self.svc.node_id)

    async def take_over(self, at_start: bool = False) -> Taken:
        """In one transaction, store the lost replies as interrupted, pause the lost chains,
        fail the lost documents' indexing and remove the dead nodes. At a start, work that
        carries no node (an older version's) counts as lost too; alone, all work in flight
        does."""
        me, now = self.svc.node_id, utcnow()
        cutoff = now - self.lease
        everything = at_start and self.alone
        lost = _Lost(me, cutoff, unowned=at_start)
        async with self.svc.db.write() as tx:
            replies = await store_interrupted(self.svc, tx, None if everything else lost.drafts)
            paused = await self.svc.chains.pause_lost(tx, None if everything else lost.chains)
            failed = await documents_store.fail_interrupted(
                tx.conn, None if everything else lost.documents
            )
            backups = await backup_runs_store.interrupt(
                tx.conn, None if everything else lost.backups, now
            )
            dead = await nodes_store.remove_dead(tx.conn, me, None if everything else cutoff)
        return Taken(replies, paused, failed, dead, backups)

    async def anything_lost(self) -> bool:
        """Whether a sweep would find work to take or a dead node: one read, so that a quiet
        cluster's sweeps never queue for the writer lock."""
        lost = _Lost(self.svc.node_id, utcnow() - self.lease, unowned=False)
        async with self.svc.db.read() as conn:
            return await nodes_store.any_of(
                conn,
                [
                    (reply_drafts, lost.drafts),
                    (chains, lost.chains),
                    (documents, and_(documents.c.status == "indexing", lost.documents)),
                    (backup_runs, and_(backup_runs.c.status == "running", lost.backups)),
                    (nodes, lost.dead_nodes),
                ],
            )

    async def _beat(self) -> None:
        me = self.svc.node_id
        try:
            known = await self.svc.db.write_unit(lambda c: nodes_store.beat(c, me, utcnow()))
        except Exception:
            self.svc.metrics.heartbeat("failed")
            raise
        self.svc.metrics.heartbeat("ok" if known else "rejoined")
        if not known:
            log.warning(
                "this node was judged dead (no heartbeat for %s s): its replies in flight were "
                "stored as interrupted elsewhere; registered again",
                self.lease.total_seconds(),
            )

    async def _sweep(self) -> None:
        if not await self.anything_lost():
            return
        taken = await self.take_over()
        if taken.nodes or taken.replies or taken.chains or taken.documents or taken.backups:
            log.warning(
                "took over from dead nodes %s: %d replies stored as interrupted, %d chains "
                "paused, %d documents' indexing failed, %d backups stored as interrupted",
                ", ".join(taken.nodes) or "(gone)",
                taken.replies,
                taken.chains,
                taken.documents,
                taken.backups,
            )

    async def _every(self, seconds: float, work: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await work()
            except Exception as exc:
                log_failure(log, exc, "%s failed; trying again in %g s", work.__name__, seconds)


class _Lost:
    """Which rows of each kind of leased work are lost (see `nodes_store.lost`)."""

    def __init__(self, me: str, cutoff: datetime, unowned: bool) -> None:
        self.drafts = nodes_store.lost(
            reply_drafts.c.node_id, reply_drafts.c.updated_at, me, cutoff, unowned
        )
        self.chains = nodes_store.lost(chains.c.node_id, chains.c.updated_at, me, cutoff, unowned)
        self.documents = nodes_store.lost(
            documents.c.node_id, documents.c.created_at, me, cutoff, unowned
        )
        self.backups = nodes_store.lost(
            backup_runs.c.node_id, backup_runs.c.started_at, me, cutoff, unowned
        )
        self.dead_nodes = and_(nodes.c.heartbeat_at < cutoff, nodes.c.id != me)
