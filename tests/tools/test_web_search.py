"""The web_search tool and its adapters, against fake SearXNG, Brave and Tavily servers."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from blockbuster import blockbuster_ctx

from palaver.settings import WebSearchConfig
from palaver.tools.base import ToolContext, ToolError
from palaver.tools.web_search import (
    BraveSearch,
    SearchResult,
    SearxngSearch,
    TavilySearch,
    WebSearchError,
    WebSearchTool,
)
from tests.fakes.search_servers import API_KEY, PAGE_SIZE, FakeSearchServer, Kind

CTX = ToolContext(
    agent_id="agent_1", agent_name="Ada", channel_id="ch_1", user_id=None, message_id="msg_1"
)


@pytest.fixture(autouse=True)
def _no_blocking_calls_on_the_loop() -> Iterator[None]:
    """The service runs with blocking-call detection; so do these tests."""
    with blockbuster_ctx():
        yield


@pytest.fixture(scope="module")
def searxng_server() -> Iterator[FakeSearchServer]:
    with FakeSearchServer("searxng") as fake:
        yield fake


@pytest.fixture(scope="module")
def brave_server() -> Iterator[FakeSearchServer]:
    with FakeSearchServer("brave") as fake:
        yield fake


@pytest.fixture(scope="module")
def tavily_server() -> Iterator[FakeSearchServer]:
    with FakeSearchServer("tavily") as fake:
        yield fake


@pytest.fixture
def searxng(searxng_server: FakeSearchServer) -> FakeSearchServer:
    searxng_server.reset()
    return searxng_server


@pytest.fixture
def brave(brave_server: FakeSearchServer) -> FakeSearchServer:
    brave_server.reset()
    return brave_server


@pytest.fixture
def tavily(tavily_server: FakeSearchServer) -> FakeSearchServer:
    tavily_server.reset()
    return tavily_server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client


@pytest.fixture
def config() -> WebSearchConfig:
    return WebSearchConfig()


@pytest.fixture
async def tool(config: WebSearchConfig) -> AsyncIterator[WebSearchTool]:
    tool = WebSearchTool(lambda: config, timeout_seconds=0.5)
    yield tool
    await tool.aclose()


def configure(config: WebSearchConfig, **values: str | None) -> None:
    for key, value in values.items():
        setattr(config, key, value)


async def test_searxng_adapter_sends_the_json_query_and_maps_content(
    searxng: FakeSearchServer, client: httpx.AsyncClient
) -> None:
    results = await SearxngSearch(client, searxng.base_url + "/").search("otters", 3)

    assert searxng.last.method == "GET"
    assert searxng.last.path == "/search"
    assert searxng.last.query == {"q": "otters", "format": "json"}
    assert results == [
        SearchResult(
            title=f"SearXNG result {i} for otters",
            url=f"https://searx.example/{i}",
            snippet=f"Snippet {i} about otters",
        )
        for i in (1, 2, 3)
    ]


async def test_brave_adapter_sends_the_key_header_and_count(
    brave: FakeSearchServer, client: httpx.AsyncClient
) -> None:
    results = await BraveSearch(client, API_KEY, brave.base_url).search("otters", 2)

    assert brave.last.method == "GET"
    assert brave.last.path == "/res/v1/web/search"
    assert brave.last.query == {"q": "otters", "count": "2"}
    assert brave.last.headers["x-subscription-token"] == API_KEY
    assert brave.last.headers["accept"] == "application/json"
    assert results == [
        SearchResult(
            title=f"Brave result {i} for otters",
            url=f"https://brave.example/{i}",
            snippet=f"About otters & more, part {i}",
        )
        for i in (1, 2)
    ]


async def test_tavily_adapter_posts_the_query_with_a_bearer_key(
    tavily: FakeSearchServer, client: httpx.AsyncClient
) -> None:
    results = await TavilySearch(client, API_KEY, tavily.base_url).search("otters", 4)

    assert tavily.last.method == "POST"
    assert tavily.last.path == "/search"
    assert tavily.last.headers["authorization"] == f"Bearer {API_KEY}"
    assert tavily.last.headers["content-type"] == "application/json"
    assert tavily.last.body == {"query": "otters", "max_results": 4}
    assert [r.url for r in results] == [f"https://tavily.example/{i}" for i in (1, 2, 3, 4)]
    assert results[0].snippet == "Tavily content 1 on otters"


async def test_the_tool_answers_json_results_from_the_configured_backend(
    tool: WebSearchTool, config: WebSearchConfig, brave: FakeSearchServer
) -> None:
    configure(config, provider="brave", baseUrl=brave.base_url, apiKey=API_KEY)

    answer = json.loads(await tool(CTX, {"query": "otters"}))

    assert len(answer) == 5
    assert answer[0] == {
        "title": "Brave result 1 for otters",
        "url": "https://brave.example/1",
        "snippet": "About otters & more, part 1",
    }
    assert brave.last.query["count"] == "5"


async def test_the_count_parameter_limits_results_even_where_the_service_ignores_it(
    tool: WebSearchTool, config: WebSearchConfig, searxng: FakeSearchServer
) -> None:
    configure(config, provider="searxng", baseUrl=searxng.base_url)

    assert len(json.loads(await tool(CTX, {"query": "otters", "count": 2}))) == 2
    assert len(json.loads(await tool(CTX, {"query": "otters", "count": 20}))) == 20
    assert len(json.loads(await tool(CTX, {"query": "otters", "count": 99}))) == 20
    assert len(json.loads(await tool(CTX, {"query": "otters", "count": 3.0}))) == 3
    with pytest.raises(ToolError, match="whole number from 1 to 20"):
        await tool(CTX, {"query": "otters", "count": 2.5})
    assert PAGE_SIZE > 20
    with pytest.raises(ToolError, match="whole number from 1 to 20"):
        await tool(CTX, {"query": "otters", "count": "many"})
    with pytest.raises(ToolError, match="non-empty 'query'"):
        await tool(CTX, {"query": "  "})


async def test_the_backend_follows_the_settings_at_each_call(
    tool: WebSearchTool,
    config: WebSearchConfig,
    searxng: FakeSearchServer,
    tavily: FakeSearchServer,
) -> None:
    configure(config, provider="searxng", baseUrl=searxng.base_url)
    assert "searx.example" in await tool(CTX, {"query": "q", "count": 1})
    configure(config, provider="tavily", baseUrl=tavily.base_url, apiKey=API_KEY)
    assert "tavily.example" in await tool(CTX, {"query": "q", "count": 1})


async def test_an_unconfigured_tool_says_what_to_configure(tool: WebSearchTool) -> None:
    with pytest.raises(ToolError) as caught:
        await tool(CTX, {"query": "otters"})
    message = str(caught.value)
    assert "settings.webSearch.provider" in message
    assert "baseUrl" in message
    assert "apiKey" in message


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"provider": "searxng"}, "settings.webSearch.baseUrl"),
        ({"provider": "brave"}, "settings.webSearch.apiKey"),
        ({"provider": "tavily", "baseUrl": "http://127.0.0.1:9"}, "settings.webSearch.apiKey"),
    ],
)
async def test_a_half_configured_backend_names_the_missing_setting(
    tool: WebSearchTool, config: WebSearchConfig, values: dict[str, str], expected: str
) -> None:
    configure(config, **values)
    with pytest.raises(ToolError, match=expected):
        await tool(CTX, {"query": "otters"})


async def test_a_wrong_key_is_reported_with_a_hint(
    tool: WebSearchTool, config: WebSearchConfig, brave: FakeSearchServer
) -> None:
    configure(config, provider="brave", baseUrl=brave.base_url, apiKey="wrong")
    with pytest.raises(ToolError, match=r"HTTP 401 \(check settings.webSearch.apiKey\)"):
        await tool(CTX, {"query": "otters"})


@pytest.mark.parametrize("kind", ["searxng", "brave", "tavily"])
async def test_server_errors_and_malformed_answers_become_tool_errors(
    tool: WebSearchTool,
    config: WebSearchConfig,
    searxng: FakeSearchServer,
    brave: FakeSearchServer,
    tavily: FakeSearchServer,
    kind: Kind,
) -> None:
    fake = {"searxng": searxng, "brave": brave, "tavily": tavily}[kind]
    configure(config, provider=kind, baseUrl=fake.base_url, apiKey=API_KEY)

    fake.status = 500
    with pytest.raises(ToolError, match="answered HTTP 500") as failed:
        await tool(CTX, {"query": "otters"})
    assert str(failed.value).endswith("answered HTTP 500."), "the body stays in the debug log"

    fake.reset()
    fake.malformed = True
    with pytest.raises(ToolError, match="not JSON"):
        await tool(CTX, {"query": "otters"})


async def test_an_answer_of_the_wrong_shape_is_reported() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"hits": []}))
    async with httpx.AsyncClient(transport=transport) as odd:
        with pytest.raises(WebSearchError, match="without the expected 'results'"):
            await SearxngSearch(odd, "http://searx.invalid").search("otters", 3)


async def test_a_slow_service_times_out_as_a_tool_error(
    tool: WebSearchTool, config: WebSearchConfig, tavily: FakeSearchServer
) -> None:
    configure(config, provider="tavily", baseUrl=tavily.base_url, apiKey=API_KEY)
    tavily.delay = 5.0
    started = time.monotonic()
    with pytest.raises(ToolError, match="did not answer in time"):
        await tool(CTX, {"query": "otters"})
    assert time.monotonic() - started < 2
    tavily.reset()


async def test_an_unreachable_service_is_a_tool_error(
    tool: WebSearchTool, config: WebSearchConfig
) -> None:
    configure(config, provider="searxng", baseUrl="http://127.0.0.1:9")
    with pytest.raises(ToolError, match="Could not reach SearXNG"):
        await tool(CTX, {"query": "otters"})
