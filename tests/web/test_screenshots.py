"""The screenshots in docs/screenshots, regenerated from a real session on every run: the login
page and a channel with a streamed reply, tool cards and a chain, at desktop and phone widths,
in light and dark."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import stall, text, tool_call, tool_calls
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Guest, Server, post
from tests.web.conftest import (
    DESKTOP,
    PHONE,
    Browse,
    Shot,
    agent,
    channel,
    configure,
    open_channel,
)

RESEARCH = """Here is what comes up most often:

### What people ask for
1. **Own the data**: one process, one database file, easy backups.
2. **Agents as teammates**: mention them like a colleague, see their tool calls.
3. **Works offline**: no CDN, no phoning home.

```python
async with session.post("/api/messages", json=body) as r:
    print(await r.json())
```
"""

DRAFT = (
    "**Palaver 0.1 is out.** A chat workspace you run yourself, where people and AI agents "
    "talk in the same channels. Mention an agent, watch it search, think and answer live."
)

CRITIC = (
    "Good bones. Three edits: lead with *who it is for*, cut \u201cthink\u201d, and end "
    "with the one command that starts it: `palaver serve`. Also"
)


def test_screenshots_of_the_login_page(browse: Browse, shoot: Shot) -> None:
    for scheme in ("light", "dark"):
        for label, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            page = browse.page(viewport=viewport, color_scheme=scheme)
            page.goto("/login")
            expect(page.get_by_label("Password or guest key")).to_be_focused()
            shoot(page, f"login-{label}-{scheme}")


def test_screenshots_of_a_channel_with_a_streamed_reply_tool_cards_and_a_chain(
    browse: Browse,
    fresh_server: Server,
    fake_model: FakeOpenAI,
    searxng: FakeSearchServer,
    shoot: Shot,
) -> None:
    """On a server of its own, so that the sidebar holds only this scene's channels."""
    fresh_server.start()
    web_server = fresh_server
    web_owner = fresh_server.login()
    configure(web_owner, fake_model, searxng)
    researcher = agent(
        web_owner,
        name="Researcher",
        avatar="🔎",
        description="Finds sources",
        tools=["web_search"],
    )
    writer = agent(web_owner, name="Writer", avatar="✍️", description="Drafts copy")
    critic = agent(web_owner, name="Critic", avatar="🧐", description="Tightens prose")
    with Guest(web_server, web_owner, name="Maya") as maya:
        room = channel(
            web_owner, [researcher, writer, critic], name="launch-plan", memberIds=[maya.id]
        )
        channel(web_owner, [], name="general")
        channel(web_owner, [researcher], name="Researcher", type="dm")
        channel(web_owner, [writer], name="Writer", type="dm")
        post(
            maya.api,
            room["id"],
            "Morning! Could we get a short summary of what people want from self-hosted "
            "chat before Friday's launch?",
        )
        fake_model.enqueue(
            tool_calls(tool_call("web_search", {"query": "self-hosted team chat wishlist"})),
            text(*words(RESEARCH)),
            text(DRAFT),
            stall(text(*words(CRITIC)), after=len(words(CRITIC))),
        )
        page = browse.page(server=web_server)
        open_channel(page, web_server, room["id"])
        box = page.get_by_role("textbox", name="Message")
        box.fill(f"@{researcher['name']} what do people ask for most in self-hosted team chat?")
        box.press("Enter")
        expect(page.locator("article", has_text="Works offline")).to_have_attribute(
            "aria-busy", "false"
        )
        box.fill(f"@{writer['name']} @{critic['name']} draft the announcement, then tighten it")
        box.press("Enter")
        expect(page.get_by_test_id("chain-strip")).to_contain_text("Step 2 of 2")
        expect(page.locator("article", has_text="Good bones")).to_have_attribute(
            "aria-busy", "true"
        )
        expect(page.locator("article", has_text="Good bones")).to_contain_text("palaver serve")
        _settle(page)
        shoot(page, "channel-desktop-light")
        page.emulate_media(color_scheme="dark")
        _settle(page)
        shoot(page, "channel-desktop-dark")
        page.set_viewport_size(PHONE)
        page.get_by_test_id("message-list").evaluate("el => el.scrollTop = el.scrollHeight")
        _settle(page)
        shoot(page, "channel-phone-dark")
        page.emulate_media(color_scheme="light")
        _settle(page)
        shoot(page, "channel-phone-light")
        page.get_by_role("button", name="Open the channel list").click()
        expect(page.get_by_role("navigation", name="Channels")).to_be_visible()
        _settle(page)
        shoot(page, "drawer-phone-light")
        fake_model.release()
    web_owner.close()


def _settle(page: Any) -> None:
    """Let fonts, layout and the scroll position come to rest before the picture; no row is
    left hovered."""
    page.mouse.move(0, 0)
    page.evaluate("document.fonts.ready")
    page.wait_for_timeout(150)


def words(reply: str) -> tuple[str, ...]:
    """The reply in word-sized pieces, as a model streams it."""
    return tuple(re.findall(r"\S+\s*|\s+", reply))
