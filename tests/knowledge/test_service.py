"""The knowledge base end to end on real files: upload, de-duplication, rejection, hybrid
query with citations, re-scoring and its fallback, deletion, and re-indexing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from sqlalchemy import func, select, text

from palaver.errors import Invalid, NotFound
from palaver.knowledge.embed import Embedder, LocalEmbedder
from palaver.knowledge.index.base import IndexStatus, Space
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.knowledge.parse import UnreadableDocument, UnsupportedDocument
from palaver.knowledge.reindex import reindex_agent
from palaver.knowledge.rerank import ModelReranker
from palaver.knowledge.service import IngestResult, KnowledgeBase
from palaver.llm.base import ProviderError
from palaver.memory import MemoryStore
from palaver.settings import MemoryConfig
from palaver.store.db import Database
from palaver.store.tables.knowledge import chunks, fts_table, vectors
from tests.knowledge.helpers import (
    AGENT,
    OTHER_AGENT,
    RenamedEmbedder,
    ScriptedProvider,
    make_pdf,
)

GUIDE = b"""# Harbor Guide

Harbor is a tool for mooring boats in a busy marina.

## Installation

Download the harbor binary and place it on your PATH. On Debian, install the harbor
package with apt. The installer needs about 40 megabytes of disk space.

## Configuration

The configuration lives in harbor.toml next to the binary. Set berth_count to the number
of berths in the marina and tide_table to the path of the local tide table.

### Logging

Logs go to /var/log/harbor. Set log_level to debug when reporting a problem.
"""

NOTES = b"""Notes from the dock meeting.

The harbour master wants all visiting yachts to radio channel 12 before entering.

Fuel is sold at the north pier between eight and six.
"""

PDF_PAGES = [
    "Chapter one. The lighthouse keeper climbs 212 steps every evening to light the lamp.",
    "Chapter two. Fog horns sound twice a minute when visibility drops below one mile.",
    "Chapter three. Storm shutters close automatically when wind exceeds 50 knots.",
]


async def count(db: Database, table: object) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())  # type: ignore[arg-type]


async def test_markdown_is_chunked_by_heading_and_cited(kb: KnowledgeBase) -> None:
    result = await kb.ingest(AGENT, "guide.md", GUIDE)
    assert not result.duplicate
    doc = result.document
    assert (doc.agent_id, doc.name, doc.kind, doc.bytes, doc.pages) == (
        AGENT,
        "guide.md",
        "markdown",
        len(GUIDE),
        None,
    )
    assert doc.chunks == 4
    answer = await kb.query(AGENT, "Where do the log files go?", top_k=3)
    top = answer.results[0]
    assert top.heading_path == ("Harbor Guide", "Configuration", "Logging")
    assert "/var/log/harbor" in top.content
    assert (top.document_id, top.document_name, top.page) == (doc.id, "guide.md", None)
    assert top.text_rank is not None and top.vector_rank is not None
    assert answer.reranked is False


async def test_pdf_pages_are_kept_for_citation(kb: KnowledgeBase) -> None:
    doc = (await kb.ingest(AGENT, "lighthouse.pdf", make_pdf(PDF_PAGES))).document
    assert (doc.kind, doc.pages, doc.chunks) == ("pdf", 3, 3)
    answer = await kb.query(AGENT, "When do the fog horns sound?", top_k=1)
    (top,) = answer.results
    assert top.page == 2 and "Fog horns" in top.content


async def test_plain_text_is_searchable(kb: KnowledgeBase) -> None:
    doc = (await kb.ingest(AGENT, "notes.txt", NOTES)).document
    assert (doc.kind, doc.chunks) == ("text", 1), "short paragraphs share one chunk"
    answer = await kb.query(AGENT, "which radio channel should yachts use?", top_k=2)
    assert "channel 12" in answer.results[0].content and answer.results[0].heading_path == ()


async def test_the_same_content_is_stored_once_per_agent(kb: KnowledgeBase, db: Database) -> None:
    first = await kb.ingest(AGENT, "guide.md", GUIDE)
    again = await kb.ingest(AGENT, "copy of guide.md", GUIDE)
    assert again.duplicate and again.document == first.document
    assert again.as_json()["duplicate"] is True
    assert [d.id for d in await kb.documents(AGENT)] == [first.document.id]
    assert await kb.document(first.document.id) == first.document
    other = await kb.ingest(OTHER_AGENT, "guide.md", GUIDE)
    assert not other.duplicate and other.document.id != first.document.id
    assert await count(db, chunks) == 2 * first.document.chunks


async def test_uploads_to_unknown_agents_are_not_found(kb: KnowledgeBase) -> None:
    with pytest.raises(NotFound):
        await kb.ingest("agent_missing", "guide.md", GUIDE)
    with pytest.raises(NotFound):
        await kb.documents("agent_missing")
    with pytest.raises(NotFound):
        await kb.query("agent_missing", "anything")


@pytest.mark.parametrize(
    ("name", "data", "error", "status"),
    [
        ("logo.png", b"\x89PNG\r\n\x1a\n" + bytes(100), UnsupportedDocument, 415),
        ("sheet.xlsx", b"PK\x03\x04" + bytes(100), UnsupportedDocument, 415),
        ("page.html", b"<p>hello</p>", UnsupportedDocument, 415),
        ("locked.pdf", make_pdf(["classified"], user_password="pw"), UnreadableDocument, 400),
        ("broken.pdf", b"%PDF-1.4\nnot really", UnreadableDocument, 400),
    ],
)
async def test_rejected_uploads_store_nothing(
    kb: KnowledgeBase, db: Database, name: str, data: bytes, error: type[Exception], status: int
) -> None:
    with pytest.raises(error) as caught:
        await kb.ingest(AGENT, name, data)
    assert getattr(caught.value, "status", None) == status
    assert await kb.documents(AGENT) == []
    assert await count(db, vectors) == 0


async def test_deleting_a_document_removes_its_chunks_and_vectors(
    kb: KnowledgeBase, db: Database
) -> None:
    keep = (await kb.ingest(AGENT, "notes.txt", NOTES)).document
    gone = (await kb.ingest(AGENT, "guide.md", GUIDE)).document
    await kb.query(AGENT, "harbor configuration")
    assert (await kb.delete_document(gone.id)).id == gone.id
    assert [d.id for d in await kb.documents(AGENT)] == [keep.id]
    assert await count(db, chunks) == keep.chunks
    assert await count(db, vectors) == keep.chunks
    answer = await kb.query(AGENT, "harbor configuration toml berth_count", top_k=20)
    assert {r.document_id for r in answer.results} == {keep.id}
    async with db.read() as conn:
        table = fts_table(AGENT)
        fts = await conn.execute(text(f"SELECT count(*) FROM {table} WHERE {table} MATCH 'toml'"))
        assert fts.scalar() == 0
    with pytest.raises(NotFound):
        await kb.delete_document(gone.id)
    with pytest.raises(NotFound):
        await kb.document(gone.id)


async def test_query_arguments_are_checked(kb: KnowledgeBase) -> None:
    for top_k in (0, 21):
        with pytest.raises(Invalid):
            await kb.query(AGENT, "x", top_k=top_k)
    with pytest.raises(Invalid):
        await kb.query(AGENT, "   ")
    assert (await kb.query(AGENT, "nothing uploaded yet")).results == []


async def test_query_results_have_the_public_shape(kb: KnowledgeBase) -> None:
    await kb.ingest(AGENT, "guide.md", GUIDE)
    body = (await kb.query(AGENT, "install on Debian", top_k=2)).as_json()
    assert set(body) == {"results", "reranked"}
    assert set(body["results"][0]) == {
        "chunkId",
        "documentId",
        "documentName",
        "content",
        "headingPath",
        "page",
        "score",
        "textRank",
        "vectorRank",
        "relevance",
    }
    assert body["results"][0]["headingPath"] == ["Harbor Guide", "Installation"]


async def test_rescoring_reorders_the_top_ten(kb: KnowledgeBase) -> None:
    await kb.ingest(AGENT, "guide.md", GUIDE)
    plain = await kb.query(AGENT, "harbor", top_k=4)
    assert len(plain.results) == 4
    grades = "[1, 2, 3, 9]"
    reranked = await kb.query(
        AGENT, "harbor", top_k=4, reranker=ModelReranker(ScriptedProvider(grades), "m")
    )
    assert reranked.reranked is True
    assert [r.chunk_id for r in reranked.results] == [r.chunk_id for r in reversed(plain.results)]
    assert [r.relevance for r in reranked.results] == [9.0, 3.0, 2.0, 1.0]


@pytest.mark.parametrize("answer", ["no idea", ProviderError("The model is down.")])
async def test_failed_rescoring_falls_back_to_fusion_order(
    kb: KnowledgeBase, answer: str | Exception
) -> None:
    await kb.ingest(AGENT, "guide.md", GUIDE)
    plain = await kb.query(AGENT, "harbor", top_k=4)
    fallback = await kb.query(
        AGENT, "harbor", top_k=4, reranker=ModelReranker(ScriptedProvider(answer), "m")
    )
    assert fallback.reranked is False
    assert fallback.results == plain.results


async def test_relevant_chunks_for_injection(
    db: Database, index: SqliteSearchIndex, embedder: LocalEmbedder
) -> None:
    counting = RenamedEmbedder(embedder, embedder.name)
    kb = KnowledgeBase(db, index, lambda: counting)
    assert await kb.relevant_chunks(AGENT, "where are the logs?") == []
    assert counting.calls == 0, "no documents: the message is not even embedded"
    await kb.ingest(AGENT, "guide.md", GUIDE)
    found = await kb.relevant_chunks(AGENT, "where are the logs?", k=2)
    assert len(found) == 2 and "/var/log/harbor" in found[0].content


async def test_an_embedder_change_leaves_vectors_stale_until_reindexed(
    db: Database,
    index: SqliteSearchIndex,
    kb: KnowledgeBase,
    embedders: dict[str, Embedder],
    current: Callable[[], Embedder],
    embedder: LocalEmbedder,
) -> None:
    memories = MemoryStore(db, index, current, MemoryConfig)
    await kb.ingest(AGENT, "guide.md", GUIDE)
    await memories.write(AGENT, "The owner keeps a boat called Petrel.")
    embedders["current"] = RenamedEmbedder(embedder, "local/renamed-for-test")
    new_space = Space("local/renamed-for-test", 384)
    assert await index.status(AGENT, new_space) == {
        "chunk": IndexStatus(total=4, stale=4),
        "memory": IndexStatus(total=1, stale=1),
    }
    stale = await kb.query(AGENT, "where do logs go", top_k=5)
    assert stale.results and all(r.vector_rank is None for r in stale.results)
    assert await memories.search(AGENT, "boat name") == []

    progress: list[tuple[int, int]] = []

    async def report(done: int, total: int) -> None:
        progress.append((done, total))

    assert await reindex_agent(AGENT, [kb, memories], report, batch=3) == 5
    assert progress == [(0, 5), (3, 5), (4, 5), (5, 5)]
    assert (await index.status(AGENT, new_space))["chunk"] == IndexStatus(total=4, stale=0)
    fresh = await kb.query(AGENT, "where do logs go", top_k=5)
    assert fresh.results[0].vector_rank == 1
    (match,) = await memories.search(AGENT, "boat name")
    assert "Petrel" in match.memory.content
    assert await reindex_agent(AGENT, [kb, memories]) == 0


def filler(topic: str, sentences: int) -> str:
    """Paragraphs that never name the document's subject."""
    return "\n\n".join(
        f"Paragraph {n} about {topic}: the {topic} was noted on day {n} of the season, "
        f"and the crew wrote down what they saw about the {topic} that morning."
        for n in range(sentences)
    )


async def test_titles_reach_later_chunks_of_long_documents(kb: KnowledgeBase) -> None:
    """The words of a title are in no chunk's text, yet every chunk of the document, the last
    one too, is found by text and by vector for a query naming only the title."""
    body = filler("weather", 40) + "\n\nThe last paragraph is about the wind."
    for name in ("kettle-descaling.txt", "kettle-descaling.md"):
        doc = (await kb.ingest(AGENT, name, body.encode())).document
        assert doc.chunks >= 3
        answer = await kb.query(AGENT, "kettle descaling", top_k=20)
        found = [r for r in answer.results if r.document_id == doc.id]
        last = [r for r in found if "last paragraph" in r.content]
        assert last and last[0].text_rank is not None and last[0].vector_rank is not None
        assert all("kettle" not in r.content.casefold() for r in found), "not shown"
        await kb.delete_document(doc.id)


async def test_concurrent_uploads_are_stored_in_shared_batches(
    kb: KnowledgeBase, db: Database
) -> None:
    notes = [
        f"Note {n}: the {word} is kept in drawer {n}.".encode()
        for n, word in enumerate(
            ["stapler", "ruler", "compass", "eraser", "scissors", "glue", "tape", "chalk"]
        )
    ]
    results = await asyncio.gather(
        *(kb.ingest(AGENT, f"note{n}.txt", data) for n, data in enumerate(notes)),
        kb.ingest(AGENT, "again.txt", notes[0]),
        kb.ingest("agent_missing", "lost.txt", b"Nobody keeps this."),
        return_exceptions=True,
    )
    stored = [r for r in results[:9] if isinstance(r, IngestResult)]
    assert len(stored) == 9 and len({r.document.id for r in stored}) == 8
    first, again = sorted((stored[0], stored[8]), key=lambda r: r.duplicate)
    assert not first.duplicate and again.duplicate and again.document.id == first.document.id
    assert isinstance(results[9], NotFound)
    assert await count(db, chunks) == 8 and await count(db, vectors) == 8
    answer = await kb.query(AGENT, "where is the compass kept?", top_k=1)
    assert "compass" in answer.results[0].content
