"""The browser client in real Chromium (Debian's package, driven by Playwright for Python)
against a real `palaver serve` and the fake OpenAI-protocol model server.

One server and one browser serve the whole folder; each test gets fresh browser contexts (own
cookies, own storage). Every page is watched: a script error, a console error, a CSP violation
or a request to any host other than the server fails the test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Api, Server, unique

playwright_sync = pytest.importorskip("playwright.sync_api")
playwright_sync.expect.set_options(timeout=15_000)
"""A loaded 2-core machine can take seconds to start a first reply; waits stay bounded."""

CHROMIUM = os.environ.get("PALAVER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Chromium, for this folder's tests only. Playwright's sync API keeps its event loop set
    as the thread's running loop while it lives, which makes `asyncio.run` and every async test
    fail; scoped to this package, it is stopped as soon as a process moves on to tests outside
    it (with pytest-xdist a worker may run other folders after these)."""
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    pw = playwright_sync.sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()
    pw.stop()


@pytest.fixture(scope="session")
def fake_model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="session")
def searxng() -> Iterator[FakeSearchServer]:
    with FakeSearchServer("searxng") as fake:
        yield fake


def configure(owner: Api, model: FakeOpenAI, searxng: FakeSearchServer) -> None:
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "limits": {"messagesPerMinute": 100_000, "messageBurst": 100_000},
            "providers": {
                "fake": {"type": "openai", "baseUrl": f"{model.url}/v1", "apiKey": "sk-web"}
            },
            "webSearch": {"provider": "searxng", "baseUrl": searxng.base_url},
        },
    )


@pytest.fixture(scope="session")
def web_server(
    tmp_path_factory: pytest.TempPathFactory, fake_model: FakeOpenAI, searxng: FakeSearchServer
) -> Iterator[Server]:
    """The browser tests' own server, so their settings never meet the other suites'."""
    srv = Server(tmp_path_factory.mktemp("web"))
    srv.start()
    with srv.login() as owner:
        configure(owner, fake_model, searxng)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def web_owner(web_server: Server) -> Iterator[Api]:
    api = web_server.login()
    yield api
    api.close()


@pytest.fixture(autouse=True)
def _fresh_model(fake_model: FakeOpenAI) -> Iterator[None]:
    fake_model.reset()
    yield
    fake_model.release()


@dataclass
class Watch:
    """What a page did that a test must know about."""

    errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)


@dataclass
class Browse:
    """Opens pages in fresh contexts on one server and checks them when the test ends."""

    browser: Any
    server: Server
    contexts: list[Any] = field(default_factory=list)
    watches: list[Watch] = field(default_factory=list)
    allow_console_errors: bool = False

    def page(
        self,
        viewport: dict[str, int] | None = None,
        color_scheme: str = "light",
        server: Server | None = None,
        timezone_id: str = "UTC",
    ) -> Any:
        target = server or self.server
        context = self.browser.new_context(
            base_url=target.base_url,
            viewport=viewport or DESKTOP,
            color_scheme=color_scheme,
            reduced_motion="reduce",
            locale="en-GB",
            timezone_id=timezone_id,
        )
        context.set_default_timeout(10_000)
        watch = Watch()
        own = urlsplit(target.base_url).netloc

        def route(route: Any) -> None:
            url = route.request.url
            parts = urlsplit(url)
            if parts.scheme in ("data", "blob") or parts.netloc == own:
                route.continue_()
            else:
                watch.foreign_requests.append(url)
                route.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("pageerror", lambda e: watch.errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: self._console(watch, m))
        page.on("dialog", lambda d: (watch.dialogs.append(d.message), d.dismiss()))
        page.on(
            "websocket",
            lambda ws: None if own in ws.url else watch.foreign_requests.append(ws.url),
        )
        self.contexts.append(context)
        self.watches.append(watch)
        return page

    def _console(self, watch: Watch, message: Any) -> None:
        text = message.text
        if "Content Security Policy" in text or "Content-Security-Policy" in text:
            watch.csp_violations.append(text)
        elif message.type == "error" and not self.allow_console_errors:
            # A failed request the test provoked (401, 429, the server down) is logged by the
            # browser itself; those carry no location in our code.
            if "Failed to load resource" in text or "WebSocket connection" in text:
                return
            watch.errors.append(f"console: {text}")

    def close(self) -> None:
        for context in self.contexts:
            context.close()
        self.contexts.clear()

    def check(self) -> None:
        for watch in self.watches:
            assert not watch.errors, watch.errors
            assert not watch.foreign_requests, f"requests left the host: {watch.foreign_requests}"
            assert not watch.dialogs, f"a dialog opened: {watch.dialogs}"
            assert not watch.csp_violations, watch.csp_violations


@pytest.fixture
def browse(browser: Any, web_server: Server) -> Iterator[Browse]:
    b = Browse(browser, web_server)
    yield b
    b.close()
    b.check()


def log_in(page: Any, password: str, path: str = "/") -> None:
    page.goto(path)
    page.get_by_label("Password or guest key").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("navigation", name="Channels").wait_for()


def open_channel(page: Any, server: Server, channel_id: str, password: str | None = None) -> None:
    """Log in straight into a channel through its deep link, and wait for its messages."""
    log_in(page, password or server.owner_key, f"/c/{channel_id}")
    page.wait_for_url(f"**/c/{channel_id}")
    page.locator("[data-testid=message-list][aria-busy=false]").wait_for()


def agent(owner: Api, **fields: Any) -> dict[str, Any]:
    body = {"name": unique("Agent"), "model": "fake/gpt-test", **fields}
    made: dict[str, Any] = owner.ok("POST", "/api/agents", json=body)["agent"]
    return made


def channel(
    owner: Api, agents: list[dict[str, Any]], name: str | None = None, **fields: Any
) -> dict[str, Any]:
    body = {
        "name": name or unique("room-"),
        "type": "group",
        "agentIds": [a["id"] for a in agents],
        **fields,
    }
    made: dict[str, Any] = owner.ok("POST", "/api/channels", json=body)["channel"]
    return made


Shot = Callable[[Any, str], None]


@pytest.fixture(scope="session")
def shoot() -> Shot:
    """Save a screenshot into docs/screenshots (the tests keep them current)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: Any, name: str) -> None:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), animations="disabled")

    return save
