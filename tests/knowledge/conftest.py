"""Fixtures: the real local embedding model, loaded once per session, and a migrated SQLite
database per test (a copy of a template migrated once) holding two agents."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from palaver.knowledge.embed import Embedder, LocalEmbedder
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.knowledge.service import KnowledgeBase
from palaver.store.db import Database
from tests.knowledge.helpers import AGENT, OTHER_AGENT, knowledge_template, open_copy


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    model = LocalEmbedder()
    model.load()
    return model


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return knowledge_template(tmp_path_factory.mktemp("knowledge"))


@pytest.fixture
async def db(template_db: Path, tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_copy(template_db, tmp_path, AGENT, OTHER_AGENT)
    yield database
    await database.dispose()


@pytest.fixture
def index(db: Database) -> SqliteSearchIndex:
    return SqliteSearchIndex(db)


@pytest.fixture
def embedders(embedder: LocalEmbedder) -> dict[str, Embedder]:
    """The current embedder, as app.py holds it; tests swap it to make vectors stale."""
    return {"current": embedder}


@pytest.fixture
def current(embedders: dict[str, Embedder]) -> Callable[[], Embedder]:
    return lambda: embedders["current"]


@pytest.fixture
def kb(db: Database, index: SqliteSearchIndex, current: Callable[[], Embedder]) -> KnowledgeBase:
    return KnowledgeBase(db, index, current)
