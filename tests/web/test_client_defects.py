"""Defects a person met in the browser client (issue 21), each shown here before its fix."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import expect

from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import Browse, channel, log_in, open_channel


def unread(n: int) -> re.Pattern[str]:
    return re.compile(rf"^{n}\s*unread$")


HIDE = """(hidden) => {
  Object.defineProperty(document, "visibilityState", {
    configurable: true, get: () => (hidden ? "hidden" : "visible"),
  });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_message_arriving_in_a_hidden_tab_stays_unread_until_the_tab_is_seen(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [], name=unique("ac-hidden-"))
    with Guest(web_server, web_owner, name=unique("Hana ")) as guest:
        web_owner.ok("POST", f"/api/channels/{room['id']}/members", json={"userIds": [guest.id]})
        page = browse.page()
        open_channel(page, web_server, room["id"], password=guest.key)
        link = page.get_by_role("link", name=room["name"])
        page.evaluate(HIDE, True)
        post(web_owner, room["id"], "while you were away")
        expect(page.locator("article", has_text="while you were away")).to_have_count(1)
        expect(link.locator(".badge")).to_have_text(unread(1))
        # Reloaded while still unseen: the message was not recorded as read either; once the
        # reloaded (visible) page shows it, it is read.
        page.reload()
        page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
        expect(link.locator(".badge")).to_have_count(0)
        page.evaluate(HIDE, True)
        post(web_owner, room["id"], "and another")
        expect(link.locator(".badge")).to_have_text(unread(1))
        page.evaluate(HIDE, False)
        expect(link.locator(".badge")).to_have_count(0)
        page.reload()
        page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
        page.get_by_role("link", name=room["name"]).wait_for()
        expect(page.get_by_role("link", name=room["name"]).locator(".badge")).to_have_count(0)


def test_unread_counts_of_every_channel_come_with_the_channel_list(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    landing = channel(web_owner, [], name=unique("ad-0-landing-"))
    rooms = [channel(web_owner, [], name=unique("ad-count-")) for _ in range(4)]
    with Guest(web_server, web_owner, name=unique("Ines ")) as guest:
        for room in [landing, *rooms]:
            web_owner.ok(
                "POST", f"/api/channels/{room['id']}/members", json={"userIds": [guest.id]}
            )
        page = browse.page()
        log_in(page, guest.key)
        for room in rooms:
            expect(page.get_by_role("link", name=room["name"])).to_be_visible()
        for n, room in enumerate(rooms):
            for i in range(n):
                post(web_owner, room["id"], f"message {i}")
        page.wait_for_timeout(300)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(f"{r.method} {r.url}"))
        page.reload()
        expect(page.get_by_role("link", name=rooms[3]["name"]).locator(".badge")).to_have_text(
            unread(3)
        )
        expect(page.get_by_role("link", name=rooms[1]["name"]).locator(".badge")).to_have_text(
            unread(1)
        )
        expect(page.get_by_role("link", name=rooms[0]["name"]).locator(".badge")).to_have_count(0)
        # The counts are the server's (issue 23): no count request, nothing kept in the browser.
        assert not [a for a in asked if "/api/channels/unread" in a], asked
        assert (
            page.evaluate(
                "Object.keys(localStorage).filter((k) => k.startsWith('palaver:lastRead:'))"
            )
            == []
        )
        # The only history read is the open channel's own.
        open_id = page.url.rsplit("/c/", 1)[-1]
        assert open_id == landing["id"]
        histories = {a.split("channelId=")[1].split("&")[0] for a in asked if "/api/messages" in a}
        assert histories <= {open_id}, asked


def test_a_malformed_deep_link_shows_nothing_here_not_a_blank_page(
    browse: Browse, web_server: Server
) -> None:
    page = browse.page()
    log_in(page, web_server.owner_key)
    for path in ("/c/%", "/c/%E0%A4%A", "/admin/agents/%zz/knowledge"):
        page.goto(path)
        expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
        expect(page.get_by_role("navigation", name="Channels")).to_be_visible()


def test_logging_out_leaves_no_draft_in_the_browser(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [], name=unique("ae-draft-"))
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.get_by_role("textbox", name="Message").fill("a note for nobody else")

    def stored() -> dict[str, Any]:
        return dict(json.loads(page.evaluate("JSON.stringify(localStorage)")))

    page.wait_for_function("Object.keys(localStorage).some((k) => k.startsWith('palaver:drafts:'))")
    assert any("a note for nobody else" in v for v in stored().values())
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Password or guest key")).to_be_visible()
    assert not any("a note for nobody else" in v for v in stored().values()), stored()
    assert not [k for k in stored() if k.startswith("palaver:drafts:")]
    open_channel(page, web_server, room["id"])
    expect(page.get_by_role("textbox", name="Message")).to_have_value("")
