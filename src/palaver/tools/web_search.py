"""The `web_search` tool and its WebSearch port, with SearXNG, Brave and Tavily adapters.

The backend is chosen from `settings.webSearch` on every call, so an owner can switch or
configure it at run time without a restart.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread

from palaver.settings import WebSearchConfig
from palaver.tools.base import ToolContext, ToolError

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

MAX_COUNT = 20
"""Brave and Tavily answer at most 20 results per request."""

DEFAULT_COUNT = 5


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


class WebSearch(Protocol):
    async def search(self, query: str, count: int) -> list[SearchResult]: ...


class WebSearchError(Exception):
    """A search failed; the message is a sentence meant for the model and the owner."""


class SearxngSearch:
    """A SearXNG instance's JSON API (its settings must allow `format=json`)."""

    service = "SearXNG"

    def __init__(self, client: httpx.AsyncClient, base_url: str) -> None:
        self._client = client
        self._base_url = base_url.rstrip("/")

    async def search(self, query: str, count: int) -> list[SearchResult]:
        data = await _send(
            self._client,
            self.service,
            _searxng_hint,
            "GET",
            f"{self._base_url}/search",
            params={"q": query, "format": "json"},
        )
        return _map(_field(data, ("results",), self.service), "content", count, self.service)


class BraveSearch:
    """The Brave Search web search API."""

    service = "Brave Search"
    default_base_url = "https://api.search.brave.com"

    def __init__(self, client: httpx.AsyncClient, api_key: str, base_url: str | None) -> None:
        self._client = client
        self._api_key = api_key
        self._base_url = (base_url or self.default_base_url).rstrip("/")

    async def search(self, query: str, count: int) -> list[SearchResult]:
        data = await _send(
            self._client,
            self.service,
            _key_hint,
            "GET",
            f"{self._base_url}/res/v1/web/search",
            params={"q": query, "count": min(count, MAX_COUNT)},
            headers={"Accept": "application/json", "X-Subscription-Token": self._api_key},
        )
        if isinstance(data, dict) and "web" not in data:
            return []
        items = _field(data, ("web", "results"), self.service)
        return _map(items, "description", count, self.service)


class TavilySearch:
    """The Tavily search API."""

    service = "Tavily"
    default_base_url = "https://api.tavily.com"

    def __init__(self, client: httpx.AsyncClient, api_key: str, base_url: str | None) -> None:
        self._client = client
        self._api_key = api_key
        self._base_url = (base_url or self.default_base_url).rstrip("/")

    async def search(self, query: str, count: int) -> list[SearchResult]:
        data = await _send(
            self._client,
            self.service,
            _key_hint,
            "POST",
            f"{self._base_url}/search",
            json={"query": query, "max_results": min(count, MAX_COUNT)},
            headers={"Authorization": f"Bearer {self._api_key}"},
        )
        return _map(_field(data, ("results",), self.service), "content", count, self.service)


NOT_CONFIGURED = (
    "Web search is not configured. Set settings.webSearch.provider to 'searxng', 'brave' "
    "or 'tavily', with settings.webSearch.baseUrl for SearXNG or settings.webSearch.apiKey "
    "for Brave and Tavily."
)


def backend_for(config: WebSearchConfig, client: httpx.AsyncClient) -> WebSearch:
    """The adapter `config` asks for; WebSearchError says what is missing."""
    if config.provider is None:
        raise WebSearchError(NOT_CONFIGURED)
    if config.provider == "searxng":
        if not config.baseUrl:
            raise WebSearchError(
                "Web search uses SearXNG but has no address: set settings.webSearch.baseUrl "
                "to the SearXNG instance, for example http://localhost:8080."
            )
        return SearxngSearch(client, config.baseUrl)
    if not config.apiKey:
        name = "Brave Search" if config.provider == "brave" else "Tavily"
        raise WebSearchError(
            f"Web search uses {name} but has no API key: set settings.webSearch.apiKey."
        )
    if config.provider == "brave":
        return BraveSearch(client, config.apiKey, config.baseUrl)
    return TavilySearch(client, config.apiKey, config.baseUrl)


class WebSearchTool:
    """`web_search {query, count}`: results as JSON `[{title, url, snippet}]`.

    Owns one HTTP client, built on first use in a thread (it reads CA certificates and
    imports lazily, which must not block the loop); `aclose()` releases it.
    """

    def __init__(
        self, get_config: Callable[[], WebSearchConfig], *, timeout_seconds: float = 15.0
    ) -> None:
        self.name = "web_search"
        self.description = (
            "Search the web. Returns a JSON list of results, each with title, url and snippet."
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_COUNT,
                    "default": DEFAULT_COUNT,
                    "description": "How many results to return.",
                },
            },
            "required": ["query"],
        }
        self._get_config = get_config
        self._timeout = timeout_seconds
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        query, count = _arguments(args)
        try:
            backend = backend_for(self._get_config(), await self._http())
            results = await backend.search(query, count)
        except WebSearchError as exc:
            raise ToolError(str(exc)) from exc
        return json.dumps([asdict(r) for r in results[:count]], ensure_ascii=False)

    async def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            client = await anyio.to_thread.run_sync(
                partial(_new_client, timeout=self._timeout, follow_redirects=True)
            )
            if self._client is None:
                self._client = client
            else:
                await client.aclose()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _new_client(**options: Any) -> httpx.AsyncClient:
    """httpx (with the click and rich its command line pulls in) is imported at the first
    search, in a worker thread, not when the server starts."""
    import httpx

    return httpx.AsyncClient(**options)


def _arguments(args: dict[str, Any]) -> tuple[str, int]:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("web_search needs a non-empty 'query' string.")
    count = args.get("count", DEFAULT_COUNT)
    if count is None:
        count = DEFAULT_COUNT
    whole = isinstance(count, int) or (isinstance(count, float) and count.is_integer())
    if isinstance(count, bool) or not whole:
        raise ToolError(f"web_search 'count' must be a whole number from 1 to {MAX_COUNT}.")
    return query.strip(), max(1, min(MAX_COUNT, int(count)))


Hint = Callable[[int], str]


def _searxng_hint(status: int) -> str:
    if status == 403:
        return " (allow the json format in the instance's settings.yml: search.formats)"
    return ""


def _key_hint(status: int) -> str:
    if status in (401, 403):
        return " (check settings.webSearch.apiKey)"
    if status == 429:
        return " (rate limit or quota reached)"
    return ""


async def _send(
    client: httpx.AsyncClient, service: str, hint: Hint, method: str, url: str, **kwargs: Any
) -> Any:
    """One request, its answer parsed as JSON; every failure is a WebSearchError."""
    import httpx  # loaded already: `client` is one of its

    try:
        response = await client.request(method, url, **kwargs)
    except httpx.InvalidURL as exc:
        raise WebSearchError(
            f"The {service} address is not a valid URL (settings.webSearch.baseUrl)."
        ) from exc
    except httpx.TimeoutException as exc:
        logger.warning("%s search timed out", service)
        raise WebSearchError(f"{service} did not answer in time.") from exc
    except httpx.HTTPError as exc:
        logger.warning("%s search failed: %s", service, type(exc).__name__)
        logger.debug("%s search failed: %s", service, _reason(exc))
        raise WebSearchError(f"Could not reach {service}.") from exc
    if response.status_code != 200:
        # The body may name internal hosts, echo a key or the query: tool results reach the
        # channel, and the log above DEBUG holds no text people wrote.
        logger.warning("%s search answered HTTP %d", service, response.status_code)
        logger.debug("%s search answered%s", service, _body_excerpt(response))
        raise WebSearchError(
            f"{service} answered HTTP {response.status_code}{hint(response.status_code)}."
        )
    try:
        return response.json()
    except ValueError as exc:
        logger.warning("%s search answered with malformed JSON", service)
        raise WebSearchError(f"{service} answered with something that is not JSON.") from exc


def _reason(exc: httpx.HTTPError) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _body_excerpt(response: httpx.Response) -> str:
    text = " ".join(response.text.split())[:200]
    return f": {text}" if text else ""


def _field(data: Any, path: tuple[str, ...], service: str) -> list[Any]:
    """The list at `path` in an answer, or WebSearchError naming what was missing."""
    for key in path:
        if not isinstance(data, dict) or key not in data:
            raise WebSearchError(f"{service} answered without the expected '{'.'.join(path)}'.")
        data = data[key]
    if not isinstance(data, list):
        raise WebSearchError(f"{service} answered with a '{'.'.join(path)}' that is not a list.")
    return data


_TAG = re.compile(r"<[^>]+>")


def _text(value: Any) -> str:
    """Plain text from a field some services fill with highlighted HTML."""
    if not isinstance(value, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", value)).split())


def _map(items: list[Any], snippet_key: str, count: int, service: str) -> list[SearchResult]:
    results: list[SearchResult] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            logger.debug("%s result without a url skipped", service)
            continue
        url = item["url"]
        results.append(
            SearchResult(
                title=_text(item.get("title")) or url,
                url=url,
                snippet=_text(item.get(snippet_key)),
            )
        )
        if len(results) == count:
            break
    return results
