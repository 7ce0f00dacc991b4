"""Node leases on SQLite and PostgreSQL: the registry and its heartbeat, and the sweeper that
stores a dead node's replies in flight as interrupted and pauses its running chains, and never
takes a live node's work.

Each test runs one node's services in the test process on a real, migrated database, and
writes the other nodes' rows and work as those nodes would have.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import insert, select

from palaver.agents.leases import NodeLease
from palaver.app import build_services
from palaver.bus.base import Event
from palaver.config import Config
from palaver.domain import Message
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import chains as chains_store
from palaver.store import messages as messages_store
from palaver.store import migrate
from palaver.store import nodes as nodes_store
from palaver.store.chains import Chain, Step
from palaver.store.tables.backups import backup_runs
from palaver.store.tables.base import utcnow
from palaver.store.tables.core import agents, channels, nodes, reply_drafts
from palaver.store.tables.knowledge import documents
from tests.agents.test_recovery import _start_streaming
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.support import OWNER_KEY, Server, Ws, history

DEAD = 60.0
"""Seconds since the last heartbeat of a node in these tests that is dead (the lease is 20)."""
LIVE = 1.0


class Node:
    """One node's services, with the events it published."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc
        self.lease = NodeLease(svc)
        self.events: list[tuple[str, Event]] = []
        svc.bus.listen(lambda topic, event: self.events.append((topic, event)))

    @property
    def id(self) -> str:
        return self.svc.node_id

    def published(self, kind: str) -> list[dict[str, Any]]:
        return [event["data"] for _, event in self.events if event["type"] == kind]


async def _services(url: str, folder: Path, **settings: Any) -> Services:
    config = Config(OWNER_KEY=OWNER_KEY, data_dir=folder, DATABASE_URL=url, **settings)
    await anyio.to_thread.run_sync(migrate.upgrade, config.db_url)
    return build_services(config)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'palaver.db'}"
    url: str = request.getfixturevalue("pg").new_database()
    return url


@pytest.fixture
async def node(database_url: str, tmp_path: Path) -> AsyncIterator[Node]:
    svc = await _services(database_url, tmp_path)
    yield Node(svc)
    await svc.db.dispose()


async def _register(node: Node, node_id: str, seconds_ago: float) -> None:
    async with node.svc.db.write() as tx:
        await nodes_store.register(tx.conn, node_id, utcnow() - timedelta(seconds=seconds_ago))


async def _draft(node: Node, owner: str | None, content: str, seconds_ago: float = 0) -> str:
    """A reply in flight on `owner`, last checkpointed `seconds_ago`."""
    moved = utcnow() - timedelta(seconds=seconds_ago)
    reply = Message(
        id=new_id("msg"),
        channel_id="ch_leases",
        agent_id="agent_x",
        user_id=None,
        content=content,
        type="text",
        metadata={"model": "fake/m"},
        created_at=moved,
    )
    async with node.svc.db.write() as tx:
        if owner is None:
            values = {"message_id": reply.id, "channel_id": "ch_leases", "agent_id": "agent_x"}
            values |= {"content": content, "metadata": {}, "started_at": moved}
            await tx.conn.execute(insert(reply_drafts).values(**values, updated_at=moved))
        else:
            await messages_store.create_draft(tx.conn, reply, moved, owner)
    return reply.id


async def _chain(node: Node, owner: str | None, seconds_ago: float = 0) -> str:
    """A chain running its first step on `owner`, last moved `seconds_ago`."""
    moved = utcnow() - timedelta(seconds=seconds_ago)
    chain = Chain(
        id=new_id("chain"),
        channel_id="ch_leases",
        trigger_message_id=new_id("msg"),
        status="running",
        created_at=moved,
        updated_at=moved,
        steps=[Step(1, "agent_x", "explicit", "running"), Step(2, "agent_y", "explicit")],
        node_id=owner,
    )
    async with node.svc.db.write() as tx:
        found = await tx.conn.execute(select(channels.c.id).where(channels.c.id == "ch_leases"))
        if found.first() is None:
            await tx.conn.execute(
                insert(channels).values(
                    id="ch_leases", name="leases", type="group", created_at=moved, updated_at=moved
                )
            )
        await chains_store.save(tx.conn, chain, new=True)
    return chain.id


async def _document(node: Node, owner: str | None, seconds_ago: float = 0) -> str:
    """A document being indexed by `owner`, recorded `seconds_ago`."""
    at = utcnow() - timedelta(seconds=seconds_ago)
    document_id = new_id("doc")
    async with node.svc.db.write() as tx:
        found = await tx.conn.execute(select(agents.c.id).where(agents.c.id == "agent_x"))
        if found.first() is None:
            values = {"id": "agent_x", "name": "X", "name_key": "x", "avatar": "", "soul": ""}
            values |= {"description": "", "model": "fake/m", "tools": []}
            values |= {"auto_inject_memory": False, "created_at": at, "updated_at": at}
            await tx.conn.execute(insert(agents).values(**values))
        values = {"id": document_id, "agent_id": "agent_x", "name": document_id, "kind": "text"}
        values |= {"bytes": 1, "chunks": 1, "content_hash": document_id, "created_at": at}
        values |= {"status": "indexing", "node_id": owner}
        await tx.conn.execute(insert(documents).values(**values))
    return document_id


async def _document_status(node: Node, document_id: str) -> str:
    async with node.svc.db.read() as conn:
        query = select(documents.c.status).where(documents.c.id == document_id)
        return str((await conn.execute(query)).scalar_one())


async def _node_ids(node: Node) -> set[str]:
    async with node.svc.db.read() as conn:
        return set((await conn.execute(select(nodes.c.id))).scalars())


async def _drafts(node: Node) -> set[str]:
    async with node.svc.db.read() as conn:
        return set((await conn.execute(select(reply_drafts.c.message_id))).scalars())


async def _stored(node: Node, message_id: str) -> Message | None:
    async with node.svc.db.read() as conn:
        return await conn.run_sync(messages_store.get, message_id)


async def _chain_status(node: Node, chain_id: str) -> tuple[str, list[str], str | None]:
    async with node.svc.db.read() as conn:
        chain = await chains_store.get(conn, chain_id)
    assert chain is not None
    return chain.status, [s.status for s in chain.steps], chain.node_id


async def test_a_node_registers_at_start_beats_and_leaves_the_registry_at_a_graceful_stop(
    node: Node,
) -> None:
    await node.lease.start()
    try:
        assert await _node_ids(node) == {node.id}
        async with node.svc.db.read() as conn:
            first = (await conn.execute(select(nodes.c.heartbeat_at))).scalar_one()
        await node.lease._beat()
        async with node.svc.db.read() as conn:
            second = (await conn.execute(select(nodes.c.heartbeat_at))).scalar_one()
        assert second > first
    finally:
        await node.lease.stop()
    assert await _node_ids(node) == set()


async def test_a_node_judged_dead_while_only_slow_registers_again_at_its_next_beat(
    node: Node,
) -> None:
    await _register(node, node.id, DEAD)
    async with node.svc.db.write() as tx:
        await nodes_store.remove_dead(tx.conn, "node_other", utcnow() - timedelta(seconds=20))
    assert await _node_ids(node) == set()
    await node.lease._beat()
    assert await _node_ids(node) == {node.id}


async def test_the_sweeper_stores_a_dead_nodes_replies_as_interrupted_and_pauses_its_chains(
    node: Node,
) -> None:
    await _register(node, node.id, LIVE)
    await _register(node, "node_dead", DEAD)
    reply_id = await _draft(node, "node_dead", "Half an", seconds_ago=DEAD)
    chain_id = await _chain(node, "node_dead", seconds_ago=DEAD)

    taken = await node.lease.take_over()

    assert (taken.replies, taken.chains, taken.nodes) == (1, 1, ["node_dead"])
    stored = await _stored(node, reply_id)
    assert stored is not None
    assert stored.content == "Half an" and stored.metadata["interrupted"] is True
    assert stored.agent_id == "agent_x"
    assert await _drafts(node) == set()
    assert await _chain_status(node, chain_id) == ("paused", ["interrupted", "pending"], None)
    assert await _node_ids(node) == {node.id}
    assert [m["id"] for m in node.published("message")] == [reply_id]
    assert node.published("message")[0]["metadata"]["interrupted"] is True
    assert [(c["chainId"], c["status"]) for c in node.published("collab_status")] == [
        (chain_id, "paused")
    ]
    assert await node.lease.take_over() == type(taken)(0, 0, 0, [])


async def test_the_sweeper_never_takes_the_work_of_a_live_node_nor_its_own(node: Node) -> None:
    await _register(node, node.id, DEAD)
    await _register(node, "node_live", LIVE)
    mine = await _draft(node, node.id, "mine", seconds_ago=DEAD)
    theirs = await _draft(node, "node_live", "theirs", seconds_ago=DEAD)
    my_chain = await _chain(node, node.id, seconds_ago=DEAD)
    their_chain = await _chain(node, "node_live", seconds_ago=DEAD)

    taken = await node.lease.take_over()

    assert (taken.replies, taken.chains, taken.nodes) == (0, 0, [])
    assert await _drafts(node) == {mine, theirs}
    assert await _stored(node, theirs) is None
    assert (await _chain_status(node, my_chain))[0] == "running"
    assert await _chain_status(node, their_chain) == (
        "running",
        ["running", "pending"],
        "node_live",
    )
    assert await _node_ids(node) == {node.id, "node_live"}
    assert node.events == []


async def _backup_runs(node: Node) -> dict[str, str]:
    async with node.svc.db.read() as conn:
        rows = await conn.execute(select(backup_runs.c.node_id, backup_runs.c.status))
        return {row.node_id: row.status for row in rows}


async def test_the_sweeper_stores_a_dead_nodes_backup_as_interrupted_and_leaves_a_live_ones(
    node: Node,
) -> None:
    await _register(node, node.id, LIVE)
    await _register(node, "node_live", LIVE)
    await _register(node, "node_dead", DEAD)
    for owner in ("node_dead", "node_live", node.id):
        async with node.svc.db.write() as tx:
            await tx.conn.execute(
                insert(backup_runs).values(
                    id=new_id("backup"),
                    follows=f"after-{owner}",
                    node_id=owner,
                    started_at=utcnow() - timedelta(seconds=DEAD),
                    status="running",
                    file=f"{owner}.zip",
                )
            )

    assert await node.lease.anything_lost()
    taken = await node.lease.take_over()

    assert (taken.backups, taken.nodes) == (1, ["node_dead"])
    assert await _backup_runs(node) == {
        "node_dead": "interrupted",
        "node_live": "running",
        node.id: "running",
    }


async def test_work_of_a_node_gone_from_the_registry_is_taken_once_it_has_not_moved_for_a_lease(
    node: Node,
) -> None:
    await _register(node, node.id, LIVE)
    moving = await _draft(node, "node_gone", "still moving", seconds_ago=LIVE)
    still = await _draft(node, "node_gone", "stopped", seconds_ago=DEAD)
    chain_id = await _chain(node, "node_gone", seconds_ago=DEAD)

    taken = await node.lease.take_over()

    assert (taken.replies, taken.chains) == (1, 1)
    assert await _drafts(node) == {moving}
    assert await _stored(node, still) is not None
    assert (await _chain_status(node, chain_id))[0] == "paused"


async def test_work_that_carries_no_node_is_taken_at_a_start_and_never_by_the_sweeper(
    database_url: str, tmp_path: Path, redis_server: Any
) -> None:
    """As in a cluster (Redis), where another node may be running the work of a live node."""
    svc = await _services(database_url, tmp_path, REDIS_URL=redis_server.url())
    node = Node(svc)
    try:
        await _register(node, "node_live", LIVE)
        old = await _draft(node, None, "from an older version", seconds_ago=DEAD)
        old_chain = await _chain(node, None, seconds_ago=DEAD)
        live = await _draft(node, "node_live", "streaming on", seconds_ago=DEAD)

        assert (await node.lease.take_over()).replies == 0
        assert await _drafts(node) == {old, live}

        taken = await node.lease.start()
        await node.lease.stop()

        assert (taken.replies, taken.chains, taken.nodes) == (1, 1, [])
        assert await _drafts(node) == {live}
        assert await _chain_status(node, old_chain) == ("paused", ["interrupted", "pending"], None)
        assert await _node_ids(node) == {"node_live"}
    finally:
        await svc.bus.aclose()
        await svc.db.dispose()


async def test_alone_a_starting_node_takes_all_work_in_flight_and_forgets_every_other_node(
    node: Node,
) -> None:
    """With the in-process bus there is one node: what is in flight was the last process's,
    however recent its heartbeat."""
    await _register(node, "node_previous", LIVE)
    fresh = await _draft(node, "node_previous", "just now", seconds_ago=0)
    unowned = await _draft(node, None, "older version")
    chain_id = await _chain(node, "node_previous")

    taken = await node.lease.start()
    await node.lease.stop()

    assert (taken.replies, taken.chains, taken.nodes) == (2, 1, ["node_previous"])
    assert {fresh, unowned} - {m["id"] for m in node.published("message")} == set()
    assert (await _chain_status(node, chain_id))[0] == "paused"


@pytest.fixture
def fakes() -> Iterator[tuple[FakeOpenAI, FakeAnthropic]]:
    with FakeOpenAI() as openai, FakeAnthropic() as anthropic:
        yield openai, anthropic
        openai.release()


def test_a_reply_taken_over_from_a_slow_node_is_replaced_by_its_end_when_that_node_finishes(
    fresh_server: Server, fakes: tuple[FakeOpenAI, FakeAnthropic], tmp_path: Path
) -> None:
    """The node was only slow (here: it is alone, so it does not beat, and the other node's
    lease is one second): its reply, stored as interrupted by the other node, is replaced by
    the whole reply when it ends, and announced again."""
    openai, anthropic = fakes
    api, channel_id, reply_id = _start_streaming(fresh_server, openai, anthropic)
    time.sleep(2.6)  # a checkpoint of "Half an"

    url = fresh_server.database_url or f"sqlite:///{fresh_server.db_path}"
    taken = asyncio.run(_take_over_as_another_node(url, tmp_path / "other"))
    assert (taken.replies, len(taken.nodes)) == (1, 1)
    interrupted = next(m for m in history(api, channel_id) if m["id"] == reply_id)
    assert interrupted["content"] == "Half an"
    assert interrupted["metadata"]["interrupted"] is True

    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel_id)
        openai.release()
        ws.expect("stream_end", messageId=reply_id)
        final = ws.expect("message", id=reply_id)["data"]
    assert final["content"] == "Half an answer"
    stored = [m for m in history(api, channel_id) if m["id"] == reply_id]
    assert [m["content"] for m in stored] == ["Half an answer"]
    assert "interrupted" not in stored[0]["metadata"]
    api.close()


async def _take_over_as_another_node(url: str, folder: Path) -> Any:
    svc = await _services(url, folder, node_heartbeat_seconds=0.5, node_lease_seconds=1)
    try:
        return await NodeLease(svc).take_over()
    finally:
        await svc.db.dispose()


async def test_a_dead_nodes_unfinished_indexing_fails_and_a_live_nodes_goes_on(
    node: Node,
) -> None:
    await _register(node, node.id, LIVE)
    await _register(node, "node_dead", DEAD)
    await _register(node, "node_live", LIVE)
    dead = await _document(node, "node_dead", seconds_ago=DEAD)
    live = await _document(node, "node_live", seconds_ago=DEAD)
    mine = await _document(node, node.id, seconds_ago=DEAD)

    taken = await node.lease.take_over()

    assert taken.documents == 1
    assert await _document_status(node, dead) == "failed"
    assert await _document_status(node, live) == "indexing"
    assert await _document_status(node, mine) == "indexing"


async def test_a_sweep_reads_before_it_writes_and_finds_nothing_in_a_quiet_cluster(
    node: Node,
) -> None:
    await _register(node, node.id, LIVE)
    await _register(node, "node_live", LIVE)
    await _draft(node, "node_live", "streaming", seconds_ago=LIVE)
    await _chain(node, "node_live", seconds_ago=LIVE)
    await _document(node, "node_live", seconds_ago=LIVE)
    assert await node.lease.anything_lost() is False

    await _register(node, "node_dead", DEAD)
    assert await node.lease.anything_lost() is True
    await node.lease.take_over()
    assert await node.lease.anything_lost() is False
    await _document(node, "node_gone", seconds_ago=DEAD)
    assert await node.lease.anything_lost() is True
