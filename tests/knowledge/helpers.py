"""Helpers shared by the knowledge and memory tests (fixtures live in conftest.py)."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy import create_engine, insert

from palaver.knowledge.embed import Embedder
from palaver.llm.base import ChatMessage, Delta, GenerationOptions, ModelInfo, ToolSpec
from palaver.store.db import Database
from palaver.store.tables.base import metadata, utcnow
from palaver.store.tables.core import agents
from palaver.store.tables.knowledge import (
    chunks,
    documents,
    memories,
    memory_versions,
    vectors,
)
from tests.fakes.server import RecordedRequest

KNOWLEDGE_TABLES = (documents, chunks, memories, memory_versions, vectors)

AGENT = "agent_01KNOWLEDGE"
OTHER_AGENT = "agent_02OTHER"


def knowledge_template(directory: Path) -> Path:
    """A database with the agents table and the knowledge tables, made from the table
    definitions so that migrations other teams have in progress cannot break these tests
    (test_migration.py checks that the migration makes the same schema)."""
    path = directory / "template.db"
    create_knowledge_schema(f"sqlite:///{path}")
    return path


def create_knowledge_schema(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            metadata.create_all(conn, tables=[agents, *KNOWLEDGE_TABLES])
    finally:
        engine.dispose()


async def open_copy(template: Path, directory: Path, *agent_ids: str) -> Database:
    path = directory / "palaver.db"
    shutil.copyfile(template, path)
    db = Database(f"sqlite+aiosqlite:///{path}")
    for agent_id in agent_ids:
        await add_agent(db, agent_id)
    return db


async def add_agent(db: Database, agent_id: str) -> None:
    now = utcnow()
    async with db.write() as tx:
        await tx.conn.execute(
            insert(agents).values(
                id=agent_id,
                name=agent_id,
                name_key=agent_id.casefold(),
                avatar="🤖",
                description="",
                model="builtin/echo",
                tools=[],
                soul="",
                auto_inject_memory=True,
                created_at=now,
                updated_at=now,
            )
        )


def make_pdf(
    pages: list[str], user_password: str | None = None, owner_password: str = "owner"
) -> bytes:
    """A real PDF with one text page per item (blank items make pages without text)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    if user_password is not None:
        pdf.set_encryption(owner_password=owner_password, user_password=user_password)
    return bytes(pdf.output())


DEFAULT_OPTIONS = GenerationOptions()


@dataclass
class ScriptedProvider:
    """A ModelProvider stand-in: `complete` answers the scripted text, or raises it."""

    answer: str | Exception
    id: str = "scripted"
    context_window: int = 8192
    calls: list[list[ChatMessage]] = field(default_factory=list)

    async def stream(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> AsyncIterator[Delta]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def complete(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> str:
        self.calls.append(list(messages))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def list_models(self) -> list[ModelInfo]:
        return []

    async def aclose(self) -> None:
        return None


class RenamedEmbedder:
    """The same model under another name: what changing the embedding setting looks like."""

    def __init__(self, inner: Embedder, name: str) -> None:
        self.inner = inner
        self.name = name
        self.calls = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return await self.inner.embed(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        return await self.inner.embed_query(text)


_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def is_grading(request: RecordedRequest) -> bool:
    """Whether a request to a fake model asks it to re-score passages rather than to reply."""
    system: str = request.body["messages"][0]["content"]
    return system.startswith("You grade search results.")


def graded_passages(request: RecordedRequest) -> list[str]:
    """The passages a re-scoring request asks the model to grade, in order."""
    prompt: str = request.body["messages"][-1]["content"]
    return [m.group(2) for m in _PASSAGE.finditer(prompt.split("Passages:", 1)[1])]
