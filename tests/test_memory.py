"""Memory write rules at their thresholds, versions and restore, and the privacy rule for
channels with guests, on the real local embedding models (texts: `tests/memory_texts.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from palaver.errors import Invalid, NotFound
from palaver.knowledge.embed import Embedder, LocalEmbedder
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.memory import MemoryStore, exact_similarity
from palaver.settings import MemoryConfig
from palaver.store.db import Database
from palaver.store.tables.knowledge import vectors
from tests.knowledge.helpers import (
    AGENT,
    OTHER_AGENT,
    RenamedEmbedder,
    knowledge_template,
    open_copy,
)
from tests.memory_texts import ALSO_RELATED, BASE, DISTANT, DUPLICATE, RELATED, UNRELATED


@pytest.fixture(scope="session")
def local() -> LocalEmbedder:
    model = LocalEmbedder()
    model.load()
    return model


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return knowledge_template(tmp_path_factory.mktemp("memory"))


@pytest.fixture
async def db(template: Path, tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_copy(template, tmp_path, AGENT, OTHER_AGENT)
    yield database
    await database.dispose()


@pytest.fixture
def config() -> MemoryConfig:
    return MemoryConfig()


@pytest.fixture
def store(db: Database, local: LocalEmbedder, config: MemoryConfig) -> MemoryStore:
    return MemoryStore(db, SqliteSearchIndex(db), lambda: local, lambda: config)


@pytest.mark.parametrize("precision", ["float", "int8"])
async def test_the_threshold_texts_keep_their_margin_under_both_models(
    local: LocalEmbedder, precision: str
) -> None:
    """No case may hinge on the last digits of a similarity (see `tests/memory_texts.py`)."""
    model = local if precision == "float" else LocalEmbedder(precision="int8")
    rows = await model.embed([BASE, DUPLICATE, RELATED, ALSO_RELATED, DISTANT])
    similarity = [float(rows[0] @ row) for row in rows[1:]]
    margin = 0.04
    assert similarity[0] > 0.85 + margin
    assert all(0.7 + margin < s < 0.85 - margin for s in similarity[1:3])
    assert similarity[3] < 0.7 - margin


async def test_a_near_copy_is_skipped_and_names_the_memory_it_duplicates(
    store: MemoryStore,
) -> None:
    first = await store.write(AGENT, BASE, "semantic")
    assert first.action == "inserted" and first.similarity is None
    again = await store.write(AGENT, DUPLICATE, "semantic")
    assert again.action == "skipped"
    assert again.memory == first.memory
    assert again.as_json()["duplicateOf"] == first.memory.id
    assert again.similarity is not None and again.similarity > 0.85
    assert [m.content for m in await store.list_memories(AGENT)] == [BASE]


@pytest.mark.parametrize("text", [RELATED, ALSO_RELATED])
async def test_a_related_text_updates_the_closest_memory_and_keeps_the_old_one(
    store: MemoryStore, text: str
) -> None:
    first = await store.write(AGENT, BASE, "semantic", channel_id="ch_dm")
    result = await store.write(
        AGENT, text, "semantic", channel_id="ch_dm", source_message_id="msg_2"
    )
    assert result.action == "updated"
    assert result.similarity is not None and 0.7 < result.similarity <= 0.85
    assert result.previous_content == BASE
    updated = result.memory
    assert (updated.id, updated.content, updated.version) == (first.memory.id, text, 2)
    assert updated.source_message_id == "msg_2"
    (old,) = await store.versions(AGENT, updated.id)
    assert (old.version, old.content) == (1, BASE)
    assert [m.content for m in await store.list_memories(AGENT)] == [text]


@pytest.mark.parametrize("text", [DISTANT, UNRELATED])
async def test_a_distant_text_is_inserted(store: MemoryStore, text: str) -> None:
    await store.write(AGENT, BASE)
    result = await store.write(AGENT, text, "procedural")
    assert result.action == "inserted"
    assert result.similarity is not None and result.similarity <= 0.7
    assert result.memory.type == "procedural" and result.memory.version == 1
    assert len(await store.list_memories(AGENT)) == 2


async def test_thresholds_come_from_the_settings(store: MemoryStore, config: MemoryConfig) -> None:
    await store.write(AGENT, BASE)
    config.duplicateThreshold = 0.95
    assert (await store.write(AGENT, DUPLICATE)).action == "updated"


async def test_versions_and_restore_never_lose_content(store: MemoryStore) -> None:
    memory = (await store.write(AGENT, BASE, "semantic")).memory
    await store.update(AGENT, memory.id, content="The owner's favourite language is Go.")
    await store.update(AGENT, memory.id, type="procedural")
    current = await store.get(AGENT, memory.id)
    assert (current.version, current.type) == (3, "procedural")
    assert [(v.version, v.content, v.type) for v in await store.versions(AGENT, memory.id)] == [
        (1, BASE, "semantic"),
        (2, "The owner's favourite language is Go.", "semantic"),
    ]
    restored = await store.restore(AGENT, memory.id, 1)
    assert (restored.version, restored.content, restored.type) == (4, BASE, "semantic")
    history = await store.versions(AGENT, memory.id)
    assert [v.version for v in history] == [1, 2, 3]
    assert history[-1].type == "procedural"
    assert await store.restore(AGENT, memory.id, 4) == restored
    with pytest.raises(NotFound):
        await store.restore(AGENT, memory.id, 9)
    (match,) = await store.search(AGENT, "favourite programming language")
    assert match.memory.content == BASE, "the restored content is what search finds"


async def test_an_unchanged_update_makes_no_version(store: MemoryStore) -> None:
    memory = (await store.write(AGENT, BASE)).memory
    assert await store.update(AGENT, memory.id, content=f"  {BASE} ") == memory
    assert await store.versions(AGENT, memory.id) == []


async def test_guests_channel_sees_only_what_was_learned_there(store: MemoryStore) -> None:
    private = await store.write(
        AGENT, "The owner's bank PIN hint is the cat's birthday.", channel_id="ch_owner_dm"
    )
    shared = await store.write(
        AGENT, "The guests want the meeting notes in French.", channel_id="ch_guests"
    )
    everything = await store.search(AGENT, "bank PIN hint", top_k=5)
    assert everything[0].memory.id == private.memory.id
    in_room = await store.search(AGENT, "bank PIN hint", top_k=5, only_channel="ch_guests")
    assert [m.memory.id for m in in_room] == [shared.memory.id]
    injected = await store.relevant(
        AGENT, "what is the PIN hint?", floor=-1.0, only_channel="ch_guests"
    )
    assert [m.memory.id for m in injected] == [shared.memory.id]


async def test_a_guest_channel_write_neither_matches_nor_overwrites_private_memories(
    store: MemoryStore,
) -> None:
    private = await store.write(AGENT, BASE, channel_id="ch_owner_dm")
    result = await store.write(
        AGENT, ALSO_RELATED, channel_id="ch_guests", only_channel="ch_guests"
    )
    assert result.action == "inserted" and result.similarity is None
    assert (await store.get(AGENT, private.memory.id)).content == BASE
    again = await store.write(AGENT, ALSO_RELATED, channel_id="ch_guests", only_channel="ch_guests")
    assert again.action == "skipped" and again.memory.id == result.memory.id


async def test_an_update_moves_the_memory_to_where_the_new_content_was_learned(
    store: MemoryStore,
) -> None:
    first = await store.write(AGENT, BASE, channel_id="ch_guests")
    await store.write(AGENT, ALSO_RELATED, channel_id="ch_owner_dm")
    assert (await store.get(AGENT, first.memory.id)).channel_id == "ch_owner_dm"
    assert await store.search(AGENT, "language", only_channel="ch_guests") == []
    restored = await store.restore(AGENT, first.memory.id, 1)
    assert restored.channel_id == "ch_guests"


async def test_injection_takes_the_top_k_above_the_floor(store: MemoryStore) -> None:
    for text in [BASE, UNRELATED, "The owner's cat is called Miso.", "The owner works nights."]:
        await store.write(AGENT, text)
    found = await store.relevant(AGENT, "Which programming language should I use?")
    assert found[0].memory.content == BASE
    assert all(m.similarity >= 0.3 for m in found)
    assert len(found) < 4, "unrelated memories stay below the floor"
    assert len(await store.relevant(AGENT, "owner", k=2, floor=-1.0)) == 2
    assert await store.relevant(OTHER_AGENT, "anything") == []


async def test_search_filters_by_type_and_reports_similarity(store: MemoryStore) -> None:
    await store.write(AGENT, BASE, "semantic")
    await store.write(AGENT, "Yesterday the owner shipped release 2.0.", "episodic")
    episodic = await store.search(AGENT, "programming language", type="episodic")
    assert [m.memory.type for m in episodic] == ["episodic"]
    body = episodic[0].as_json()
    assert body["type"] == "episodic" and isinstance(body["similarity"], float)
    assert [m.type for m in await store.list_memories(AGENT, type="semantic")] == ["semantic"]


async def test_memories_are_private_to_their_agent(store: MemoryStore) -> None:
    memory = (await store.write(AGENT, BASE)).memory
    assert await store.search(OTHER_AGENT, BASE) == []
    assert (await store.write(OTHER_AGENT, BASE)).action == "inserted"
    with pytest.raises(NotFound):
        await store.get(OTHER_AGENT, memory.id)
    with pytest.raises(NotFound):
        await store.delete(OTHER_AGENT, memory.id)


async def test_deleting_a_memory_removes_it_and_its_versions(store: MemoryStore) -> None:
    memory = (await store.write(AGENT, BASE)).memory
    await store.update(AGENT, memory.id, content="The owner's favourite language is Go.")
    assert (await store.delete(AGENT, memory.id)).id == memory.id
    assert await store.list_memories(AGENT) == []
    assert await store.search(AGENT, BASE) == []
    with pytest.raises(NotFound):
        await store.versions(AGENT, memory.id)


async def test_bad_input_is_invalid_and_unknown_agents_are_not_found(store: MemoryStore) -> None:
    with pytest.raises(Invalid):
        await store.write(AGENT, "   ")
    with pytest.raises(Invalid):
        await store.write(AGENT, BASE, "opinion")
    with pytest.raises(Invalid):
        await store.search(AGENT, BASE, top_k=0)
    with pytest.raises(NotFound):
        await store.write("agent_missing", BASE)
    with pytest.raises(NotFound):
        await store.search("agent_missing", BASE)


async def test_concurrent_identical_writes_store_one_memory(store: MemoryStore) -> None:
    results = await asyncio.gather(*(store.write(AGENT, BASE) for _ in range(4)))
    assert sorted(r.action for r in results) == ["inserted", "skipped", "skipped", "skipped"]
    assert len(await store.list_memories(AGENT)) == 1


async def test_a_memory_deleted_while_it_is_re_embedded_gets_no_vector_back(
    db: Database, local: LocalEmbedder, config: MemoryConfig
) -> None:
    """A slow re-embedding (a remote endpoint) must not resurrect a memory's vector."""
    embedders: dict[str, Embedder] = {"current": local}
    store = MemoryStore(db, SqliteSearchIndex(db), lambda: embedders["current"], lambda: config)
    kept = (await store.write(AGENT, BASE)).memory
    gone = (await store.write(AGENT, UNRELATED)).memory

    class DeletesMeanwhile(RenamedEmbedder):
        async def embed(self, texts: Sequence[str]) -> np.ndarray:
            if self.calls == 0:
                await store.delete(AGENT, gone.id)
            return await super().embed(texts)

    embedders["current"] = DeletesMeanwhile(local, "local/renamed")
    assert set(await store.stale(AGENT)) == {kept.id, gone.id}
    await store.reembed(AGENT, [kept.id, gone.id])
    async with db.read() as conn:
        rows = await conn.execute(select(vectors.c.item_id, vectors.c.embedder))
        assert list(rows) == [(kept.id, "local/renamed")]
    assert [m.memory.id for m in await store.search(AGENT, UNRELATED)] == [kept.id]


def test_the_judged_similarity_is_one_exactly_rounded_number() -> None:
    """The write rule's similarity does not depend on the order of the additions (nor so on
    the CPU or the engine): it is the exact dot product of the float32 vectors, rounded once."""
    rng = np.random.default_rng(8)
    for _ in range(50):
        a, b = rng.standard_normal((2, 384)).astype(np.float32)
        exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b, strict=True))
        judged = exact_similarity(a, b.tobytes())
        assert judged == float(exact)
        order = rng.permutation(384)
        assert exact_similarity(a[order], b[order].tobytes()) == judged
