"""Embedders: the bundled local model and an OpenAI-compatible endpoint (the fake server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import numpy as np
import pytest

from palaver.errors import Conflict
from palaver.knowledge.embed import (
    LocalEmbedder,
    OpenAIEmbedder,
    current_space,
    make_embedder,
    normalize,
)
from palaver.knowledge.index.base import Space
from palaver.llm.base import ProviderError
from palaver.settings import ProviderConfig, Settings
from tests.fakes.openai_server import FakeOpenAI, embed


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test", embedding_dim=8) as fake:
        yield fake


Endpoint = Callable[..., OpenAIEmbedder]


@pytest.fixture
async def endpoint(fake_openai: FakeOpenAI) -> AsyncIterator[Endpoint]:
    """Makes embedders for the fake server and closes their HTTP clients afterwards."""
    made: list[OpenAIEmbedder] = []

    def make(key: str = "sk-test", batch_size: int = 128) -> OpenAIEmbedder:
        config = ProviderConfig(
            type="openai", baseUrl=fake_openai.base_url, apiKey=key, timeoutSeconds=5
        )
        made.append(OpenAIEmbedder("fake", config, "nomic-embed-text", batch_size=batch_size))
        return made[-1]

    yield make
    for embedder in made:
        await embedder.aclose()


async def test_local_embedder_gives_unit_float32_rows(embedder: LocalEmbedder) -> None:
    assert (embedder.name, embedder.dim) == ("local/all-MiniLM-L6-v2", 384)
    rows = await embedder.embed(
        ["The cat sat on the mat.", "A cat was sitting on a rug.", "Tax law"]
    )
    assert rows.dtype == np.float32 and rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert rows[0] @ rows[1] > 0.6 > rows[0] @ rows[2]
    assert (await embedder.embed([])).shape == (0, 384)


async def test_local_batches_match_one_big_batch(embedder: LocalEmbedder) -> None:
    texts = [f"sentence number {i} about boats" for i in range(5)]
    small = LocalEmbedder(batch_size=2)
    assert np.allclose(await small.embed(texts), await embedder.embed(texts), atol=1e-5)


async def test_openai_endpoint_embeds_in_batches(
    fake_openai: FakeOpenAI, endpoint: Endpoint
) -> None:
    embedder = endpoint(batch_size=2)
    assert (embedder.name, embedder.dim) == ("openai:fake/nomic-embed-text", 0)
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    rows = await embedder.embed(texts)
    assert rows.shape == (5, 8) and rows.dtype == np.float32
    assert np.allclose(rows, np.array([embed(t, 8) for t in texts]), atol=1e-6)
    assert embedder.dim == 8
    calls = [r for r in fake_openai.requests if r.path == "/v1/embeddings"]
    assert [len(r.body["input"]) for r in calls] == [2, 2, 1]
    assert calls[0].body["model"] == "nomic-embed-text"


async def test_the_space_of_a_new_endpoint_is_learned_once(
    fake_openai: FakeOpenAI, endpoint: Endpoint
) -> None:
    embedder = endpoint()
    assert await current_space(embedder) == Space("openai:fake/nomic-embed-text", 8)
    assert await current_space(embedder) == Space("openai:fake/nomic-embed-text", 8)
    assert len([r for r in fake_openai.requests if r.path == "/v1/embeddings"]) == 1


async def test_endpoint_failures_are_provider_errors(endpoint: Endpoint) -> None:
    with pytest.raises(ProviderError, match="fake"):
        await endpoint(key="wrong").embed(["x"])


def test_rows_are_normalized() -> None:
    rows = normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float32
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])


def test_the_setting_chooses_the_embedder() -> None:
    assert isinstance(make_embedder(Settings()), LocalEmbedder)
    ollama = ProviderConfig(type="openai", baseUrl="http://127.0.0.1:9/v1")
    chosen = make_embedder(
        Settings.model_validate(
            {"providers": {"ollama": ollama}, "embedding": {"provider": "ollama", "model": "nomic"}}
        )
    )
    assert chosen.name == "openai:ollama/nomic"
    int8 = {"embedding": {"provider": "local", "model": "all-MiniLM-L6-v2-int8"}}
    assert make_embedder(Settings.model_validate(int8)).name == "local/all-MiniLM-L6-v2-int8"
    bad = [
        {"embedding": {"provider": "local", "model": "bge-large"}},
        {"embedding": {"provider": "nowhere", "model": "x"}},
        {
            "providers": {"claude": {"type": "anthropic"}},
            "embedding": {"provider": "claude", "model": "x"},
        },
    ]
    for settings in bad:
        with pytest.raises(Conflict):
            make_embedder(Settings.model_validate(settings))
