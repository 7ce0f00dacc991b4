"""Run the quality set against Palaver: upload the corpus to a real `palaver serve` over HTTP,
ask every question through `POST /api/rag/query` (hybrid), then rank text-only and
vector-only in this process with the server's own index class on the same database (the
SQLite file, or the PostgreSQL database when the suite's PostgreSQL pass gave it one).

The HTTP API has no switch for one method alone, and adding one only for a benchmark would
widen the public contract. So once the server has stopped, the index `search_index` picks
for its database opens it, and `text_search` and `vector_search` (the two calls the server's
hybrid search makes) rank each question; fusing those two lists the way the server does must
give the ranking that the HTTP API returned, which `agreement` reports.

The embedder variant is the settings' local embedding model: `all-MiniLM-L6-v2` (float, on
torch) or `all-MiniLM-L6-v2-int8` (int8 on ONNX Runtime, the `int8` extra), set on the server
with `PUT /api/settings` before the corpus goes in and used the same way in this process. The
embedder names stored with the vectors are returned so that the caller can check the variant
really took effect.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text
from tests.support import Api, Server

from bench.quality.corpus import Question
from bench.quality.scoring import DEPTH, Passage
from palaver.knowledge.embed import INT8_MODEL, LOCAL_MODEL, make_embedder
from palaver.knowledge.fusion import DEPTH as FUSION_DEPTH
from palaver.knowledge.fusion import fuse
from palaver.knowledge.index.base import Space
from palaver.knowledge.index.pick import search_index
from palaver.settings import Settings
from palaver.store.db import Database

VARIANTS = {"float": LOCAL_MODEL, "quantized": INT8_MODEL}
MODES = ("text", "vector", "hybrid")


def variant_settings(variant: str) -> dict[str, Any]:
    """The settings patch that selects the embedder variant."""
    return {"embedding": {"provider": "local", "model": VARIANTS[variant]}}


def embedder_name(variant: str) -> str:
    """The name the variant's embedder stores with its vectors (made without loading it)."""
    return make_embedder(Settings.model_validate(variant_settings(variant))).name


def check_variant(variant: str) -> None:
    """Refuse a variant this build cannot select: its vectors would carry the float model's
    name, and float results would be reported under the variant's."""
    if variant != "float" and embedder_name(variant) == embedder_name("float"):
        raise SystemExit(f"the {variant} embedder is the float one in this build")


@dataclass
class Rankings:
    """Each mode's top DEPTH passages per question id, and what came with them."""

    ranked: dict[str, dict[str, list[Passage]]] = field(
        default_factory=lambda: {mode: {} for mode in MODES}
    )
    top_cosine: dict[str, float] = field(default_factory=dict)
    """The best vector hit's cosine similarity per question."""
    agreement: float = 0.0
    """Share of questions whose in-process fusion of the text and vector lists gives the same
    top DEPTH chunks, in the same order, as the HTTP API."""
    hybrid_ids: dict[str, list[str]] = field(default_factory=dict)
    """The chunk ids the HTTP API returned, per question."""
    hybrid_ms: list[float] = field(default_factory=list)
    corpus: list[Passage] = field(default_factory=list)
    """Every chunk the agent holds."""
    embedders: list[str] = field(default_factory=list)
    """The embedder names stored with the agent's chunk vectors."""


def start_server(data_dir: Path) -> Server:
    server = Server(data_dir)
    server.start()
    return server


def choose_variant(api: Api, variant: str) -> None:
    api.ok("PUT", "/api/settings", json=variant_settings(variant))


def upload_corpus(api: Api, agent_id: str, files: dict[str, bytes]) -> float:
    """Upload every document (one at a time, as a user would); returns the seconds taken."""
    started = time.perf_counter()
    for name, data in files.items():
        kind = "application/pdf" if name.endswith(".pdf") else "text/plain"
        response = api.post(
            "/api/rag/upload",
            files={"file": (name, data, kind)},
            data={"agentId": agent_id},
            timeout=300,
        )
        if response.status_code != 200:
            raise RuntimeError(f"uploading {name} failed: {response.status_code} {response.text}")
    return time.perf_counter() - started


def ask_hybrid(api: Api, agent_id: str, questions: Sequence[Question], rankings: Rankings) -> None:
    """Every question through the HTTP API; chunk ids are kept to compare with fusion."""
    for question in questions:
        started = time.perf_counter()
        body: dict[str, Any] = api.ok(
            "POST",
            "/api/rag/query",
            json={"agentId": agent_id, "query": question.text, "topK": DEPTH},
        )
        rankings.hybrid_ms.append((time.perf_counter() - started) * 1000)
        rankings.ranked["hybrid"][question.id] = [
            Passage(r["documentName"], r["content"]) for r in body["results"]
        ]
        rankings.hybrid_ids[question.id] = [r["chunkId"] for r in body["results"]]


def database_url(server: Server) -> str:
    """The stopped server's database, whichever kind it stored in."""
    return server.database_url or f"sqlite+aiosqlite:///{server.db_path}"


async def _chunks(db: Database, agent_id: str) -> dict[str, Passage]:
    async with db.read() as conn:
        rows = await conn.execute(
            text(
                "SELECT c.id, d.name, c.content FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE c.agent_id = :agent"
            ),
            {"agent": agent_id},
        )
        return {chunk_id: Passage(name, content) for chunk_id, name, content in rows}


async def _embedders(db: Database, agent_id: str) -> list[str]:
    async with db.read() as conn:
        rows = await conn.execute(
            text(
                "SELECT DISTINCT embedder FROM vectors WHERE agent_id = :agent AND kind = 'chunk'"
            ),
            {"agent": agent_id},
        )
        return sorted(row[0] for row in rows)


async def rank_in_process(
    db_url: str,
    agent_id: str,
    questions: Sequence[Question],
    variant: str,
    rankings: Rankings,
) -> None:
    """Text-only and vector-only rankings from the stopped server's database."""
    db = Database(db_url)
    index = search_index(db)
    agreeing = 0
    try:
        chunks = await _chunks(db, agent_id)
        rankings.corpus = list(chunks.values())
        rankings.embedders = await _embedders(db, agent_id)
        embedder = make_embedder(Settings.model_validate(variant_settings(variant)))
        vectors = [await embedder.embed_query(q.text) for q in questions]
        space = Space(embedder.name, embedder.dim)
        if rankings.embedders != [space.embedder]:
            raise RuntimeError(
                f"the vectors were made by {rankings.embedders}, this process embeds with "
                f"{space.embedder}: the variant did not reach both sides"
            )
        for question, vector in zip(questions, vectors, strict=True):
            words = [h.id for h in await index.text_search(agent_id, question.text, FUSION_DEPTH)]
            hits = await index.vector_search(agent_id, "chunk", vector, space, FUSION_DEPTH)
            nearest = [h.id for h in hits]
            rankings.top_cosine[question.id] = hits[0].score if hits else 0.0
            rankings.ranked["text"][question.id] = [chunks[i] for i in words[:DEPTH]]
            rankings.ranked["vector"][question.id] = [chunks[i] for i in nearest[:DEPTH]]
            fused = [f.id for f in fuse(words, nearest)][:DEPTH]
            agreeing += fused == rankings.hybrid_ids.get(question.id)
    finally:
        await db.dispose()
    rankings.agreement = agreeing / len(questions) if questions else 1.0
